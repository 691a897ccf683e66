"""The nodes a preemption dry run may try (the first step of upstream's
findCandidates): those whose Filter status is Unschedulable, plus the
UnschedulableAndUnresolvable ones whose rejecting plugin says removing pods may help
(DynamicResources). Pure: no I/O."""
from __future__ import annotations

from operator import attrgetter
from typing import Callable, Sequence

import numpy as np

from framework.cache import NodeInfo
from framework.interface import Code, NodeToStatus, Status
from framework.node_table import ColumnarNodes


def potential_nodes(all_nodes: Sequence[NodeInfo], m: NodeToStatus,
                    resolvable: Callable[[Status], bool] | None) -> list[NodeInfo]:
    """The nodes the dry run may try, in the order of `all_nodes`: those that failed
    with Unschedulable, plus (with `resolvable`) the UnschedulableAndUnresolvable ones
    whose rejecting plugin says removing pods may help. Nodes share Status objects, so
    each distinct one is judged once and the nodes are mapped to it in C; a
    ColumnarNodes stays one (its rows spare the dry run a lookup per node)."""
    statuses = m.statuses
    if type(m).get is not NodeToStatus.get or not isinstance(statuses, dict):
        potential = m.nodes_for_code(all_nodes, Code.Unschedulable)
        return potential if resolvable is None else with_resolvable_nodes(all_nodes, potential, m, resolvable)
    absent = m.absent

    def tried(st: Status | None) -> bool:
        st = absent if st is None else st
        return st.code == Code.Unschedulable or (
            resolvable is not None and st.code == Code.UnschedulableAndUnresolvable and resolvable(st))

    # An incremental failure's statuses (framework/incremental_failure.py) know each
    # distinct Status with its number of nodes, and their keys are the snapshot's nodes:
    # as many as `all_nodes`, every node has one; if each is tried, so is every node.
    known = getattr(m, "known_counts", None)
    if known is not None and len(statuses) == len(all_nodes) and all(tried(st) for st, _ in known.values()):
        return all_nodes
    held = list(map(statuses.get, map(attrgetter("name"), all_nodes)))
    verdict = {key: tried(st) for key, st in dict(zip(map(id, held), held)).items()}
    keep = np.fromiter(map(verdict.__getitem__, map(id, held)), dtype=np.bool_, count=len(held))
    positions = np.flatnonzero(keep).tolist()
    if isinstance(all_nodes, ColumnarNodes):
        return all_nodes.take(positions)
    return [all_nodes[i] for i in positions]


def with_resolvable_nodes(all_nodes: Sequence[NodeInfo], potential: list[NodeInfo], m: NodeToStatus,
                          resolvable: Callable[[Status], bool]) -> list[NodeInfo]:
    """`potential` plus the UnschedulableAndUnresolvable nodes whose rejecting plugin
    says removing pods may help (DynamicResources: devices held by other claims), in
    the order of `all_nodes`."""
    if not any(st.code == Code.UnschedulableAndUnresolvable and resolvable(st) for st in (*m.distinct(), m.absent)):
        return potential
    extra = {ni.name for ni in all_nodes
             if (st := m.get(ni.name)).code == Code.UnschedulableAndUnresolvable and resolvable(st)}
    if not extra:
        return potential
    keep = {ni.name for ni in potential} | extra
    return [ni for ni in all_nodes if ni.name in keep]


class OneStatusNodes(NodeToStatus):
    """A dry run's statuses when every node it tried answers one Status (no node holds
    a pod of lower priority: DefaultPreemption's `victimless`): `nodes` from `offset`
    on, wrapping around, each with `status`. Counting them, which is all a dry run with
    no candidate is read for (the FitError's wording), does not walk the nodes; the
    map by name is made on the first read that needs it. Not changed after the run."""

    __slots__ = ("_nodes", "_offset", "_status", "_made")

    def __init__(self, nodes: Sequence[NodeInfo], offset: int, status: Status, absent: Status | None = None) -> None:
        self.absent = absent if absent is not None else Status(Code.UnschedulableAndUnresolvable)
        self._nodes, self._offset, self._status = nodes, offset, status
        self._made: dict[str, Status] | None = None

    @property  # type: ignore[override]
    def statuses(self) -> dict[str, Status]:
        """Every tried node's Status by name, in the dry run's order (from `offset`)."""
        if self._made is None:
            nodes, offset = self._nodes, self._offset
            names = map(attrgetter("name"), [*nodes[offset:], *nodes[:offset]])
            self._made = dict.fromkeys(names, self._status)
        return self._made

    def set(self, node_name: str, status: Status) -> None:
        raise TypeError("a finished dry run's node statuses do not change")

    def __len__(self) -> int:
        return len(self._nodes)

    def distinct(self) -> list[Status]:
        return [self._status] if self._nodes else []

    def counts(self) -> list[tuple[Status, int]]:
        return [(self._status, len(self._nodes))] if self._nodes else []
