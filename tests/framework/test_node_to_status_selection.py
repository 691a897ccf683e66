"""NodeToStatus picks nodes by code from its distinct statuses (not node by node);
the picks must be those of the per-node definition, whatever the map holds."""
from __future__ import annotations

import random

import pytest

from framework.api.objects import Node
from framework.attempt_outcome import KeptNodeToStatus
from framework.cache import NodeInfo
from framework.incremental_failure import CountedNodeToStatus
from framework.interface import Code, NodeToStatus, Status
from framework.preemption_potential import with_resolvable_nodes

CODES = (Code.Unschedulable, Code.UnschedulableAndUnresolvable)


def _random_map(seed: int) -> tuple[NodeToStatus, list[NodeInfo]]:
    """Maps of every shape: one shared status or several, codes mixed or all one, nodes
    missing from the map or not, an absent status of either code."""
    rng = random.Random(seed)
    nodes = [NodeInfo(Node({"metadata": {"name": f"n{i}"}})) for i in range(rng.randrange(1, 40))]
    one_code = rng.random() < 0.5
    shared = [Status(CODES[0] if one_code else rng.choice(CODES), f"reason {k}", plugin=f"P{k}")
              for k in range(rng.randrange(1, 4))]
    m = NodeToStatus(absent=Status(rng.choice(CODES), "absent reason"))
    every = rng.random() < 0.5
    for ni in nodes:
        if every or rng.random() < 0.7:
            m.set(ni.name, rng.choice(shared))
    return m, nodes


def _forms(m: NodeToStatus) -> list[NodeToStatus]:
    """The map as built by a full pass, as an incremental retry keeps it (counts known),
    and as a finished attempt keeps it."""
    counts = {id(st): (st, n) for st, n in m.counts()}
    return [m, CountedNodeToStatus(dict(m.statuses), m.absent, counts), KeptNodeToStatus(m)]


def _per_node(m: NodeToStatus, nodes: list[NodeInfo], code: Code) -> list[str]:
    return [ni.name for ni in nodes if m.get(ni.name).code == code]


@pytest.mark.parametrize("seed", range(120))
def test_the_nodes_of_a_code_are_those_whose_own_status_has_it(seed: int) -> None:
    m, nodes = _random_map(seed)
    for form in _forms(m):
        for code in CODES:
            assert [ni.name for ni in form.nodes_for_code(nodes, code)] == _per_node(m, nodes, code)


@pytest.mark.parametrize("seed", range(120))
def test_preemption_adds_exactly_the_unresolvable_nodes_a_plugin_says_it_may_resolve(seed: int) -> None:
    m, nodes = _random_map(seed)
    rng = random.Random(seed)
    helped = {f"P{k}" for k in range(3) if rng.random() < 0.4}

    def resolvable(st: Status) -> bool:
        return st.plugin in helped

    want = [ni.name for ni in nodes if m.get(ni.name).code == Code.Unschedulable
            or (m.get(ni.name).code == Code.UnschedulableAndUnresolvable and resolvable(m.get(ni.name)))]
    for form in _forms(m):
        potential = form.nodes_for_code(nodes, Code.Unschedulable)
        assert [ni.name for ni in with_resolvable_nodes(nodes, potential, form, resolvable)] == want
