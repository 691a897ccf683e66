"""A victimless dry run's statuses (OneStatusNodes: every tried node holds one Status)
read as the map the per-node dry run builds: the same nodes in the same order, the same
lookups, counts, distinct statuses and picks by code, and the same FitError wording."""
from __future__ import annotations

import random

import pytest

from framework.api.objects import Node, Pod
from framework.attempt_outcome import Diagnosis, FitError
from framework.cache import NodeInfo
from framework.interface import Code, NodeToStatus, Status
from framework.preemption_potential import OneStatusNodes

NO_VICTIMS = Status(Code.UnschedulableAndUnresolvable, "No preemption victims found for incoming pod")
NOT_HELPFUL = Status(Code.UnschedulableAndUnresolvable, "Preemption is not helpful for scheduling")


def _case(seed: int) -> tuple[list[NodeInfo], int, list[NodeInfo]]:
    """The cluster's nodes, the dry run's offset, and the nodes it tried (a subset, in order)."""
    rng = random.Random(seed)
    every = [NodeInfo(Node({"metadata": {"name": f"n{i}"}})) for i in range(rng.randrange(0, 30))]
    tried = [ni for ni in every if rng.random() < 0.7] if rng.random() < 0.5 else every
    return every, rng.randrange(len(tried)) if tried else 0, tried


def _per_node(tried: list[NodeInfo], offset: int) -> NodeToStatus:
    rotated = [*tried[offset:], *tried[:offset]]
    return NodeToStatus({ni.name: NO_VICTIMS for ni in rotated})


def _read(m: NodeToStatus, every: list[NodeInfo]) -> tuple[object, ...]:
    return (list(m.items()), len(m), [(st, n) for st, n in m.counts()], m.distinct(),
            [m.get(ni.name) for ni in every], [m.get("elsewhere")],
            [[ni.name for ni in m.nodes_for_code(every, code)] for code in Code])


@pytest.mark.parametrize("seed", range(80))
def test_one_status_for_every_tried_node_reads_as_the_per_node_map(seed: int) -> None:
    every, offset, tried = _case(seed)
    shared, plain = OneStatusNodes(tried, offset, NO_VICTIMS), _per_node(tried, offset)
    for m in (shared, plain):
        m.absent = NOT_HELPFUL
    counted = OneStatusNodes(tried, offset, NO_VICTIMS, NOT_HELPFUL)  # read before its map is made
    assert [(st, n) for st, n in counted.counts()] == [(st, n) for st, n in plain.counts()]
    assert _read(shared, every) == _read(plain, every)


@pytest.mark.parametrize("seed", range(80))
def test_a_fit_error_over_one_status_nodes_is_worded_as_over_the_per_node_map(seed: int) -> None:
    every, offset, tried = _case(seed)
    pod = Pod({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": []}})
    words = []
    for m in (OneStatusNodes(tried, offset, NO_VICTIMS), _per_node(tried, offset)):
        m.absent = NOT_HELPFUL
        words.append(FitError(pod, len(every), Diagnosis(node_to_status=m)).message())
    assert words[0] == words[1]


def test_a_finished_dry_runs_statuses_do_not_change() -> None:
    m = OneStatusNodes([NodeInfo(Node({"metadata": {"name": "n0"}}))], 0, NO_VICTIMS)
    with pytest.raises(TypeError):
        m.set("n0", NOT_HELPFUL)
