"""NominatedColumns' per-row sums are exact integers: summed in float64 (bincount)
only while every sum stays below 2**53, in int64 otherwise, so memory requests of
petabyte nodes sum to the byte as the per-node path adds them."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from framework.api.objects import Node, Pod
from framework.cache import PodInfo, Snapshot
from framework.handle import FrameworkHandle
from framework.nominated_columns import NominatedColumns
from tests.framework.test_nominated_columnar_differential import VersionedNominations


def _pod(name: str, memory: int, cpu: int, priority: int) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"priority": priority, "containers": [
                    {"name": "c", "resources": {"requests": {"memory": str(memory), "cpu": f"{cpu}m"}}}]}})


def _node(name: str) -> Node:
    return Node({"metadata": {"name": name}, "status": {"allocatable": {"cpu": "4", "memory": "4Ei", "pods": "110"}}})


@settings(max_examples=100, deadline=None)
@given(pods=st.lists(st.tuples(st.integers(0, 3), st.one_of(st.integers(0, 1 << 20), st.integers(1 << 50, 1 << 54)),
                               st.integers(0, 4000), st.sampled_from([0, 10])), min_size=1, max_size=12))
def test_the_nominated_pods_sums_per_row_are_the_exact_sums_of_their_requests(
        pods: list[tuple[int, int, int, int]]) -> None:
    snapshot = Snapshot.build([_node(f"n{i}") for i in range(4)], [])
    view = VersionedNominations()
    by_node: dict[str, list[PodInfo]] = {}
    for k, (at, memory, cpu, priority) in enumerate(pods):
        by_node.setdefault(f"n{at}", []).append(PodInfo(_pod(f"p{k}", memory, cpu, priority)))
    view.set(by_node)
    handle = FrameworkHandle(snapshot=snapshot)
    handle.connect(nominator=view)
    incoming = _pod("incoming", 1, 1, 10)
    adds = NominatedColumns().adds(handle, snapshot, incoming)
    joining = {name: [pi.pod for pi in pis if pi.pod.priority >= 10] for name, pis in by_node.items()}
    if not any(joining.values()):
        assert adds is None
        return
    assert adds is not None and adds is not False
    for name, r in snapshot.index.items():
        mine = joining.get(name, [])
        assert int(adds.count[r]) == len(mine)
        assert int(adds.mem[r]) == sum(p.resource.memory for p in mine)
        assert int(adds.cpu[r]) == sum(p.resource.milli_cpu for p in mine)
