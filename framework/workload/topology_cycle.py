"""The group cycle of a topology-constrained gang: framework/workload/topology.py's
choice over the real group algorithm (group_cycle.place_group through the owner's
CachePlacer, so the real Filter and Score plugins decide), then the group kept
assumed in the chosen domain: the last feasible try stays assumed until the next
domain is tried, so when it is the one chosen (the usual case: trying stops at the
first domain holding every member) no second cycle runs. No I/O.

A gang with no topology level goes straight to place_group on the whole view: one
path for every gang."""
from __future__ import annotations

from typing import Any, Sequence

from framework.api.objects import Pod
from framework.types import Status
from framework.workload.group_cycle import Feasibility, GroupPlacement, place_group
from framework.workload.member_placer import CachePlacer
from framework.workload.policy import GroupPolicy, placement_feasible
from framework.workload.topology import GroupOutcome, TopologyRequest, TopologyResult, choose_placement
from framework.workload.topology_view import cluster_view


def quorum_demand(policy: GroupPolicy, pods: Sequence[Pod], scheduled: int) -> tuple[int, int]:
    """The least cpu and memory the members still missing from the quorum need in
    total (the smallest requests, each resource on its own): a domain with less free
    cannot hold the group whatever Filter says."""
    need = max(0, policy.quorum - scheduled)
    cpu = sorted(p.resource.milli_cpu for p in pods)[:need]
    mem = sorted(p.resource.memory for p in pods)[:need]
    return sum(cpu), sum(mem)


def place_group_in_topology(policy: GroupPolicy, pods: Sequence[Pod], placer: CachePlacer, *, scheduled: int = 0,
                            pinned: Sequence[tuple[str, str]] = (),
                            feasible: Feasibility = placement_feasible,
                            groupings: dict[str, Any] | None = None) -> tuple[GroupPlacement, TopologyResult | None]:
    """Place `pods` as one group inside one domain of the policy's levels. `pinned`:
    (pod key, node) of the members already bound or assumed. Returns the group's
    placement (kept assumed when feasible) and the topology choice (None for a gang
    with no level). `groupings`: the owner's memo of domains per label, kept between
    cycles (topology_view.py)."""
    if not policy.required_topology_key and not policy.preferred_topology_key:
        return place_group(policy, pods, placer, scheduled=scheduled, feasible=feasible), None
    placer.cache.update_snapshot(placer.snapshot)
    view = cluster_view(placer.snapshot, groupings if groupings is not None else {})
    by_uid = {p.uid: p for p in pods}
    kept: list[tuple[tuple[str, ...] | None, GroupPlacement]] = []  # the last feasible try, still assumed

    def release() -> None:
        while kept:
            _, g = kept.pop()
            for uid, node in reversed(list(g.placed.items())):
                placer.undo(by_uid[uid], node)

    def try_group(names: tuple[str, ...] | None) -> GroupOutcome:
        release()
        g = place_group(policy, pods, placer, scheduled=scheduled, node_names=names, feasible=feasible)
        if g.feasible:
            kept.append((names, g))  # most often the domain chosen: no second cycle to place it
        used = [by_uid[u].resource for u in g.placed]
        return GroupOutcome(feasible=g.feasible, placed=len(g.placed), used_cpu=sum(r.milli_cpu for r in used),
                            used_memory=sum(r.memory for r in used), reason=g.status.message())

    cpu, mem = quorum_demand(policy, pods, scheduled)
    choice = choose_placement(TopologyRequest(required_key=policy.required_topology_key,
                                              preferred_key=policy.preferred_topology_key, view=view,
                                              pinned=pinned, scheduled=scheduled, members=len(pods),
                                              demand_cpu=cpu, demand_memory=mem),
                              try_group)
    names = None if choice.chosen is None or not choice.chosen.key else choice.chosen.nodes
    if choice.chosen is not None and kept and kept[0][0] == names:
        return kept[0][1], choice
    release()
    if choice.chosen is None:
        status = choice.status
        return GroupPlacement(unplaced={p.uid: Status(status.code, status.message()) for p in pods},
                              status=status), choice
    return place_group(policy, pods, placer, scheduled=scheduled, node_names=names, feasible=feasible), choice


__all__ = ["place_group_in_topology", "quorum_demand"]
