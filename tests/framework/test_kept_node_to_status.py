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
