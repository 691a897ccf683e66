"""The whole-group algorithm of a scheduling.k8s.io gang (1.36's PodGroup scheduling
cycle, upstream's podGroupSchedulingDefaultAlgorithm): the group's queued members
tried one after another in ONE view of the cluster, each placement assumed into that
view so the next member sees it, with PlacementFeasible checked before the first
member and after each one (the early stop; an Error verdict ends the cycle as an
error), and every placement undone when the quorum is not reached. A feasible
verdict with no member placed in the cycle is Unschedulable ("no pods were
schedulable"), as upstream's RunRootSchedulingAlgorithm has it.

Pure: what trying one member means (Filter, Score, assume, Reserve) is the owner's
MemberPlacer (the scheduler actor's, actors/group_cycle.py; a test's). The topology
layer calls `place_group` once per domain with `node_names` set and `keep=False`,
and once more, with `keep=True`, in the domain it picks.

Members of one signature that failed with nothing placed since are rejected at once
with the first one's verdict: nothing in the view changed between the two, so Filter
would say the same (KEP-4671's "subsequent pods of the same sub-group"). Members are
signed only from the first failure on: a group that fits signs none."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Hashable, Protocol, Sequence

from framework.api.objects import Pod
from framework.types import Code, Status
from framework.workload.policy import GroupPolicy, placement_feasible

# The CycleState key under which a member placed by the group cycle carries the
# group's outcome to Permit (upstream's SetPodGroupSchedulingCycle).
GROUP_CYCLE_KEY = "ksched/PodGroupCycle"
# The uids of a group cycle's members, those it placed first, then the others in the
# cycle's order: the group step's plan takes the members it places in this order
# (upstream's PodGroupPostFilter runs the group algorithm over the cycle's queued pods
# in the cycle's order, so the members that fit are in its plan).
GROUP_ORDER_KEY = "ksched/PodGroupMemberOrder"
# upstream's errPodGroupUnschedulable and its error wrapping
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"
# upstream's RunRootSchedulingAlgorithm: a feasible verdict with no member placed this cycle
NO_POD_SCHEDULABLE = "no pods were schedulable"
# upstream 1.36's podGroupSchedulingDefaultAlgorithm: the quorum is reached only with
# members that preempted for themselves (their own PostFilter nominated a node)
WAITING_FOR_PREEMPTION = "pod group is waiting for preemption to complete"


def member_failed_message(message: str) -> str:
    return f"failed to schedule other pod from a pod group: {message}"


@dataclass(frozen=True, slots=True)
class GroupCycleState:
    """What Permit reads of the group cycle that placed a member: the uids placed
    together in it (the quorum is theirs plus the members already bound) and the
    policy of the PodGroup the cycle read (None: Permit reads the PodGroup itself).
    The scheduler runs its members' Permit in the same turn as the placement, so the
    PodGroup is still that one; the group's policy is read once, not once a member."""

    placed: frozenset[str]
    policy: GroupPolicy | None = None


@dataclass(frozen=True, slots=True)
class MemberTry:
    """One member's try: the node it was assumed on, or why it was not. A member whose
    own PostFilter nominated a node (upstream's requiresPreemption, WorkloadAwarePreemption
    off) carries both: it is assumed on `node`, the node it preempted on, so the members
    after it see it there, and `status` is its FitError's."""

    node: str = ""
    status: Status | None = None
    preempting: bool = False

    @property
    def placed(self) -> bool:
        return bool(self.node) and not self.preempting


class MemberPlacer(Protocol):
    """The owner's side of the cycle. `try_member` runs the pod's algorithm in the
    shared view (restricted to `node_names` when given) and, when a node is found,
    assumes the pod there (and Reserves it) before returning; `undo` takes one
    assumed member back out. `signature` is the pod's placement signature (None: it
    signs nothing)."""

    def try_member(self, pod: Pod, node_names: Collection[str] | None) -> MemberTry: ...

    def undo(self, pod: Pod, node: str) -> None: ...

    def signature(self, pod: Pod) -> Hashable | None: ...


@dataclass(slots=True)
class GroupPlacement:
    """The cycle's result. `placed`: uid -> node, in try order (kept assumed only when
    the group is feasible and the caller asked to keep); `unplaced`: uid -> why, for
    every member not placed (members never tried after an early stop carry the
    group's status); `status`: Success, Unschedulable (the group's reason) or Error.
    `preempting`: uid -> node for the members that preempted for themselves (also in
    `unplaced`, with their FitError's status); `waiting_on_preemption`: the quorum was
    reached counting them (upstream's waitingOnPreemption), so the group is
    Unschedulable until their victims are gone."""

    placed: dict[str, str] = field(default_factory=dict)
    unplaced: dict[str, Status] = field(default_factory=dict)
    status: Status = field(default_factory=Status)
    preempting: dict[str, str] = field(default_factory=dict)
    waiting_on_preemption: bool = False
    tried: int = 0
    order: list[str] = field(default_factory=list)  # uids tried, in order
    kept: bool = False

    @property
    def feasible(self) -> bool:
        return self.status.is_success()


def skips_member(current: Pod | None, assumed: bool) -> bool:
    """upstream's skipPodGroupPodSchedule for one popped member: gone from the view,
    being deleted, or already assumed (bound or placed meanwhile) is not scheduled."""
    return current is None or current.is_deleting or assumed


def member_order(pods: Sequence[Pod], initial_attempts: Sequence[int | None]) -> list[int]:
    """upstream's order of a group's members: higher priority first, then the earlier
    initial attempt (unset first, as Go's zero time), then the given order."""
    return sorted(range(len(pods)), key=lambda i: (-pods[i].priority, initial_attempts[i] or 0, i))


class Feasibility(Protocol):
    """PlacementFeasible's signature (policy.placement_feasible; a case's scripted one)."""

    def __call__(self, policy: GroupPolicy, *, scheduled: int, remaining: int) -> Status | None: ...


def place_group(policy: GroupPolicy, pods: Sequence[Pod], placer: MemberPlacer, *, scheduled: int = 0,
                node_names: Collection[str] | None = None, keep: bool = True,
                feasible: Feasibility = placement_feasible) -> GroupPlacement:
    """Try `pods` (in the order given) as one group. `scheduled`: members already
    bound or assumed outside this cycle (they count toward the quorum). With
    `keep` and a feasible group the placements stay assumed for the caller to bind;
    otherwise every placement is undone (newest first) before returning."""
    result = GroupPlacement()
    remaining = len(pods)
    verdict = feasible(policy, scheduled=scheduled, remaining=remaining)
    failed: dict[Hashable, tuple[Status, int]] = {}  # signature -> (its verdict, placements then)
    placed_pods: list[tuple[Pod, str]] = []
    error: Status | None = None
    for pod in pods:
        if verdict is not None and verdict.code in (Code.Unschedulable, Code.Error):
            break
        # Signed only once some member failed: until then there is no verdict to share
        # (a group that fits, the usual one, signs nothing).
        signed = bool(failed)
        sig = placer.signature(pod) if signed else None
        known = failed.get(sig) if sig is not None else None
        if known is not None and known[1] == len(placed_pods):
            outcome = MemberTry(status=known[0])
        else:
            outcome = placer.try_member(pod, node_names)
        result.tried += 1
        result.order.append(pod.uid)
        if outcome.placed or outcome.preempting:
            if outcome.preempting:  # assumed on the node its own preemption chose
                result.preempting[pod.uid] = outcome.node
                result.unplaced[pod.uid] = outcome.status or Status(Code.Unschedulable, POD_GROUP_UNSCHEDULABLE)
            else:
                result.placed[pod.uid] = outcome.node
            placed_pods.append((pod, outcome.node))
            scheduled += 1
        else:
            status = outcome.status or Status(Code.Error, "no node and no reason")
            result.unplaced[pod.uid] = status
            if not status.is_rejected():
                error = Status(Code.Error, member_failed_message(status.message()))
                break
            if not signed:
                sig = placer.signature(pod)
            if sig is not None:
                failed[sig] = (status, len(placed_pods))
        remaining -= 1
        verdict = feasible(policy, scheduled=scheduled, remaining=remaining)
    if error is not None:
        result.status = error
    elif verdict is not None and verdict.code == Code.Error:
        result.status = Status(Code.Error, f"failed to evaluate placement feasibility: {verdict.message()}")
    elif verdict is None and not placed_pods and pods:
        result.status = Status(Code.Unschedulable, NO_POD_SCHEDULABLE)  # the quorum alone is no success
    elif verdict is None and result.preempting:
        result.status = Status(Code.Unschedulable, WAITING_FOR_PREEMPTION)
        result.waiting_on_preemption = True
    elif verdict is None:
        result.status = Status()
    else:  # Wait at the end, or the early stop: the group's reason is the verdict's
        result.status = Status(Code.Unschedulable, verdict.message() or POD_GROUP_UNSCHEDULABLE)
    for pod in pods:
        if pod.uid not in result.placed and pod.uid not in result.unplaced:
            result.unplaced[pod.uid] = result.status
    result.kept = keep and result.feasible
    if not result.kept:
        for pod, node in reversed(placed_pods):
            placer.undo(pod, node)
    return result


__all__ = ["Feasibility", "GROUP_CYCLE_KEY", "GROUP_ORDER_KEY", "GroupCycleState", "GroupPlacement", "MemberPlacer", "MemberTry",
           "NO_POD_SCHEDULABLE", "POD_GROUP_UNSCHEDULABLE", "WAITING_FOR_PREEMPTION", "member_failed_message",
           "member_order", "place_group", "skips_member"]
