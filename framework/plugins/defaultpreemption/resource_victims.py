"""Victim selection without simulation, for nodes where only resources matter.

SelectVictimsOnNode (default_preemption.select_victims_on_node) removes every
lower-priority pod from a copy of the node, runs all Filter plugins, then adds the
pods back one by one, running all Filter plugins after each. When the only Filter
plugin whose verdict depends on the pods of a node is NodeResourcesFit, those
filter runs reduce to a few integer comparisons on the node's pod count and
requested cpu, memory and ephemeral storage. `ResourceVictims` does exactly that,
on the snapshot's NodeInfo and without copying it.

It answers only where that reduction is exact, and says None (take the
simulation) everywhere else:
- the pod asks for no scalar (extended) resource;
- every Filter plugin that runs for the pod is NodeResourcesFit or one whose
  verdict does not depend on the pods on the node, no PreFilter extension
  (AddPod/RemovePod) runs (Framework.pods_read_only_by_fit), and NodeResourcesFit
  comes last, so a node that failed at NodeResourcesFit has passed all others;
- the node failed this cycle at NodeResourcesFit, no pod is nominated to it, and
  once all candidate victims are gone the pod fits (otherwise the simulation
  words the Fit status).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from framework.api.objects import Pod, PodDisruptionBudget
from framework.cache import NodeInfo, PodInfo
from framework.interface import Code, CycleState, NodeToStatus
from framework.plugins.noderesources.fit import PRE_FILTER_STATE_KEY, NodeResourcesFit, PreFilterState
from framework.preemption import filter_pods_with_pdb_violation

FIT = NodeResourcesFit.name

# (victims most important first, how many of them violate a PDB)
Victims = tuple[list[Pod], int]


class ResourceVictims:
    """For one preemptor in one cycle: victims on a node from its numbers alone."""

    __slots__ = ("pod", "statuses", "nominated", "allowed", "importance_key",
                 "want_cpu", "want_mem", "want_eph")

    def __init__(self, pod: Pod, request: Any, statuses: NodeToStatus, nominated: Callable[[str], bool],
                 allowed: Callable[[NodeInfo, PodInfo, Pod], bool], importance_key: Callable[[Pod], Any]) -> None:
        self.pod = pod
        self.statuses = statuses
        self.nominated = nominated
        self.allowed = allowed
        self.importance_key = importance_key
        self.want_cpu = request.milli_cpu
        self.want_mem = request.memory
        self.want_eph = request.ephemeral_storage

    @classmethod
    def prepare(cls, fwk: Any, state: CycleState, pod: Pod, statuses: NodeToStatus,
                allowed: Callable[[NodeInfo, PodInfo, Pod], bool],
                importance_key: Callable[[Pod], Any]) -> "ResourceVictims | None":
        """The selector for this cycle, or None when the framework or the pod needs
        the simulation on every node."""
        if fwk is None:
            return None
        skip = state.skip_filter_plugins or ()
        active = [pl for pl in fwk.filter_plugins if pl.name not in skip]
        fit_at = next((i for i, pl in enumerate(active) if pl.name == FIT), None)
        if fit_at is None or fit_at != len(active) - 1 or not isinstance(active[fit_at], NodeResourcesFit):
            return None
        if not fwk.pods_read_only_by_fit(state):
            return None
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState) or s.request.scalar:
            return None
        handle = fwk.handle
        names = handle.nodes_with_nominated_pods()
        if names is not None:
            nominated: Callable[[str], bool] = frozenset(names).__contains__
        else:
            def nominated(node_name: str) -> bool:
                return bool(handle.nominated_pods_for_node(node_name))
        return cls(pod, s.request, statuses, nominated, allowed, importance_key)

    def _fits(self, count: int, cpu: int, mem: int, eph: int, ni: NodeInfo) -> bool:
        """NodeResourcesFit's verdict for a node with `count` pods requesting these sums."""
        a = ni.allocatable
        return (count + 1 <= a.allowed_pod_number
                and (self.want_cpu <= 0 or self.want_cpu <= a.milli_cpu - cpu)
                and (self.want_mem <= 0 or self.want_mem <= a.memory - mem)
                and (self.want_eph <= 0 or self.want_eph <= a.ephemeral_storage - eph))

    def select(self, ni: NodeInfo, pdbs: Sequence[PodDisruptionBudget]) -> Victims | None:
        """What select_victims_on_node returns for `ni` when it succeeds, or None
        when this node needs the simulation."""
        st = self.statuses.get(ni.name)
        if st.plugin != FIT or st.code != Code.Unschedulable or self.nominated(ni.name):
            return None
        pod = self.pod
        potential = [pi for pi in ni.pods if self.allowed(ni, pi, pod)]
        if not potential:
            return None
        used = ni.requested
        count, cpu, mem, eph = len(ni.pods), used.milli_cpu, used.memory, used.ephemeral_storage
        for pi in potential:
            r = pi.pod.resource
            count -= 1
            cpu -= r.milli_cpu
            mem -= r.memory
            eph -= r.ephemeral_storage
        if not self._fits(count, cpu, mem, eph, ni):
            return None
        potential.sort(key=lambda pi: self.importance_key(pi.pod))
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs) if pdbs else ([], potential)
        victims: list[PodInfo] = []
        num_violating = 0
        for group, counts in ((violating, 1), (non_violating, 0)):
            for pi in group:
                r = pi.pod.resource
                c2, m2, e2 = cpu + r.milli_cpu, mem + r.memory, eph + r.ephemeral_storage
                if self._fits(count + 1, c2, m2, e2, ni):
                    count, cpu, mem, eph = count + 1, c2, m2, e2
                else:
                    victims.append(pi)
                    num_violating += counts
        if violating and non_violating:
            victims.sort(key=lambda pi: self.importance_key(pi.pod))
        return [pi.pod for pi in victims], num_violating
