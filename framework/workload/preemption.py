"""Workload-aware preemption (KEP-5710): victims chosen in whole gangs, room made for a
whole gang at once. Pure: it reads NodeInfos and asks a `Fits` callback whether a pod
fits a simulated node; it never writes.

Terms:
- a *victim unit* is what is evicted together: every bound member of a PodGroup whose
  disruptionMode is PodGroup (across all nodes), or one pod (a pod in no group, or a
  member of a group in disruptionMode Pod, the default). Its priority is its PodGroup's
  spec.priority when the group has one (KEP-5710: authoritative for every member, as
  upstream's newDomainForWorkloadPreemption), else the highest of its members';
- a *domain* is where the preemptor's members must all land: one value of the
  group's topology label, the whole cluster for a group without one, one node for a
  single pod (KEP-5710 §"Preemption algorithm", step 1).

The algorithm in one domain (KEP-5710 steps 2-4, upstream's SelectVictimsOnNode rules
for order and PDBs):
1. every unit of lower priority than the preemptor with a member in the domain is a
   potential victim; all are removed;
2. the members to place are placed, first fit in domain order; if even then one does
   not fit, the domain is infeasible;
3. units are sorted most important first (higher priority, then a group ahead of
   single pods at the same priority, then the larger group, then the earlier start), and reprieved in that
   order, those whose eviction would break a PodDisruptionBudget first: a unit is put
   back whole and kept if the members still all place, else removed again whole.
Domains are compared with upstream's pickOneNodeForPreemption criteria over each
domain's victims (fewest PDB violations, lowest highest priority, smallest priority
sum, fewest victims, latest start).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, Iterable, Mapping, Sequence

from framework.api.objects import Pod, PodDisruptionBudget
from framework.node_info import NodeInfo, PodInfo
from framework.preemption import (Candidate, filter_pods_with_pdb_violation, importance_key,
                                  pick_one_node_for_preemption, pod_start_time)

# Does this pod fit this simulated node (its pods already changed by the simulation)?
Fits = Callable[[Pod, NodeInfo], bool]
# The group a pod is evicted with ("namespace/name"), or None for a pod evicted alone.
GangOf = Callable[[Pod], "str | None"]
# The priority a pod's PodGroup gives it as a victim, or None (its own counts).
GroupPriorityOf = Callable[[Pod], "int | None"]

NO_ROOM = "not enough room for the pod group's members even after preempting every lower-priority pod and pod group"
NO_DOMAIN = "no node carries the topology label"


@dataclass(frozen=True, slots=True)
class VictimUnit:
    """What is evicted together: a gang's bound members, or one pod."""

    key: str
    members: tuple[Pod, ...]
    is_group: bool
    group_priority: int | None = None  # the PodGroup's spec.priority, authoritative when set

    @property
    def priority(self) -> int:
        if self.group_priority is not None:
            return self.group_priority
        return max(p.priority for p in self.members)

    @property
    def start(self) -> int:
        return min(pod_start_time(p) for p in self.members)


def unit_importance(u: VictimUnit) -> tuple[int, int, int, int, str]:
    """Sort key, most important first (upstream 1.36's hierarchy): priority, a group ahead
    of single pods, the larger group, the earlier start."""
    return (-u.priority, 0 if u.is_group else 1, -len(u.members) if u.is_group else 0, u.start, u.key)


def victim_units(pods: Iterable[Pod], gang_of: GangOf, priority_of: GroupPriorityOf | None = None) -> list[VictimUnit]:
    """Bound pods grouped into units, in first-seen order (terminal pods excluded)."""
    groups: dict[str, list[Pod]] = {}
    group_priority: dict[str, int | None] = {}
    singles: list[VictimUnit] = []
    for p in pods:
        if p.is_terminal:
            continue
        gang = gang_of(p)
        if gang is None:
            singles.append(VictimUnit(p.key, (p,), False, priority_of(p) if priority_of is not None else None))
        else:
            groups.setdefault(gang, []).append(p)
            if gang not in group_priority:
                group_priority[gang] = priority_of(p) if priority_of is not None else None
    return [VictimUnit(k, tuple(v), True, group_priority[k]) for k, v in groups.items()] + singles


@dataclass(frozen=True, slots=True)
class Domain:
    name: str
    nodes: tuple[str, ...]


def domains_of(nodes: Sequence[NodeInfo], topology_key: str, pinned: Collection[str] = ()) -> list[Domain]:
    """One domain per value of `topology_key` (sorted by value; nodes without the label
    belong to none), or one domain "" of every node when the key is "". `pinned`: nodes
    of members already bound, whose domain is the only one left (KEP-5732)."""
    if not topology_key:
        return [Domain("", tuple(ni.name for ni in nodes))]
    by_value: dict[str, list[str]] = {}
    for ni in nodes:
        value = ni.node.labels.get(topology_key) if ni.node is not None else None
        if value is not None:
            by_value.setdefault(value, []).append(ni.name)
    out = [Domain(v, tuple(ns)) for v, ns in sorted(by_value.items())]
    if pinned:
        out = [d for d in out if set(pinned) <= set(d.nodes)]
    return out


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """Where each member goes once `victims` (most important first) are gone."""

    domain: str
    placements: tuple[tuple[Pod, str], ...]
    victims: tuple[Pod, ...]
    num_pdb_violations: int


@dataclass(frozen=True, slots=True)
class GroupPreemption:
    """The chosen plan (None when no domain works) and each failed domain's reason."""

    plan: GroupPlan | None
    reasons: Mapping[str, str]


class _Simulation:
    """The domain's nodes with some units removed and the members placed on copies."""

    def __init__(self, nodes: Mapping[str, NodeInfo], domain: Domain, fits: Fits) -> None:
        self.nodes = nodes
        self.domain = domain
        self.fits = fits

    def place(self, members: Sequence[Pod], removed: Iterable[VictimUnit]) -> tuple[tuple[Pod, str], ...] | None:
        gone = {p.uid for u in removed for p in u.members}
        copies: dict[str, NodeInfo] = {}
        for name in self.domain.nodes:
            ni = self.nodes[name]
            if any(pi.pod.uid in gone for pi in ni.pods):
                ni = ni.clone()
                for p in [pi.pod for pi in ni.pods if pi.pod.uid in gone]:
                    ni.remove_pod(p)
            copies[name] = ni
        placed: list[tuple[Pod, str]] = []
        for member in members:
            node = next((n for n in self.domain.nodes if self.fits(member, copies[n])), None)
            if node is None:
                return None
            copy = copies[node] = copies[node].clone()
            copy.add_pod(PodInfo(member.with_node_name(node)))
            placed.append((member, node))
        return tuple(placed)


def plan_in_domain(members: Sequence[Pod], priority: int, domain: Domain, nodes: Mapping[str, NodeInfo],
                   units: Sequence[VictimUnit], fits: Fits, pdbs: Sequence[PodDisruptionBudget]) -> GroupPlan | str:
    """The plan for placing all `members` in `domain`, or why it cannot be done."""
    in_domain = set(domain.nodes)
    potential = sorted((u for u in units if u.priority < priority and any(p.node_name in in_domain for p in u.members)),
                       key=unit_importance)
    sim = _Simulation(nodes, domain, fits)
    if sim.place(members, potential) is None:
        return NO_ROOM
    violating_uids = {pi.pod.uid for pi in filter_pods_with_pdb_violation(
        [PodInfo(p) for u in potential for p in u.members], pdbs)[0]}
    first = [u for u in potential if any(p.uid in violating_uids for p in u.members)]
    first_keys = {u.key for u in first}
    order = first + [u for u in potential if u.key not in first_keys]
    victims = list(order)
    for unit in order:
        rest = [u for u in victims if u is not unit]
        if sim.place(members, rest) is not None:
            victims = rest
    placements = sim.place(members, victims)
    assert placements is not None  # the last successful check left exactly these victims
    pods = sorted((p for u in victims for p in u.members), key=importance_key)
    return GroupPlan(domain.name, placements, tuple(pods), sum(1 for p in pods if p.uid in violating_uids))


def plan_group_preemption(members: Sequence[Pod], priority: int, nodes: Sequence[NodeInfo],
                          domains: Sequence[Domain], units: Sequence[VictimUnit], fits: Fits,
                          pdbs: Sequence[PodDisruptionBudget]) -> GroupPreemption:
    """Try every domain and take the best plan: one that needs no victims at once,
    else upstream's node-choice criteria over the domains' victims."""
    by_name = {ni.name: ni for ni in nodes}
    plans: dict[str, GroupPlan] = {}
    reasons: dict[str, str] = {}
    for domain in domains:
        got = plan_in_domain(members, priority, domain, by_name, units, fits, pdbs)
        if isinstance(got, str):
            reasons[domain.name] = got
            continue
        if not got.victims:
            return GroupPreemption(got, reasons)
        plans[domain.name] = got
    if not domains:
        reasons[""] = NO_DOMAIN
    if not plans:
        return GroupPreemption(None, reasons)
    candidates = {name: Candidate(name, list(p.victims), p.num_pdb_violations) for name, p in plans.items()}
    return GroupPreemption(plans[pick_one_node_for_preemption(candidates)], reasons)


__all__ = ["Domain", "Fits", "GangOf", "GroupPriorityOf", "GroupPlan", "GroupPreemption", "NO_DOMAIN", "NO_ROOM", "VictimUnit",
           "domains_of", "plan_group_preemption", "plan_in_domain", "unit_importance", "victim_units"]
