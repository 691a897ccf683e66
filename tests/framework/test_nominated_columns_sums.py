"""NominatedColumns' per-row sums are exact integers: summed in float64 (bincount)
only while every sum stays below 2**53, in int64 otherwise, so memory requests of
petabyte nodes sum to the byte as the per-node path adds them. The sums kept
between asks are patched on the nodes whose nominations moved, and the incoming
pod's own nomination never counts against it."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from framework.api.objects import Node, Pod
from framework.cache import PodInfo, Snapshot
from framework.handle import FrameworkHandle
from framework.nominated_columns import NominatedColumns
from tests.framework.test_nominated_columnar_differential import VersionedNominations

NOMINATIONS = st.lists(st.tuples(st.integers(0, 3), st.one_of(st.integers(0, 1 << 20), st.integers(1 << 50, 1 << 54)),
                                 st.integers(0, 4000), st.sampled_from([0, 10, 20])), min_size=0, max_size=12)


def _pod(name: str, memory: int, cpu: int, priority: int) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"priority": priority, "containers": [
                    {"name": "c", "resources": {"requests": {"memory": str(memory), "cpu": f"{cpu}m"}}}]}})


def _node(name: str) -> Node:
    return Node({"metadata": {"name": name}, "status": {"allocatable": {"cpu": "4", "memory": "4Ei", "pods": "110"}}})


def _by_node(drawn: list[tuple[int, int, int, int]], tag: str) -> dict[str, list[PodInfo]]:
    by_node: dict[str, list[PodInfo]] = {}
    for k, (at, memory, cpu, priority) in enumerate(drawn):
        by_node.setdefault(f"n{at}", []).append(PodInfo(_pod(f"{tag}{k}", memory, cpu, priority)))
    return by_node


def _check(columns: NominatedColumns, handle: FrameworkHandle, snapshot: Snapshot, incoming: Pod,
           by_node: dict[str, list[PodInfo]]) -> None:
    adds = columns.adds(handle, snapshot, incoming)
    joining = {name: [pi.pod for pi in pis if pi.pod.priority >= incoming.priority and pi.pod.uid != incoming.uid]
               for name, pis in by_node.items()}
    if not any(joining.values()):
        assert adds is None
        return
    assert adds is not None and adds is not False
    for name, r in snapshot.index.items():
        mine = joining.get(name, [])
        assert int(adds.count[r]) == len(mine)
        assert int(adds.mem[r]) == sum(p.resource.memory for p in mine)
        assert int(adds.cpu[r]) == sum(p.resource.milli_cpu for p in mine)


@settings(max_examples=150, deadline=None)
@given(first=NOMINATIONS, second=NOMINATIONS, keep=st.lists(st.booleans(), min_size=12, max_size=12),
       priorities=st.lists(st.sampled_from([0, 10, 20]), min_size=1, max_size=3),
       incoming_at=st.one_of(st.none(), st.integers(0, 3)))
def test_the_nominated_pods_sums_per_row_are_the_exact_sums_of_their_requests(
        first: list[tuple[int, int, int, int]], second: list[tuple[int, int, int, int]], keep: list[bool],
        priorities: list[int], incoming_at: int | None) -> None:
    snapshot = Snapshot.build([_node(f"n{i}") for i in range(4)], [])
    view = VersionedNominations()
    handle = FrameworkHandle(snapshot=snapshot)
    handle.connect(nominator=view)
    columns = NominatedColumns()
    before = _by_node(first, "a")
    # The second nominations keep some PodInfo objects of the first and add others.
    after: dict[str, list[PodInfo]] = {}
    for (name, pi), kept in zip(((n, pi) for n, pis in before.items() for pi in pis), keep):
        if kept:
            after.setdefault(name, []).append(pi)
    for name, pis in _by_node(second, "b").items():
        after.setdefault(name, []).extend(pis)
    for nominations in (before, after, before):
        for priority in priorities:
            incoming = _pod("incoming", 1, 1, priority)
            current = {name: list(pis) for name, pis in nominations.items()}
            if incoming_at is not None:  # the incoming pod nominated too
                current.setdefault(f"n{incoming_at}", []).append(PodInfo(incoming))
            view.set(current)
            _check(columns, handle, snapshot, incoming, current)
