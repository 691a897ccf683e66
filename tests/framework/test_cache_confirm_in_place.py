"""A bound pod confirmed where it was assumed is one replacement in its NodeInfo
(NodeInfo.replace_last) when that leaves the Cache exactly as _unplace then _place
would: held against the full path over random clusters and event sequences."""
import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from framework.api.objects import Pod
from framework.cache import Cache, Snapshot
from framework.node_info import NodeInfo, next_generation
from framework.node_table import NodeTable
from tests.framework.test_cache import node, pod
from tests.framework.test_columnar_equivalence import random_node, random_pod


def bound_copy(p: Pod, rv: int) -> Pod:
    """The store's echo of a binding: metadata but for resourceVersion, spec and the
    parsed parts shared (Pod.with_status_written), a status written."""
    raw = {**p.raw, "metadata": {**p.raw["metadata"], "resourceVersion": str(rv)},
           "status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}}
    return p.with_status_written(raw)


def reparsed(p: Pod, rv: int) -> Pod:
    """The same pod parsed from scratch (nothing shared with `p`)."""
    return Pod({**p.raw, "metadata": {**p.raw["metadata"], "resourceVersion": str(rv)}})


def with_volumes(rng: random.Random, p: Pod) -> Pod:
    volumes = [{"name": "scratch", "emptyDir": {}}]
    if rng.random() < 0.5:
        volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": rng.choice(["c1", "c2"])}})
    return Pod({**p.raw, "spec": {**p.raw["spec"], "volumes": volumes}})


def state(cache: Cache, snap: Snapshot, base: int) -> tuple:
    """Everything the Cache and its Snapshot hold, pods by identity, generations
    counted from `base`, dicts in their order."""
    def node_state(ni: NodeInfo) -> tuple:
        r, nz = ni.requested, ni.non_zero_requested
        return (ni.name, [id(pi.pod) for pi in ni.pods], [id(pi.pod) for pi in ni.pods_with_affinity],
                [id(pi.pod) for pi in ni.pods_with_required_anti_affinity],
                (r.milli_cpu, r.memory, r.ephemeral_storage, r.allowed_pod_number, list(r.scalar.items())),
                (nz.milli_cpu, nz.memory), [(ip, sorted(s)) for ip, s in ni.used_ports.ports.items()],
                list(ni.pvc_ref_counts.items()), ni.generation - base)
    table = snap.table
    columns = [getattr(table, c).tolist() for c in NodeTable.INT_COLUMNS + NodeTable.FLAG_COLUMNS]
    generation = columns[NodeTable.INT_COLUMNS.index("generation")]
    columns[NodeTable.INT_COLUMNS.index("generation")] = [g - base for g in generation]
    return ([node_state(ni) for ni in cache.nodes.values()], [(k, id(p)) for k, p in cache._pods.items()],
            list(cache._pod_node.items()), sorted(cache.assumed), sorted(cache._dirty),
            [node_state(ni) for ni in snap.list()], [ni.name for ni in snap.have_pods_with_affinity_list],
            [ni.name for ni in snap.have_pods_with_required_anti_affinity_list], columns,
            snap.generation - base, list(snap.change_log))


def run(steps: list[tuple], nodes: list, fast: bool, monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(NodeInfo, "replace_last", lambda self, old, new: False)
        base = next_generation()
        cache, snap = Cache(), Snapshot()
        for n in nodes:
            cache.add_node(n)
        cache.update_snapshot(snap)
        seen = []
        for op, *args in steps:
            getattr(cache, op)(*args)
            cache.update_snapshot(snap)
            seen.append(state(cache, snap, base))
        return seen


def random_steps(rng: random.Random, nodes: list) -> list[tuple]:
    names = [n.name for n in nodes]
    steps: list[tuple] = []
    assumed: dict[str, Pod] = {}
    bound: dict[str, Pod] = {}
    for i in range(60):
        action = rng.random()
        if action < 0.35 or not (assumed or bound):
            p = random_pod(rng, f"p{i}", rng.choice(names))
            if rng.random() < 0.15:
                p = with_volumes(rng, p)
            steps.append(("assume_pod", p, p.node_name))
            assumed[p.key] = p
        elif action < 0.65 and assumed:
            p = assumed.pop(rng.choice(sorted(assumed)))
            q = bound_copy(p, i) if rng.random() < 0.8 else reparsed(p, i)
            steps.append(("add_pod", q))
            bound[q.key] = q
        elif action < 0.75 and bound:
            key = rng.choice(sorted(bound))
            q = bound[key] = bound_copy(bound[key], i)  # a status update of a bound pod
            steps.append(("update_pod", q))
        elif action < 0.85 and assumed:
            steps.append(("forget_pod", assumed.pop(rng.choice(sorted(assumed)))))
        elif bound:
            steps.append(("remove_pod", bound.pop(rng.choice(sorted(bound)))))
    return steps


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6))
def test_a_confirm_in_place_leaves_the_cache_and_snapshot_as_the_full_path_does(seed, num_nodes):
    rng = random.Random(seed)
    nodes = [random_node(rng, i) for i in range(num_nodes)]
    steps = random_steps(rng, nodes)
    with pytest.MonkeyPatch.context() as mp:
        assert run(steps, nodes, True, mp) == run(steps, nodes, False, mp)


def test_a_bound_pod_confirmed_where_it_was_assumed_is_replaced_not_removed_and_added(monkeypatch):
    cache, snap = Cache(), Snapshot()
    cache.add_node(node("n1"))
    other = pod("other", "n1")
    cache.assume_pod(other, "n1")
    p = pod("p", "n1")
    cache.assume_pod(p, "n1")
    cache.update_snapshot(snap)
    monkeypatch.setattr(NodeInfo, "remove_pod", lambda self, pod: pytest.fail("removed"))
    q = bound_copy(p, 5)
    cache.add_pod(q)
    ni = cache.nodes["n1"]
    assert [pi.pod for pi in ni.pods] == [other, q] and not cache.is_assumed(q) and cache.get_pod(q.key) is q
    assert ni.requested.milli_cpu == 2000
    cache.update_snapshot(snap)
    assert [pi.pod for pi in snap.get("n1").pods] == [other, q]
    assert np.array_equal(snap.table.req_cpu, [2000])


def test_a_pod_not_last_on_its_node_or_not_sharing_its_requests_takes_the_full_path():
    cache = Cache()
    cache.add_node(node("n1"))
    p, other = pod("p", "n1"), pod("other", "n1")
    cache.assume_pod(p, "n1")
    cache.assume_pod(other, "n1")
    ni = cache.nodes["n1"]
    assert not ni.replace_last(p, bound_copy(p, 3))  # not last: the full path moves it last
    cache.add_pod(bound_copy(p, 3))
    assert [pi.pod.name for pi in ni.pods] == ["other", "p"]
    last = ni.pods[-1].pod
    resized = Pod({**last.raw, "spec": {**last.raw["spec"], "containers": [
        {"name": "c", "resources": {"requests": {"cpu": "2"}}}]}})
    assert not ni.replace_last(last, resized)  # another Resource: the full path
    cache.add_pod(resized)
    assert ni.requested.milli_cpu == 3000
