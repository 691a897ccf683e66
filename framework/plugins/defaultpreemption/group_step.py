"""DefaultPreemption's group-aware candidate step (KEP-5710 over framework/workload/preemption.py).

Two cases take it instead of the per-node candidates:
- the preemptor is a member of a scheduling.k8s.io gang: room is made for the members
  the gang still lacks (minCount less its bound and waiting members, the preemptor
  first) in one domain of the group's topology label (the whole cluster without
  one), and every placed member is nominated to its node;
- a victim on a node belongs to a PodGroup in disruptionMode PodGroup (or a
  Coscheduling gang): the group is one unit, evicted whole (its members on other nodes
  too) or not at all. Members of a group in disruptionMode Pod (the default) are
  victims one by one, at their PodGroup's priority when it has one.

The simulation asks the profile's own Framework: each member's PreFilter once, then
on a simulated node the PreFilter extensions for the pods the simulation removed or
added, then Filter with the nominated pods of equal or higher priority (upstream's
two-pass rule), leaving out the pods this plan places itself."""
from __future__ import annotations

from typing import Any, Sequence

from framework.api.groups import POD_GROUP_KEY
from framework.api.objects import POD_GROUP_LABEL, Pod, PodDisruptionBudget
from framework.api.workload_api import SchedulingPodGroup
from framework.interface import Code, CycleState, PostFilterResult, Status
from framework.preemption import Candidate, disruption_target
from framework.workload.group_cycle import GROUP_ORDER_KEY
from framework.workload.group_status import with_condition
from framework.node_info import NodeInfo, PodInfo
from framework.workload.policy import GroupPolicy, group_policy_of
from framework.workload.preemption import (
    Domain, GroupPreemption, VictimUnit, domains_of, plan_group_preemption,
    plan_in_domain, victim_units,
)


class SimulatedFits:
    """framework.workload.preemption.Fits over a Framework and the snapshot it filters."""

    def __init__(self, fwk: Any, own: dict[str, CycleState], placed_uids: frozenset[str] = frozenset()) -> None:
        self.fwk = fwk
        self.states = own  # uid -> its CycleState after PreFilter (the preemptor's from its cycle)
        self.refused: set[str] = set()
        self.placed_uids = placed_uids  # pods the plan places itself: not counted again as nominated

    def _state(self, pod: Pod) -> CycleState | None:
        if pod.uid in self.refused:
            return None
        state = self.states.get(pod.uid)
        if state is None:
            state = CycleState()
            _, st, _ = self.fwk.run_pre_filter(state, pod)
            if not st.is_success():
                self.refused.add(pod.uid)
                return None
            self.states[pod.uid] = state
        return state

    def __call__(self, pod: Pod, node_info: NodeInfo) -> bool:
        base = self._state(pod)
        if base is None:
            return False
        fwk = self.fwk
        filtering = fwk.filtering
        state = base.clone()
        original = fwk.handle.snapshot().get(node_info.name)
        before = {pi.pod.uid for pi in original.pods} if original is not None else set()
        now = {pi.pod.uid: pi for pi in node_info.pods}
        for pi in original.pods if original is not None else ():
            if pi.pod.uid not in now and not filtering.run_pre_filter_extension_remove_pod(state, pod, pi, node_info).is_success():
                return False
        for uid, pi in now.items():
            if uid not in before and not filtering.run_pre_filter_extension_add_pod(state, pod, pi, node_info).is_success():
                return False
        nominated = [pi for pi in fwk.handle.nominated_pods_for_node(node_info.name)
                     if pi.pod.priority >= pod.priority and pi.pod.uid != pod.uid
                     and pi.pod.uid not in self.placed_uids and pi.pod.uid not in now]
        if nominated:
            with_them, info = state.clone(), node_info.clone()
            for pi in nominated:
                info.add_pod(pi)
                if not filtering.run_pre_filter_extension_add_pod(with_them, pod, pi, info).is_success():
                    return False
            if not filtering.run_filter(with_them, pod, info).is_success():
                return False
        return filtering.run_filter(state, pod, node_info).is_success()


class GangView:
    """What the step reads of the cluster's gangs through the handle."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def policy(self, pod: Pod) -> GroupPolicy | None:
        """The pod's scheduling.k8s.io PodGroup policy when it is a gang member."""
        if not pod.scheduling_group:
            return None
        pg = self.handle.get_object(POD_GROUP_KEY, pod.namespace, pod.scheduling_group)
        policy = group_policy_of(pg) if isinstance(pg, SchedulingPodGroup) else None
        return policy if policy is not None and policy.gang else None

    def pod_group(self, pod: Pod) -> SchedulingPodGroup | None:
        if not pod.scheduling_group:
            return None
        pg = self.handle.get_object(POD_GROUP_KEY, pod.namespace, pod.scheduling_group)
        return pg if isinstance(pg, SchedulingPodGroup) else None

    def group_priority(self, pod: Pod) -> int | None:
        """The priority the pod's PodGroup gives all its members (KEP-5710), None when unset."""
        pg = self.pod_group(pod)
        return pg.priority if pg is not None else None

    def preemptor_priority(self, pod: Pod) -> int:
        got = self.group_priority(pod)
        return pod.priority if got is None else got

    def gang_of(self, pod: Pod) -> str | None:
        """The unit key of a member evicted with its group (a scheduling.k8s.io PodGroup
        in disruptionMode PodGroup, or a Coscheduling PodGroup), None for a pod evicted
        alone."""
        pg = self.pod_group(pod)
        if pg is not None:
            return f"{pod.namespace}/{pod.scheduling_group}" if pg.disrupted_whole else None
        group = pod.labels.get(POD_GROUP_LABEL)
        if group and self.handle.get_object("PodGroup", pod.namespace, group) is not None:
            return f"coscheduling:{pod.namespace}/{group}"
        return None

    def any_gangs(self) -> bool:
        """Whether some PodGroup is evicted only whole (the per-node columns know no units)."""
        return any(isinstance(pg, SchedulingPodGroup) and pg.disrupted_whole
                   for pg in self.handle.list_objects(POD_GROUP_KEY))

    def units(self, group_priorities: bool = True) -> list[VictimUnit]:
        """Every bound pod in its victim unit; with `group_priorities`, at its PodGroup's
        priority (workload-aware preemption) rather than its own (a single pod's)."""
        return victim_units((pi.pod for ni in self.handle.snapshot().list() for pi in ni.pods), self.gang_of,
                            self.group_priority if group_priorities else None)

    def whole_groups(self, pods: Sequence[Pod]) -> list[SchedulingPodGroup]:
        """The scheduling.k8s.io PodGroups (disruptionMode PodGroup) these victims empty, once each."""
        seen: dict[str, SchedulingPodGroup] = {}
        for p in pods:
            pg = self.pod_group(p)
            if pg is not None and pg.disrupted_whole:
                seen.setdefault(pg.key, pg)
        return list(seen.values())


def members_to_place(handle: Any, pod: Pod, policy: GroupPolicy,
                     order: Sequence[str] = ()) -> tuple[list[Pod], list[str]]:
    """The members the gang still needs placed (the preemptor first, then pending
    members in the group cycle's `order` (GROUP_ORDER_KEY: those the cycle placed
    first), then the others by name, up to minCount less those bound or waiting at
    Permit), and the nodes of those bound or waiting (they pin a topology domain)."""
    pinned: list[str] = []
    pending: list[Pod] = []
    for m in handle.scheduling_group_pods(pod.namespace, policy.name):
        if m.uid == pod.uid or m.is_terminal or m.is_deleting:
            continue
        waiting = handle.get_waiting_pod(m.uid)
        if m.node_name or waiting is not None:
            pinned.append(m.node_name or waiting.node_name)
        else:
            pending.append(m)
    need = max(policy.quorum - len(pinned), 1)
    rank = {uid: i for i, uid in enumerate(order)}
    pending.sort(key=lambda m: (rank.get(m.uid, len(rank)), m.name))
    return [pod, *pending[:need - 1]], pinned


def plan_for_gang(fwk: Any, state: CycleState, pod: Pod, policy: GroupPolicy, view: GangView,
                  pdbs: Sequence[PodDisruptionBudget]) -> GroupPreemption:
    """The group's plan over the whole snapshot."""
    handle = fwk.handle
    members, pinned = members_to_place(handle, pod, policy, state.get(GROUP_ORDER_KEY, ()))
    nodes = handle.snapshot().list()
    fits = SimulatedFits(fwk, {pod.uid: state}, frozenset(m.uid for m in members))
    domains = domains_of(nodes, policy.required_topology_key, pinned)
    return plan_group_preemption(members, view.preemptor_priority(pod), nodes, domains, view.units(), fits, pdbs)


def victims_keeping_gangs_whole(fwk: Any, state: CycleState, pod: Pod, node_info: NodeInfo, view: GangView,
                                pdbs: Sequence[PodDisruptionBudget]) -> tuple[list[Pod], int] | str:
    """A single pod's victims on one node (a copy) with gangs as whole units, or why none work."""
    # a single pod's preemption: groups in disruptionMode PodGroup stay whole, but each
    # pod counts its own priority (upstream's default preemption reads no PodGroup priority)
    units = [u for u in view.units(group_priorities=False) if any(p.node_name == node_info.name for p in u.members)]
    got = plan_in_domain([pod], pod.priority, Domain(node_info.name, (node_info.name,)),
                         {node_info.name: node_info}, units, SimulatedFits(fwk, {pod.uid: state}), pdbs)
    return got if isinstance(got, str) else (list(got.victims), got.num_pdb_violations)


def group_not_placeable(policy: GroupPolicy, reasons: dict[str, str] | Any) -> str:
    """Why the group cannot be placed even with preemption, per domain tried."""
    where = "; ".join(f"{domain}: {why}" if domain else why for domain, why in sorted(reasons.items()))
    return f"pod group {policy.name} cannot be placed even with preemption: {where}"


def group_outcome(pod: Pod, policy: GroupPolicy, got: GroupPreemption
                  ) -> list[Candidate] | tuple[PostFilterResult | None, Status]:
    """The Evaluator's answer from the group's plan: the one candidate (the
    preemptor's node, every victim of the plan, the other members' nominations), or
    "preemption is not helpful" with each domain's reason (the nomination cleared)."""
    plan = got.plan
    if plan is None:
        return PostFilterResult(""), Status(Code.Unschedulable, group_not_placeable(policy, got.reasons))
    node = next(n for m, n in plan.placements if m.uid == pod.uid)
    others = tuple((m, n) for m, n in plan.placements if m.uid != pod.uid)
    return [Candidate(node, list(plan.victims), plan.num_pdb_violations, others)]


def mark_victim_groups(handle: Any, groups: Sequence[SchedulingPodGroup], preemptor: Pod) -> None:
    """DisruptionTarget=True on each PodGroup a chosen plan evicts whole (a write the
    store finishes; a conflict is dropped, as PodGroupScheduled's)."""
    condition = disruption_target(preemptor)
    now_ns = int(handle.now() * 1e9)
    for pg in groups:
        written = with_condition(pg.raw, condition, now_ns)
        if written is not None:
            handle.update_object_later(written)


def has_gang_victim(view: GangView, node_info: NodeInfo, pod: Pod) -> bool:
    """A lower-priority pod on the node is evicted only with its whole PodGroup."""
    return any(pi.pod.priority < pod.priority and pi.pod.scheduling_group and view.gang_of(pi.pod) is not None
               for pi in node_info.pods)


__all__ = ["GangView", "SimulatedFits", "group_not_placeable", "group_outcome", "has_gang_victim", "mark_victim_groups",
           "members_to_place", "plan_for_gang",
           "victims_keeping_gangs_whole"]
