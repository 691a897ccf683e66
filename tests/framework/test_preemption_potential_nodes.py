"""The dry run's potential nodes (Evaluator.find_candidates' first step) worked out
once per distinct Status: over randomized node statuses (shared Status objects,
nodes without a status, UnschedulableAndUnresolvable ones a plugin says removing
pods may resolve), potential_nodes gives the nodes, in order, that
nodes_for_code(Unschedulable) plus with_resolvable_nodes give, and keeps the
snapshot's rows for them."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.cache import Snapshot
from framework.interface import Code, NodeToStatus, Status
from framework.node_table import ColumnarNodes
from framework.preemption_potential import potential_nodes, with_resolvable_nodes
from tests.framework.preemption_builders import node

POOL = [
    Status(Code.Unschedulable, "Insufficient cpu", plugin="NodeResourcesFit"),
    Status(Code.Unschedulable, "node(s) didn't match pod topology spread constraints", plugin="PodTopologySpread"),
    Status(Code.UnschedulableAndUnresolvable, "node(s) had untolerated taint", plugin="TaintToleration"),
    Status(Code.UnschedulableAndUnresolvable, "cannot allocate all claims", plugin="DynamicResources"),
]


def _resolvable(status: Status) -> bool:
    return status.plugin == "DynamicResources"


def _expected(nodes: list, m: NodeToStatus, with_resolvable: bool) -> list[str]:
    got = m.nodes_for_code(nodes, Code.Unschedulable)
    if with_resolvable:
        got = with_resolvable_nodes(nodes, got, m, _resolvable)
    return [ni.name for ni in got]


@settings(max_examples=200, deadline=None)
@given(picks=st.lists(st.one_of(st.none(), st.integers(0, len(POOL) - 1)), min_size=1, max_size=30),
       absent=st.one_of(st.none(), st.integers(0, len(POOL) - 1)), with_resolvable=st.booleans(),
       copies=st.booleans())
def test_the_potential_nodes_are_the_unschedulable_and_resolvable_ones_in_node_order(
        picks: list[int | None], absent: int | None, with_resolvable: bool, copies: bool) -> None:
    snapshot = Snapshot.build([node(f"n{i}") for i in range(len(picks))], [])
    nodes = snapshot.list()
    assert isinstance(nodes, ColumnarNodes)

    def status(k: int) -> Status:  # shared objects, or equal copies of them
        return POOL[k].with_plugin(POOL[k].plugin) if copies else POOL[k]

    statuses = {ni.name: status(k) for ni, k in zip(nodes, picks) if k is not None}
    m = NodeToStatus(statuses, POOL[absent] if absent is not None else None)
    got = potential_nodes(nodes, m, _resolvable if with_resolvable else None)
    assert [ni.name for ni in got] == _expected(nodes, m, with_resolvable)
    assert isinstance(got, ColumnarNodes)
    assert got.rows.tolist() == [snapshot.index[ni.name] for ni in got]
    plain = potential_nodes(list(nodes), m, _resolvable if with_resolvable else None)
    assert [ni.name for ni in plain] == [ni.name for ni in got]


def test_a_kept_node_to_status_takes_the_per_node_path_with_the_same_nodes() -> None:
    from framework.attempt_outcome import KeptNodeToStatus

    snapshot = Snapshot.build([node(f"n{i}") for i in range(6)], [])
    nodes = snapshot.list()
    m = NodeToStatus({"n0": POOL[0], "n2": POOL[3], "n3": POOL[2], "n5": POOL[1]})
    kept = KeptNodeToStatus(m)
    assert [ni.name for ni in potential_nodes(nodes, kept, _resolvable)] == ["n0", "n2", "n5"]
    assert np.array_equal(potential_nodes(nodes, m, _resolvable).rows, [0, 2, 5])


@settings(max_examples=100, deadline=None)
@given(picks=st.lists(st.integers(0, len(POOL) - 1), min_size=1, max_size=20), with_resolvable=st.booleans())
def test_an_incremental_failures_counted_statuses_give_the_same_potential_nodes(
        picks: list[int], with_resolvable: bool) -> None:
    """Statuses that know their counts (every node holding one) may answer "every node"
    without a pass: the same nodes as the per-node path."""
    from framework.incremental_failure import CountedNodeToStatus

    snapshot = Snapshot.build([node(f"n{i}") for i in range(len(picks))], [])
    nodes = snapshot.list()
    statuses = {ni.name: POOL[k] for ni, k in zip(nodes, picks)}
    counts: dict[int, tuple[Status, int]] = {}
    for status in statuses.values():
        counts[id(status)] = (status, counts.get(id(status), (status, 0))[1] + 1)
    m = CountedNodeToStatus(statuses, NodeToStatus().absent, counts)
    got = potential_nodes(nodes, m, _resolvable if with_resolvable else None)
    assert [ni.name for ni in got] == _expected(nodes, NodeToStatus(dict(statuses)), with_resolvable)
    assert got.rows.tolist() == [snapshot.index[ni.name] for ni in got]
