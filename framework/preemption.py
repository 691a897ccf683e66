"""The preemption evaluator (upstream pkg/scheduler/framework/preemption/preemption.go).

A PostFilter plugin that preempts supplies the policy (which pods may be victims,
how many candidate nodes to dry-run, how to choose victims on one node) through
`PreemptionPolicy`; the Evaluator runs the shared procedure: check the preemptor is
eligible, dry-run victim selection on the nodes that failed with a resolvable
status, pick the best candidate node, then evict its victims (or reject them at
Permit) and clear lower-priority nominations on that node.

Pure: cluster writes go through the handle's callbacks (evict_pod,
clear_nominated_node_names); nothing here blocks or does I/O.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol, Sequence

from framework.attempt_outcome import Diagnosis, FitError
from framework.api.objects import Pod, PodDisruptionBudget
from framework.cache import NodeInfo, PodInfo
from framework.interface import Code, CycleState, NodeToStatus, PostFilterResult, Status
from framework.preemption_inflight import PreemptionJob
from framework.preemption_potential import OneStatusNodes, potential_nodes

PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_CANDIDATE_NODE = "no candidate node for preemption"
NO_NODES_AVAILABLE = "no nodes available"

# Priorities are shifted by MaxInt32+1 before summing, so that many negative-priority
# victims never look cheaper than fewer victims of the same priority.
PRIORITY_SHIFT = 2**31
# A pod that has not started counts as starting "now", later than any pod that has
# (upstream uses the current time).
NOT_STARTED = 2**63 - 1
_MIN_INT64 = -(2**63)

_SUCCESS = Status()

ASYNC_PREEMPTION = "SchedulerAsyncPreemption"
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


@dataclass(slots=True)
class Candidate:
    """A node the preemptor could run on once `victims` are gone. Victims are ordered
    from most to least important (MoreImportantPod)."""

    name: str
    victims: list[Pod]
    num_pdb_violations: int = 0
    members: tuple[tuple[Pod, str], ...] = ()  # a gang preemptor's other members, each with its node


# Preemption extenders (upstream's callExtenders): candidates in, narrowed candidates out.
CandidateFilter = Callable[[Pod, list[Candidate]], Awaitable[list[Candidate]]]


class PreemptionPolicy(Protocol):
    """What a preemption plugin decides (upstream's preemption.Interface)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def pod_eligible_to_preempt_others(self, pod: Pod, nominated_node_status: Status | None) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self, state: CycleState, pod: Pod, node_info: NodeInfo, pdbs: Sequence[PodDisruptionBudget]
    ) -> tuple[list[Pod], int, Status]:
        """Victims on one node and how many of them violate a PDB; `state` and
        `node_info` are copies the method may change."""
        ...

    def ordered_score_funcs(self, victims: dict[str, Candidate]) -> list[Callable[[str], int]] | None:
        """Tie-breakers for choosing the node; None means upstream's defaults."""
        ...


# Victims on one node without simulating it, or None where the simulation must run:
# (node, pdbs) -> (victims, number violating a PDB) | failing Status | None. A policy
# may offer one per cycle through `columnar_victims(state, pod, node_to_status,
# potential_nodes, pdbs)`; its answers must equal what select_victims_on_node returns
# (victims on success, the status when the pod cannot fit there); its object may offer
# `whole_dry_run(offset, num_candidates, chosen_only)`: dry_run_preemption's result (with
# chosen_only, when it names its choice, that candidate alone), or None.
FastVictims = Callable[[NodeInfo, Sequence[PodDisruptionBudget]], "tuple[list[Pod], int] | Status | None"]


# --- pod ordering -----------------------------------------------------------------------------

def pod_start_time(pod: Pod) -> int:
    return pod.start_time if pod.start_time is not None else NOT_STARTED


def more_important_pod(a: Pod, b: Pod) -> bool:
    """Higher priority first; at equal priority the pod that started earlier."""
    if a.priority != b.priority:
        return a.priority > b.priority
    return pod_start_time(a) < pod_start_time(b)


def importance_key(pod: Pod) -> tuple[int, int]:
    """Sort key putting the most important pods first (same order as more_important_pod)."""
    return (-pod.priority, pod_start_time(pod))


def earliest_start_time_of_highest_priority(victims: Sequence[Pod]) -> int | None:
    """Among the victims with the highest priority, the earliest start time."""
    if not victims:
        return None
    top = victims[0].priority
    earliest = pod_start_time(victims[0])
    for p in victims:
        if p.priority == top:
            earliest = min(earliest, pod_start_time(p))
        elif p.priority > top:
            top = p.priority
            earliest = pod_start_time(p)
    return earliest


def with_nominated_node_name(pod: Pod, node_name: str) -> Pod:
    """The pod with status.nominatedNodeName set (only the status dict is copied and parsed again)."""
    raw = pod.raw
    return pod.with_server_fields({**raw, "status": {**(raw.get("status") or {}), "nominatedNodeName": node_name}})


def disruption_target(preemptor: Pod) -> dict[str, str]:
    """The condition preemption puts on a victim ("podgroup" for a preemptor in a PodGroup, KEP-5710)."""
    what = "podgroup" if preemptor.scheduling_group else "pod"
    return {"type": DISRUPTION_TARGET, "status": "True", "reason": REASON_PREEMPTION_BY_SCHEDULER,
            "message": f"{preemptor.scheduler_name}: preempting to accommodate a higher priority {what}"}


def preempted_event_message(preemptor: Pod, node_name: str) -> str:
    """The message of the Preempted event recorded on a victim."""
    return f"Preempted by pod {preemptor.uid} on node {node_name}"


def as_terminating_by_preemption(pod: Pod, deletion_timestamp: str, preemptor: Pod) -> Pod:
    """The victim as upstream's cache sees it once preemption has marked and deleted
    it: DisruptionTarget=True (reason PreemptionByScheduler) and a deletionTimestamp.
    Only the dicts that change are copied, and only metadata and status parsed again."""
    raw = pod.raw
    meta = {**raw.get("metadata", {}), "deletionTimestamp": deletion_timestamp}
    status = dict(raw.get("status") or {})
    condition = disruption_target(preemptor)
    status["conditions"] = [c for c in status.get("conditions") or [] if not (
        isinstance(c, dict) and c.get("type") == DISRUPTION_TARGET)] + [condition]
    return pod.with_server_fields({**raw, "metadata": meta, "status": status})


def pod_terminating_by_preemption(pod: Pod) -> bool:
    """Deleting, and marked DisruptionTarget=True by scheduler preemption."""
    if not pod.is_deleting:
        return False
    for cond in pod.conditions:
        if isinstance(cond, dict) and cond.get("type") == DISRUPTION_TARGET:
            return cond.get("status") == "True" and cond.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
    return False


# --- PodDisruptionBudgets -----------------------------------------------------------------------

def filter_pods_with_pdb_violation(
    pod_infos: Sequence[PodInfo], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split pods (order kept) into those whose eviction would exceed a matching
    PDB's remaining disruptionsAllowed, and the others. Pods already listed in a
    PDB's disruptedPods do not consume its budget."""
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pi in pod_infos:
        pod = pi.pod
        violated = False
        if pod.labels:
            for i, pdb in enumerate(pdbs):
                if pdb.namespace != pod.namespace:
                    continue
                sel = pdb.selector
                # A missing or empty selector matches nothing.
                if sel is None or sel.empty or not sel.matches(pod.labels):
                    continue
                if pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pi)
    return violating, non_violating


# --- choosing the node ---------------------------------------------------------------------------

def default_score_funcs(victims: dict[str, Candidate]) -> list[Callable[[str], int]]:
    """Upstream's ordered preferences, each as "higher is better"."""

    def fewest_pdb_violations(node: str) -> int:
        return -victims[node].num_pdb_violations

    def lowest_highest_priority(node: str) -> int:
        return -victims[node].victims[0].priority

    def smallest_priority_sum(node: str) -> int:
        return -sum(p.priority + PRIORITY_SHIFT for p in victims[node].victims)

    def fewest_victims(node: str) -> int:
        return -len(victims[node].victims)

    def latest_start_time(node: str) -> int:
        t = earliest_start_time_of_highest_priority(victims[node].victims)
        return _MIN_INT64 if t is None else t

    return [fewest_pdb_violations, lowest_highest_priority, smallest_priority_sum, fewest_victims, latest_start_time]


def pick_one_node_for_preemption(
    victims: dict[str, Candidate], score_funcs: list[Callable[[str], int]] | None = None
) -> str:
    """Apply the score functions in turn to the nodes still tied; the first node
    left wins (upstream pickOneNodeForPreemption)."""
    if not victims:
        return ""
    if not score_funcs and all(c.victims for c in victims.values()):
        return _pick_by_default_order(victims)
    nodes = list(victims)
    for fn in score_funcs or default_score_funcs(victims):
        best: list[str] = []
        max_score = _MIN_INT64 - 1
        for node in nodes:
            s = fn(node)
            if s > max_score:
                max_score = s
                best = []
            if s == max_score:
                best.append(node)
        if len(best) == 1:
            return best[0]
        nodes = best
    return nodes[0]


def _pick_by_default_order(victims: dict[str, Candidate]) -> str:
    """pick_one_node_for_preemption with the default score functions, as one key per
    node: narrowing to the best of each function in turn and taking the first node
    left is taking the first node with the greatest tuple of their values."""

    def key(node: str) -> tuple[int, int, int, int, int]:
        c = victims[node]
        vs = c.victims
        t = earliest_start_time_of_highest_priority(vs)
        return (-c.num_pdb_violations, -vs[0].priority, -sum(p.priority + PRIORITY_SHIFT for p in vs), -len(vs),
                _MIN_INT64 if t is None else t)

    return max(victims, key=key)


def aggregate_errors(errors: Sequence[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message alone, several in brackets."""
    if len(errors) == 1:
        return errors[0]
    return "[" + ", ".join(errors) + "]"


# --- the evaluator -------------------------------------------------------------------------------

@dataclass
class DryRunResult:
    """The dry run's candidates, the statuses of the nodes it tried that gave none
    (`statuses`: the map, or a function making it on the first read of
    `node_to_status`: only a dry run with no candidate words them, in the FitError),
    its errors and, when it knows it, select_candidate's choice."""

    candidates: list[Candidate]
    statuses: NodeToStatus | Callable[[], NodeToStatus]
    errors: list[str] = field(default_factory=list)
    chosen: Candidate | None = None

    @property
    def node_to_status(self) -> NodeToStatus:
        if not isinstance(self.statuses, NodeToStatus):
            self.statuses = self.statuses()
        return self.statuses


class Evaluator:
    """Runs preemption for one plugin (`plugin_name`) of one Framework (`fwk`)."""

    def __init__(self, plugin_name: str, handle: Any, policy: PreemptionPolicy) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.policy = policy
        self._chosen: tuple[Sequence[Candidate], Candidate] | None = None  # (dry run's list, its choice)

    async def preempt(self, state: CycleState, pod: Pod, m: NodeToStatus,
                      call_extenders: CandidateFilter | None = None) -> tuple[PostFilterResult | None, Status]:
        """(result, status) as upstream's Evaluator.Preempt:
        - (None, Error): a transient failure; nomination unchanged;
        - (None, Unschedulable): not eligible (e.g. waiting for victims to go);
        - (PostFilterResult(""), Unschedulable): preemption cannot help; clears the nomination;
        - (PostFilterResult(node), Success): victims evicted, nominate `node`.
        With `call_extenders` (upstream's callExtenders) the preempting extenders narrow
        the candidate nodes and their victims before one is chosen, the only await; a
        failing (not ignorable) extender makes the attempt an Error. Without, nothing
        suspends."""
        pod, found = self._eligible_candidates(state, pod, m, chosen_only=call_extenders is None)
        if not isinstance(found, list):
            return found
        if call_extenders is not None and not any(c.members for c in found):  # a group's plan stays whole
            try:
                found = await call_extenders(pod, found)
            except Exception as e:  # noqa: BLE001 - the extender's failure is this attempt's Error
                return None, Status(Code.Error, str(e))
        return self._preempt_best(pod, found)

    def _eligible_candidates(self, state: CycleState, pod: Pod, m: NodeToStatus, chosen_only: bool = False
                             ) -> tuple[Pod, list[Candidate] | tuple[PostFilterResult | None, Status]]:
        """The pod as stored, and its candidates, or the outcome when it may not
        preempt or no candidate was found (`chosen_only`: see find_candidates)."""
        pod, refused = self._eligible(pod, m)
        if refused is not None:
            return pod, refused
        return pod, self._candidates_or_outcome(state, pod, m, chosen_only)

    def _eligible(self, pod: Pod, m: NodeToStatus) -> tuple[Pod, tuple[None, Status] | None]:
        """The pod as stored (it carries its latest nominatedNodeName), and the
        refusal when it may not preempt."""
        latest = self.handle.get_object("Pod", pod.namespace, pod.name)
        if isinstance(latest, Pod):
            pod = latest
        nominated_status = m.get(pod.nominated_node_name) if pod.nominated_node_name else None
        ok, msg = self.policy.pod_eligible_to_preempt_others(pod, nominated_status)
        return pod, (None if ok else (None, Status(Code.Unschedulable, msg)))

    def _candidates_or_outcome(self, state: CycleState, pod: Pod, m: NodeToStatus, chosen_only: bool = False
                               ) -> list[Candidate] | tuple[PostFilterResult | None, Status]:
        """The dry run's candidates, or the outcome when there is none."""
        all_nodes = self.handle.snapshot().list()
        if not all_nodes:
            return None, Status(Code.Error, NO_NODES_AVAILABLE)
        grouped = self.policy.group_candidates(state, pod, m) if hasattr(self.policy, "group_candidates") else None
        if grouped is not None:  # a gang member: room for its whole group in one domain
            return grouped
        dry = self.find_candidates(state, all_nodes, pod, m, chosen_only)
        self._chosen = (dry.candidates, dry.chosen) if dry.chosen is not None else None
        if dry.errors and not dry.candidates:
            return None, Status(Code.Error, aggregate_errors(dry.errors))
        if not dry.candidates:
            dry.node_to_status.absent = Status(Code.UnschedulableAndUnresolvable, PREEMPTION_NOT_HELPFUL)
            fit_error = FitError(pod, len(all_nodes), Diagnosis(node_to_status=dry.node_to_status))
            return PostFilterResult(""), Status(Code.Unschedulable, fit_error.message())
        return dry.candidates

    def _preempt_best(self, pod: Pod, candidates: list[Candidate]) -> tuple[PostFilterResult | None, Status]:
        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status(Code.Unschedulable, NO_CANDIDATE_NODE)
        if self.handle.features.enabled(ASYNC_PREEMPTION):
            self.prepare_candidate_async(best, pod)
        else:
            st = self.prepare_candidate(best, pod)
            if not st.is_success():
                return None, st
        if best.members:
            self.handle.nominate_pods(list(best.members))
        chosen = getattr(self.policy, "candidate_chosen", None)  # DefaultPreemption marks victim PodGroups
        if chosen is not None:
            chosen(best, pod)
        # Said even on success (upstream since PR #140180), so the pod's
        # FailedScheduling message tells where it is going and at what cost.
        return PostFilterResult(best.name), Status(
            Code.Success, f"found a potential placement for pod on node {best.name}, preempting {len(best.victims)} victims")

    def find_candidates(self, state: CycleState, all_nodes: Sequence[NodeInfo], pod: Pod, m: NodeToStatus,
                        chosen_only: bool = False) -> DryRunResult:
        """Dry-run preemption on the nodes that failed with Unschedulable (an
        UnschedulableAndUnresolvable node cannot be helped by removing pods).
        `chosen_only`: only select_candidate reads the list (no extender narrows
        it), so a dry run that knows its choice may give that one candidate alone."""
        resolvable = getattr(self.policy, "resolvable_by_preemption", None)
        potential = potential_nodes(all_nodes, m, resolvable)
        if not potential:
            return DryRunResult([], NodeToStatus())
        pdbs = self.list_pdbs()
        offset, num = self.policy.get_offset_and_num_candidates(len(potential))
        victimless = getattr(self.policy, "victimless", None)
        nowhere = victimless(pod, potential) if victimless is not None else None
        if nowhere is not None:  # every node answers the same: no simulation, no per-node loop
            return DryRunResult([], OneStatusNodes(potential, offset, nowhere))
        prepare = getattr(self.policy, "columnar_victims", None)
        fast = prepare(state, pod, m, potential, pdbs) if prepare is not None else None
        dry = fast.whole_dry_run(offset, num, chosen_only) if hasattr(fast, "whole_dry_run") else None
        return dry if dry is not None else self.dry_run_preemption(state, pod, potential, pdbs, offset, num, fast)

    def list_pdbs(self) -> list[PodDisruptionBudget]:
        return [o for o in self.handle.list_objects("PodDisruptionBudget") if isinstance(o, PodDisruptionBudget)]

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: Pod,
        potential_nodes: Sequence[NodeInfo],
        pdbs: Sequence[PodDisruptionBudget],
        offset: int,
        num_candidates: int,
        fast: FastVictims | None = None,
    ) -> DryRunResult:
        """Select victims on each node (starting at `offset`, wrapping around) on
        copies of the state and the node, until `num_candidates` candidates are
        found with at least one that violates no PDB. Non-violating candidates come
        first in the result. `fast`, where it answers for a node, replaces the
        simulation there."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses = NodeToStatus()
        errors: list[str] = []
        n = len(potential_nodes)
        for i in range(n):
            ni = potential_nodes[(offset + i) % n]
            got = fast(ni, pdbs) if fast is not None else None
            if isinstance(got, Status):
                pods, num_pdb, status = [], 0, got
            elif got is not None:
                pods, num_pdb = got
                status = _SUCCESS
            else:
                pods, num_pdb, status = self.policy.select_victims_on_node(state.clone(), pod, ni.clone(), pdbs)
            if status.is_success() and pods:
                c = Candidate(ni.name, pods, num_pdb)
                bucket = non_violating if num_pdb == 0 else violating
                if len(bucket) < num_candidates:
                    bucket.append(c)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status.is_success():
                status = Status(Code.Error, f'expected at least one victim pod on node "{ni.name}"')
            if status.code == Code.Error:
                errors.append(status.message())
            statuses.set(ni.name, status)
        return DryRunResult(non_violating + violating, statuses, errors)

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        if self._chosen is not None and self._chosen[0] is candidates:  # the dry run's own list, unnarrowed
            return self._chosen[1]
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        by_node = {c.name: c for c in candidates}
        node = pick_one_node_for_preemption(by_node, self.policy.ordered_score_funcs(by_node))
        return by_node.get(node, candidates[0])

    def prepare_candidate(self, c: Candidate, pod: Pod) -> Status:
        """Evict the victims (a victim waiting at Permit is rejected instead), then
        clear the nominations of lower-priority pods on the chosen node, which may
        no longer fit there."""
        message = disruption_target(pod)["message"]
        for victim in c.victims:
            if victim.is_deleting:
                continue  # graceful deletion already under way
            waiting = self.handle.get_waiting_pod(victim.uid)
            if waiting is not None:
                waiting.reject(self.plugin_name, "preempted")
                continue
            try:
                self.handle.evict_pod(victim, pod, message)
            except Exception as e:  # noqa: BLE001 - a failed eviction is the attempt's Error
                return Status(Code.Error, str(e))
        lower = lower_priority_nominated_pods(self.handle, pod, c.name, *{n for _, n in c.members} - {c.name})
        if lower:
            self.handle.clear_nominated_node_names(lower)
        return Status()

    def prepare_candidate_async(self, c: Candidate, pod: Pod) -> None:
        """upstream's prepareCandidateAsync, the part inside the cycle: victims
        already terminating need no call; if any others remain, the preemptor is
        marked as preempting (DefaultPreemption's PreEnqueue holds it back) and the
        evictions and the clearing of lower-priority nominations on the node go to
        the owner's preemption actor, both by the one request `start_preemption`
        (the owner marks it before the preemptor can be requeued)."""
        victims = tuple(v for v in c.victims if not v.is_deleting)
        if not victims:
            return
        lower = tuple(lower_priority_nominated_pods(self.handle, pod, c.name, *{n for _, n in c.members} - {c.name}))
        held = getattr(self.policy, "preempting_group", None)  # DefaultPreemption: the PodGroup, if it preempts
        self.handle.start_preemption(PreemptionJob(pod, c.name, victims, lower, self.plugin_name,
                                                   *(held(pod) if held is not None else ())))

    def is_pod_running_preemption(self, uid: str) -> bool:
        def lookup(namespace: str, name: str) -> Pod | None:
            found = self.handle.get_object("Pod", namespace, name)
            return found if isinstance(found, Pod) else None

        return self.handle.preemptions.is_running(uid, lookup)


def lower_priority_nominated_pods(handle: Any, pod: Pod, *node_names: str) -> list[Pod]:
    return [pi.pod for n in node_names for pi in handle.nominated_pods_for_node(n) if pi.pod.priority < pod.priority]
