"""DefaultPreemption: the PostFilter plugin that preempts lower-priority pods
(upstream pkg/scheduler/framework/plugins/defaultpreemption).

The plugin decides the policy (who may be a victim, how many nodes to dry-run,
which victims to keep on a node); framework.preemption.Evaluator runs the
procedure. Victim selection simulates pod removal through the plugin's own
Framework (PreFilter extensions and Filter plugins), which the runtime hands to it
with `set_framework` when the profile is built.

With SchedulerAsyncPreemption (on by default, as upstream since v1.33) PostFilter
only chooses the victims and nominates the node; the owner's preemption actor
evicts them, and PreEnqueue holds the preemptor back until the last victim is
gone or terminating. With the gate off the victims are evicted inside PostFilter.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Sequence

from framework.api.errors import ValidationError
from framework.api.objects import Pod, PodDisruptionBudget
from framework.api.workload_api import TOPOLOGY_AWARE, WORKLOAD_AWARE_PREEMPTION
from framework.cache import NodeInfo, PodInfo
from framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code, CycleState, NodeToStatus,
                                 PostFilterResult, QueueingHint, SignPurpose, Status)
from framework.plugins.coscheduling.preemption import keeps_gangs_whole
from framework.plugins.defaultpreemption.columnar import VictimColumns, columnar_victims
from framework.plugins.defaultpreemption.lowest_priorities import LowestPriorities
from framework.plugins.defaultpreemption.group_step import (GangView, group_outcome, has_gang_victim, mark_victim_groups,
                                                            plan_for_gang, victims_keeping_gangs_whole)
from framework.preemption_inflight import PREEMPTION_RUNNING, PREEMPTION_RUNNING_GROUP
from framework.preemption import (
    ASYNC_PREEMPTION,
    Candidate,
    CandidateFilter,
    Evaluator,
    FastVictims,
    filter_pods_with_pdb_violation,
    importance_key,
    pod_terminating_by_preemption,
)
from framework.plugins.helper.signing import ALL_SIGNED

NAME = "DefaultPreemption"
DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100

NOT_ELIGIBLE_PREEMPT_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NO_VICTIMS = "No preemption victims found for incoming pod"
# upstream 1.36's PostFilter for a member of a scheduling.k8s.io PodGroup while
# TopologyAwareWorkloadScheduling is on (ksched reads them with WorkloadAwarePreemption off)
GROUP_NOT_FOUND = "preemption: pod group for pod not found"
NOT_ELIGIBLE_PLACEMENT = "preemption: not eligible due to placement-based pod group scheduling limitation"


def parse_args(args: dict[str, Any] | None) -> tuple[int, int]:
    """DefaultPreemptionArgs with v1 defaults, validated as upstream validates them.
    Returns (minCandidateNodesPercentage, minCandidateNodesAbsolute)."""
    args = args or {}
    values: dict[str, int] = {}
    for key, default in (("minCandidateNodesPercentage", DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE),
                         ("minCandidateNodesAbsolute", DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE)):
        v = args.get(key)
        if v is None:
            v = default
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValidationError(key, "must be an integer")
        values[key] = v
    pct = values["minCandidateNodesPercentage"]
    absolute = values["minCandidateNodesAbsolute"]
    if not 0 <= pct <= 100:
        raise ValidationError("minCandidateNodesPercentage", f"Invalid value: {pct}: not in valid range [0, 100]")
    if absolute < 0:
        raise ValidationError("minCandidateNodesAbsolute", f"Invalid value: {absolute}: not in valid range [0, inf)")
    if pct == 0 and absolute == 0:
        raise ValidationError(
            "minCandidateNodesPercentage",
            "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
        )
    return pct, absolute


def _prefixed(result: PostFilterResult | None, status: Status) -> tuple[PostFilterResult | None, Status]:
    msg = status.message()
    if msg:
        return result, Status(status.code, f"preemption: {msg}")
    return result, status


class DefaultPreemption:
    name = NAME

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """Reads nothing of the pod beyond the common signature (SignPlugin)."""
        return ALL_SIGNED

    def __init__(self, handle: Any, min_candidate_nodes_percentage: int, min_candidate_nodes_absolute: int) -> None:
        self.handle = handle
        self.min_candidate_nodes_percentage = min_candidate_nodes_percentage
        self.min_candidate_nodes_absolute = min_candidate_nodes_absolute
        self.framework: Any = None
        # Extra victim filtering on top of "lower priority than the preemptor":
        # bound gang members are spared where evicting them would break the gang.
        self.is_eligible_pod: Callable[[NodeInfo, PodInfo, Pod], bool] = keeps_gangs_whole(handle)
        # Victim order, most important first (upstream util.MoreImportantPod).
        self.importance_key: Callable[[Pod], Any] = importance_key
        # The dry run in columns where only NodeResourcesFit reads the pods (columnar.py).
        self._default_eligible = self.is_eligible_pod
        self.columns = VictimColumns()
        self.lowest = LowestPriorities()  # the victimless check's column
        self.gangs = GangView(handle)
        self.evaluator = Evaluator(NAME, handle, self)

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> "DefaultPreemption":
        pct, absolute = parse_args(args)
        return cls(handle, pct, absolute)

    def set_framework(self, fwk: Any) -> None:
        """The Framework whose plugins this plugin serves (it simulates with them)."""
        self.framework = fwk

    # --- PostFilter -----------------------------------------------------------------------------

    async def post_filter(self, state: CycleState, pod: Pod, filtered: NodeToStatus
                          ) -> tuple[PostFilterResult | None, Status]:
        """The one door: preempting extenders, when the handle has them, narrow the
        candidates (callExtenders); without them nothing suspends."""
        refused = self._placement_limited(pod)
        if refused is not None:
            return None, refused
        narrow: CandidateFilter | None = self.handle.preempting_extenders()
        return _prefixed(*await self.evaluator.preempt(state, pod, filtered, narrow))

    def _placement_limited(self, pod: Pod) -> Status | None:
        """upstream 1.36's first check: with TopologyAwareWorkloadScheduling on, a member
        of a PodGroup with schedulingConstraints does not preempt pod by pod (a group
        placed domain by domain would preempt once per domain), nor does a member whose
        PodGroup is gone. ksched applies it with WorkloadAwarePreemption off only: on,
        its group step (group_candidates) preempts inside one domain for the group."""
        features = self.handle.features
        if not pod.scheduling_group or features.enabled(WORKLOAD_AWARE_PREEMPTION) \
                or not features.enabled(TOPOLOGY_AWARE):
            return None
        pg = self.gangs.pod_group(pod)
        if pg is None:
            return Status(Code.Unschedulable, GROUP_NOT_FOUND)
        if (pg.raw.get("spec") or {}).get("schedulingConstraints") is not None:
            return Status(Code.Unschedulable, NOT_ELIGIBLE_PLACEMENT)
        return None

    # --- PreEnqueue (SchedulerAsyncPreemption) ---------------------------------------------------

    def _async(self) -> bool:
        return self.handle.features.enabled(ASYNC_PREEMPTION)

    def pre_enqueue(self, pod: Pod) -> Status | None:
        """Hold the preemptor back while its own preemption is still evicting; a member
        of a PodGroup (WorkloadAwarePreemption on) while its group's is (upstream's
        IsPodGroupRunningPreemption): the group preempts as one, and no member may
        start a cycle, or a preemption of its own, before the victims are gone."""
        if not self._async() or not len(self.handle.preemptions):  # nothing in flight: nothing held
            return None
        if pod.scheduling_group and self.handle.features.enabled(WORKLOAD_AWARE_PREEMPTION):
            pg = self.gangs.pod_group(pod)
            if pg is not None and self.evaluator.is_pod_running_preemption(pg.uid):
                return Status(Code.UnschedulableAndUnresolvable, PREEMPTION_RUNNING_GROUP)
            return None
        if self.evaluator.is_pod_running_preemption(pod.uid):
            return Status(Code.UnschedulableAndUnresolvable, PREEMPTION_RUNNING)
        return None

    def preempting_group(self, pod: Pod) -> tuple[str, tuple[Pod, ...]] | tuple[()]:
        """The in-flight record's key and the pods it holds when `pod` preempts for its
        PodGroup (WorkloadAwarePreemption on, as `pre_enqueue` reads it): the group's
        uid and its pending members; () when the pod preempts for itself."""
        if not pod.scheduling_group or not self.handle.features.enabled(WORKLOAD_AWARE_PREEMPTION):
            return ()
        pg = self.gangs.pod_group(pod)
        if pg is None:
            return ()
        pending = tuple(m for m in self.handle.scheduling_group_pods(pod.namespace, pod.scheduling_group)
                        if not m.node_name and not m.is_deleting)
        return pg.uid, pending

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """With async preemption, Pod/Delete, so that a victim's deletion reaches a
        preemptor this plugin holds; the hint leaves the decision to the plugins
        that rejected the pod. Without it this plugin rejects nothing itself."""
        if not self._async():
            return []
        return [ClusterEventWithHint(ClusterEvent("Pod", ActionType.Delete), _skip_after_pod_deletion)]

    # --- the policy the Evaluator asks for -------------------------------------------------------

    def calculate_num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        if n < self.min_candidate_nodes_absolute:
            n = self.min_candidate_nodes_absolute
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        offset = self.handle.rand.randrange(num_nodes) if num_nodes > 0 else 0
        return offset, self.calculate_num_candidates(num_nodes)

    def ordered_score_funcs(self, victims: dict[str, Candidate]) -> list[Callable[[str], int]] | None:
        return None

    def is_preemption_allowed(self, node_info: NodeInfo, victim: PodInfo, preemptor: Pod) -> bool:
        return victim.pod.priority < preemptor.priority and self.is_eligible_pod(node_info, victim, preemptor)

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status | None) -> tuple[bool, str]:
        """False with the reason when the pod must not preempt: its policy is Never,
        or victims of its earlier preemption are still terminating on its nominated node."""
        if pod.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_PREEMPT_NEVER
        nominated = pod.nominated_node_name
        if nominated:
            # A nominated node that can no longer work at all: preempt elsewhere.
            if nominated_node_status is not None and nominated_node_status.code == Code.UnschedulableAndUnresolvable:
                return True, ""
            node_info = self.handle.snapshot().get(nominated)
            if node_info is not None:
                for pi in node_info.pods:
                    if self.is_preemption_allowed(node_info, pi, pod) and pod_terminating_by_preemption(pi.pod):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def group_candidates(self, state: CycleState, pod: Pod, filtered: NodeToStatus
                         ) -> list[Candidate] | tuple[PostFilterResult | None, Status] | None:
        """The group-aware candidate step (group_step.py): for a member of a
        scheduling.k8s.io gang, the one candidate that makes room for the members
        its group lacks in one domain, or the outcome when none does; None for any
        other pod (the per-node candidates follow). With WorkloadAwarePreemption off a
        member preempts as a single pod does, as upstream's group cycle then runs no
        PodGroupPostFilter, only the member's own PostFilter."""
        if not self.handle.features.enabled(WORKLOAD_AWARE_PREEMPTION):
            return None
        policy = self.gangs.policy(pod)
        if policy is None:
            return None
        got = plan_for_gang(self._framework(), state, pod, policy, self.gangs, self.evaluator.list_pdbs())
        return group_outcome(pod, policy, got)

    def candidate_chosen(self, c: Candidate, pod: Pod) -> None:
        """The Evaluator chose `c`: every scheduling.k8s.io PodGroup it evicts whole
        (disruptionMode PodGroup) gets DisruptionTarget=True, reason
        PreemptionByScheduler, as v1alpha2's PodGroupStatus documents it."""
        mark_victim_groups(self.handle, self.gangs.whole_groups(c.victims), pod)

    def columnar_victims(self, state: CycleState, pod: Pod, filtered: NodeToStatus,
                         potential: Sequence[NodeInfo], pdbs: Sequence[PodDisruptionBudget]) -> FastVictims | None:
        """The Evaluator's answers for this cycle from the columns (columnar.py), or
        None. A subclass that chooses victims its own way, or a changed victim
        policy, gets none; nor does a cluster with gangs (their members are victims
        only as whole units, which the columns do not know)."""
        cls = type(self)
        if self.gangs.any_gangs():
            return None
        if (cls.select_victims_on_node is not DefaultPreemption.select_victims_on_node
                or cls.is_preemption_allowed is not DefaultPreemption.is_preemption_allowed
                or self.is_eligible_pod is not self._default_eligible or self.importance_key is not importance_key):
            return None
        return columnar_victims(self.columns, self.framework, state, pod, filtered, potential, bool(pdbs),
                                Status(Code.UnschedulableAndUnresolvable, NO_VICTIMS),
                                choose=cls.ordered_score_funcs is DefaultPreemption.ordered_score_funcs)

    def victimless(self, pod: Pod, potential: Sequence[NodeInfo]) -> Status | None:
        """NO_VICTIMS, the verdict of every `potential` node, when none of them holds
        a pod of lower priority than `pod` (select_victims_on_node's first check, as
        upstream's SelectVictimsOnNode: nothing else of the node matters then); None
        when some node does or the columns cannot tell. The steady state of a batch
        cluster (one priority everywhere) then costs no per-node dry run."""
        cls = type(self)
        if (cls.is_preemption_allowed is not DefaultPreemption.is_preemption_allowed
                or cls.select_victims_on_node is not DefaultPreemption.select_victims_on_node):
            return None
        snapshot = self.handle.snapshot()
        if not potential or not self.lowest.refresh(snapshot):
            return None
        if self.lowest.of(snapshot, potential) < pod.priority:
            return None
        return Status(Code.UnschedulableAndUnresolvable, NO_VICTIMS)

    def select_victims_on_node(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[Pod], int, Status]:
        """The fewest pods to remove from `node_info` (a copy) for `pod` to fit:
        remove every lower-priority pod, check the pod fits, then add pods back,
        most important first and PDB-protected ones before the others, keeping each
        one that still lets the pod fit."""
        fwk = self._framework()
        filtering = fwk.filtering  # called per victim: the part itself, a frame fewer
        if has_gang_victim(self.gangs, node_info, pod):  # gangs go whole or stay (KEP-5710)
            got = victims_keeping_gangs_whole(fwk, state, pod, node_info, self.gangs, pdbs)
            if isinstance(got, str):
                return [], 0, Status(Code.Unschedulable, got)
            return got[0], got[1], Status()

        def remove(pi: PodInfo) -> Status:
            node_info.remove_pod(pi.pod)
            return filtering.run_pre_filter_extension_remove_pod(state, pod, pi, node_info)

        def add(pi: PodInfo) -> Status:
            node_info.add_pod(pi)
            return filtering.run_pre_filter_extension_add_pod(state, pod, pi, node_info)

        potential = [pi for pi in node_info.pods if self.is_preemption_allowed(node_info, pi, pod)]
        for pi in potential:
            st = remove(pi)
            if not st.is_success():
                return [], 0, _as_error(st)
        if not potential:
            return [], 0, Status(Code.UnschedulableAndUnresolvable, NO_VICTIMS)

        st = filtering.run_filter_with_nominated_pods(state, pod, node_info)
        if not st.is_success():
            return [], 0, st

        potential.sort(key=lambda pi: self.importance_key(pi.pod))
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []

        def reprieve(pi: PodInfo) -> tuple[bool, Status]:
            st = add(pi)
            if not st.is_success():
                return False, st
            fits = filtering.run_filter_with_nominated_pods(state, pod, node_info).is_success()
            if not fits:
                st = remove(pi)
                if not st.is_success():
                    return False, st
                victims.append(pi)
            return fits, Status()

        num_violating = 0
        for pi in violating:
            fits, st = reprieve(pi)
            if not st.is_success():
                return [], 0, _as_error(st)
            if not fits:
                num_violating += 1
        for pi in non_violating:
            _, st = reprieve(pi)
            if not st.is_success():
                return [], 0, _as_error(st)

        if violating and non_violating:
            victims.sort(key=lambda pi: self.importance_key(pi.pod))
        return [pi.pod for pi in victims], num_violating, Status()

    def resolvable_by_preemption(self, status: Status) -> bool:
        """Whether the Filter plugin that rejected a node UnschedulableAndUnresolvable
        says removing pods may help there (a plugin method preemption_may_resolve;
        only DynamicResources has one). Upstream skips every such node."""
        if self.framework is None or not status.plugin:
            return False
        for pl in self.framework.filtering.filter_plugins:
            if pl.name == status.plugin:
                may = getattr(pl, "preemption_may_resolve", None)
                return bool(may is not None and may(status))
        return False

    def _framework(self) -> Any:
        if self.framework is None:
            raise RuntimeError("DefaultPreemption was not given its Framework (set_framework)")
        return self.framework


def _skip_after_pod_deletion(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QueueSkip


def _as_error(st: Status) -> Status:
    """fwk.AsStatus(status.AsError()): the same message as an Error."""
    return Status(Code.Error, st.message())


PLUGINS = [DefaultPreemption]
