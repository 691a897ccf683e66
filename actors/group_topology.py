"""The Scheduler's placement for the whole-group cycle (GroupCycle.placement): every
gang goes through framework/workload/topology_cycle.py, which places a gang with no
topology level on the whole cluster (place_group) and a constrained one in the
domain it chooses. The members already bound or assumed (found in the scheduler's
view and cache) pin the domain; the last choice per gang is kept, bounded, for
explain."""
from __future__ import annotations

from typing import Any, Protocol

from framework.api.objects import Pod
from framework.workload.group_cycle import GroupPlacement
from framework.workload.member_placer import CachePlacer
from framework.workload.policy import GroupPolicy
from framework.workload.topology import TopologyResult
from framework.workload.topology_cycle import place_group_in_topology

class PlacedMembers(Protocol):
    """What the topology placement reads of the Scheduler: its informer view and cache,
    for the members already bound or assumed."""

    objects: Any
    cache: Any

KEEP_TOPOLOGY_CHOICES = 4096  # the most recent constrained gangs whose choice explain shows


class TopologyPlacement:
    def __init__(self, sched: PlacedMembers) -> None:
        self.sched = sched
        self.choices: dict[tuple[str, str], TopologyResult] = {}  # (namespace, name) -> last choice
        self.groupings: dict[str, object] = {}  # domains per label, kept between cycles (topology_view.py)

    def __call__(self, policy: GroupPolicy, pods: list[Pod], placer: CachePlacer, *,
                 scheduled: int) -> GroupPlacement:
        pinned = self._pinned(policy) if policy.required_topology_key or policy.preferred_topology_key else []
        result, choice = place_group_in_topology(policy, pods, placer, scheduled=scheduled, pinned=pinned,
                                                 groupings=self.groupings)
        if choice is not None:
            key = (policy.namespace, policy.name)
            self.choices.pop(key, None)
            self.choices[key] = choice
            while len(self.choices) > KEEP_TOPOLOGY_CHOICES:
                del self.choices[next(iter(self.choices))]
        return result

    def _pinned(self, policy: GroupPolicy) -> list[tuple[str, str]]:
        s = self.sched
        out = []
        for p in s.objects.scheduling_group_pods(policy.namespace, policy.name):
            node = p.node_name
            if not node:
                assumed = s.cache.get_pod(p.key)
                node = assumed.node_name if assumed is not None else ""
            if node:
                out.append((p.key, node))
        return out


__all__ = ["KEEP_TOPOLOGY_CHOICES", "TopologyPlacement"]
