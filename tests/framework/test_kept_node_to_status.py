"""A finished attempt's diagnosis is kept grouped by status; it must read as the
map it was made from."""
from __future__ import annotations

import random

import pytest

from framework.attempt_outcome import Diagnosis, FitError, KeptNodeToStatus
from framework.api.objects import Node, Pod
from framework.cache import NodeInfo
from framework.interface import Code, NodeToStatus, Status


def _random_map(seed: int) -> tuple[NodeToStatus, list[NodeInfo]]:
    rng = random.Random(seed)
    nodes = [NodeInfo(Node({"metadata": {"name": f"n{i}"}})) for i in range(rng.randrange(1, 60))]
    shared = [Status(rng.choice([Code.Unschedulable, Code.UnschedulableAndUnresolvable]), f"reason {k}",
                     plugin=f"P{k}") for k in range(rng.randrange(1, 5))]
    m = NodeToStatus(absent=rng.choice([Status(Code.UnschedulableAndUnresolvable),
                                        Status(Code.Unschedulable, "absent reason")]))
    for ni in nodes:
        if rng.random() < 0.8:
            m.set(ni.name, rng.choice(shared) if rng.random() < 0.8 else Status(Code.Unschedulable, "own", "two"))
    return m, nodes


@pytest.mark.parametrize("seed", range(40))
def test_a_kept_node_status_map_reads_as_the_map_it_was_made_from(seed: int) -> None:
    m, nodes = _random_map(seed)
    kept = KeptNodeToStatus(m)
    assert len(kept) == len(m)
    assert kept.absent is m.absent
    assert sorted(kept.items(), key=lambda kv: kv[0]) == sorted(m.items(), key=lambda kv: kv[0])
    assert [kept.get(ni.name) for ni in nodes] == [m.get(ni.name) for ni in nodes]
    for code in (Code.Unschedulable, Code.UnschedulableAndUnresolvable):
        assert [n.name for n in kept.nodes_for_code(nodes, code)] == [n.name for n in m.nodes_for_code(nodes, code)]
    pod = Pod({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": []}})
    assert FitError(pod, len(nodes), Diagnosis(node_to_status=kept)).message() == \
        FitError(pod, len(nodes), Diagnosis(node_to_status=m)).message()


def test_a_kept_node_status_map_refuses_changes() -> None:
    m, nodes = _random_map(1)
    with pytest.raises(TypeError):
        KeptNodeToStatus(m).set(nodes[0].name, Status(Code.Unschedulable, "late"))


@pytest.mark.parametrize("seed", range(40))
def test_an_incremental_retrys_map_of_one_verdict_is_kept_as_the_map_reads(seed: int) -> None:
    from framework.incremental_failure import CountedNodeToStatus
    rng = random.Random(seed)
    names = [f"n{i}" for i in rng.sample(range(100), rng.randrange(1, 60))]
    st = Status(Code.Unschedulable, "Insufficient cpu", plugin="NodeResourcesFit")
    m = CountedNodeToStatus(dict.fromkeys(names, st), Status(Code.UnschedulableAndUnresolvable), {id(st): (st, len(names))})
    kept = KeptNodeToStatus(m)
    assert list(kept.items()) == list(m.items()) and len(kept) == len(m) and kept.counts() == [(st, len(names))]
    pod = Pod({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": []}})
    assert FitError(pod, 100, Diagnosis(node_to_status=kept)).message() == \
        FitError(pod, 100, Diagnosis(node_to_status=m)).message()


@pytest.mark.parametrize("seed", range(40))
def test_equal_verdicts_held_by_several_objects_are_merged_into_one_keeping_every_node_and_its_place(seed: int) -> None:
    from framework.incremental_failure import _merged, _same
    rng = random.Random(seed)
    kinds = [("Insufficient cpu", "NodeResourcesFit"), ("node(s) didn't match Pod's node affinity/selector", "NodeAffinity")]
    objects = [Status(Code.Unschedulable, r, plugin=p) for r, p in kinds for _ in range(rng.randrange(1, 4))]
    statuses = {f"n{i}": rng.choice(objects) for i in range(rng.randrange(1, 50))}
    counts: dict[int, tuple[Status, int]] = {}
    for st in statuses.values():
        counts[id(st)] = (st, counts.get(id(st), (st, 0))[1] + 1)
    shared = {_same(st): st for st, _ in counts.values()}
    merged, merged_counts = _merged(statuses, counts, shared)
    assert [(n, _same(st)) for n, st in merged.items()] == [(n, _same(st)) for n, st in statuses.items()]
    assert len({id(st) for st in merged.values()}) == len(merged_counts) == len({_same(st) for st in statuses.values()})
    assert {i: n for i, (_, n) in merged_counts.items()} == {
        id(st): sum(1 for s in merged.values() if s is st) for st in merged.values()}
