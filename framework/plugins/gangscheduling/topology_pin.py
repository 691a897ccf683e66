"""A gang's topology constraint on the pod-by-pod path (GangScheduling's PreFilter):
when the whole-group cycle is bypassed (scheduler extenders configured: their calls
would suspend the one-turn cycle), each member is still kept inside one domain of its
PodGroup's topology level, as the group cycle keeps the whole gang.

- Members already reserved (waiting at Permit or being bound) or bound pin the domain:
  later members may use only its nodes (two domains among them is upstream's Error,
  "cannot determine domain for already scheduled pods: ...").
- With none placed, the group's domain is chosen for it: the preferred level first
  (ksched's annotation), then the required one, and within a level the domain whose
  free cpu and memory hold the members the quorum still lacks with the least left
  over (best fit, as the group cycle ranks them). Without a required level and no
  domain fitting, the whole cluster is left open.
- A domain where the group was rejected (GangScheduling's early stop) is not chosen
  again until every domain of the level has been tried; reaching the quorum forgets
  the tries. So a gang retried after its backoff moves on to the next domain instead
  of failing in the same one forever.

No I/O; the state is the plugin's (one scheduler, one thread)."""
from __future__ import annotations

from typing import Any, Sequence

from framework.api.objects import Pod
from framework.interface import Code, PreFilterResult, Status
from framework.workload.policy import GroupPolicy
from framework.workload.topology import (NO_DOMAINS, NO_PLACEMENT, SCHEDULED_DOMAIN_ERROR, TOO_SMALL, ClusterView,
                                         Domain, pinned_domain)
from framework.workload.topology_cycle import quorum_demand
from framework.workload.topology_view import cluster_view

GroupKey = tuple[str, str]


class DomainPin:
    def __init__(self) -> None:
        self.level: dict[GroupKey, str] = {}  # the label key the group's domain was chosen at
        self.current: dict[GroupKey, tuple[str, str]] = {}  # (key, value) chosen last
        self.tried: dict[GroupKey, set[tuple[str, str]]] = {}  # domains the group was rejected in
        self.groupings: dict[str, Any] = {}  # topology_view's memo of domains per label

    def nodes_for(self, handle: Any, policy: GroupPolicy, pinned: Sequence[tuple[str, str]],
                  unscheduled: Sequence[Pod]) -> tuple[PreFilterResult | None, Status | None]:
        """The nodes a member of `policy` may use: its group's domain."""
        levels = list(dict.fromkeys(k for k in (policy.preferred_topology_key, policy.required_topology_key) if k))
        if not levels:
            return None, None
        key = (policy.namespace, policy.name)
        view = cluster_view(handle.snapshot(), self.groupings)
        if pinned:
            level = self.level.get(key) or policy.required_topology_key or policy.preferred_topology_key
            try:
                value = pinned_domain(level, view, pinned)
            except ValueError as e:
                return None, Status(Code.Error, SCHEDULED_DOMAIN_ERROR.format(err=e))
            domains = view.domains(level, value)
            return PreFilterResult(set(domains[0].nodes) if domains else set()), None
        cpu, mem = quorum_demand(policy, unscheduled, 0)
        chosen, why = self._choose(view, levels, key, cpu, mem)
        if chosen is None and self.tried.get(key):
            self.tried.pop(key)  # every domain was tried: start over
            chosen, why = self._choose(view, levels, key, cpu, mem)
        if chosen is None:
            if not policy.required_topology_key:
                return None, None  # only a preferred level: the last resort is the whole cluster
            return None, Status(Code.UnschedulableAndUnresolvable, NO_PLACEMENT.format(detail="; ".join(why)))
        self.level[key], self.current[key] = chosen.key, (chosen.key, chosen.value)
        return PreFilterResult(set(chosen.nodes)), None

    def _choose(self, view: ClusterView, levels: list[str], key: GroupKey, cpu: int,
                mem: int) -> tuple[Domain | None, list[str]]:
        tried = self.tried.get(key, set())
        why: list[str] = []
        for level in levels:
            domains = view.domains(level, None)
            if not domains:
                why.append(NO_DOMAINS.format(key=level))
                continue
            fits = []
            for d in domains:
                free = view.free(d)
                if free.free_cpu < cpu or free.free_memory < mem:
                    why.append(f"{d.name} ({len(d.nodes)} nodes): skipped: "
                               + TOO_SMALL.format(cpu=cpu, mem=mem, fcpu=free.free_cpu, fmem=free.free_memory))
                elif (d.key, d.value) not in tried:
                    fits.append((free.free_cpu, free.free_memory, d.value, d))
            if fits:
                return min(fits, key=lambda f: f[:3])[3], why
        return None, why

    def rejected(self, key: GroupKey) -> None:
        """The group's early stop rejected it: its domain is tried."""
        current = self.current.pop(key, None)
        if current is not None:
            self.tried.setdefault(key, set()).add(current)
        self.level.pop(key, None)

    def placed(self, key: GroupKey) -> None:
        """The quorum was reached: forget the tries."""
        self.tried.pop(key, None)
        self.current.pop(key, None)


__all__ = ["DomainPin"]
