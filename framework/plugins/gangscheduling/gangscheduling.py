"""GangScheduling: all-or-nothing placement of scheduling.k8s.io PodGroups with a gang
policy (upstream pkg/scheduler/framework/plugins/gangscheduling, the pod-by-pod form
1.36 keeps for when no group cycle runs).

A pod names its PodGroup in spec.schedulingGroup.podGroupName (same namespace).
PreEnqueue holds it until the PodGroup exists and minCount pods name it. Reserve
counts it as assumed; Permit holds it until the group's assumed and bound members
reach minCount, then allows every waiting member; Unreserve forgets it. A member
the whole-group cycle placed together with its quorum (framework/workload/
group_cycle.py, its GroupCycleState in the CycleState) passes Permit at once. Pods of a
basic group, and pods in no group, pass every point.

On the pod-by-pod path (the whole-group cycle bypassed: scheduler extenders
configured), PreFilter keeps a member inside its group's topology domain
(topology_pin.py); in the group cycle the placement layer does that and PreFilter
skips.

The group deadline is upstream's: one per group, 300 s from its first waiter,
renewed once it has passed (workloadmanager's SchedulingTimeout).

A group its early stop rejected backs off as one, as the group cycle does: for the
pod backoff's span (podInitialBackoffSeconds doubling up to podMaxBackoffSeconds
with each rejection in a row, as the queue backs a pod off), a member reaching Permit waits without activating its siblings. Without
it each member freed by the rejection fits again, activates the others and is
rejected again at once: a livelock."""
from __future__ import annotations

from typing import Any, Hashable

from framework.api.groups import POD_GROUP_KEY
from framework.api.objects import Pod
from framework.api.workload_api import SchedulingPodGroup
from framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code, CycleState, Handle,
    SKIP, NodeToStatus, PostFilterResult, PreFilterResult, QueueingHint, SignPurpose, Status)
from framework.node_info import NodeInfo
from framework.plugins.gangscheduling.topology_pin import DomainPin
from framework.workload.group_cycle import GROUP_CYCLE_KEY, GroupCycleState
from framework.workload.policy import GroupPolicy, group_policy_of, placement_feasible

PLUGIN_NAME = "GangScheduling"
SCHEDULING_TIMEOUT_SECONDS = 300.0
QUORUM_NOT_PRESENT = "waiting for minCount pods from a gang to appear in scheduling queue"
QUORUM_NOT_SCHEDULED = "waiting for minCount pods from a gang to be scheduled"


def pod_group_missing(name: str) -> str:
    # Upstream's words, "pods's" included.
    return f'waiting for pods\'s pod group "{name}" to appear in scheduling queue'


class GangScheduling:
    name = PLUGIN_NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self.assumed: dict[tuple[str, str], set[str]] = {}  # (namespace, group) -> uids reserved
        self.deadlines: dict[tuple[str, str], float] = {}  # (namespace, group) -> its Permit deadline
        self.allowed: set[str] = set()  # uids let through at Permit, until unreserved or bound
        self.rejections: dict[tuple[str, str], int] = {}  # early stops in a row, per group
        self.backoff_until: dict[tuple[str, str], float] = {}  # no sibling activation before this
        self.nodes: dict[str, str] = {}  # uid -> node of a reserved member (it pins the topology domain)
        self.pin = DomainPin()

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "GangScheduling":
        if args:
            raise ValueError(f"GangScheduling takes no args, got {sorted(args)}")
        return cls(handle)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A pod of the group added may complete the quorum; a PodGroup added may
        # unblock its waiting pods. Group membership and the policy are immutable,
        # so neither kind's updates matter (upstream registers the same two). Hint keys:
        # both hints answer Queue only for the event's own group, so the queue offers
        # an added pod or PodGroup to that group's pods alone, not to every member waiting.
        return [
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.Add), self.is_schedulable_after_pod_added,
                                 added_pod_group_keys, group_keys),
            ClusterEventWithHint(ClusterEvent(POD_GROUP_KEY, ActionType.Add), self.is_schedulable_after_pod_group_added,
                                 added_group_keys, group_keys),
        ]

    # upstream's hint names, so its hint tables run against them (conformance/hint_cases.py)
    def is_schedulable_after_pod_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        return same_group_pod_added(pod, old, new)

    def is_schedulable_after_pod_group_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        return own_pod_group_added(pod, old, new)

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """() where nothing unsigned is read: it has no Filter or Score (placement; its
        PreFilter narrows only off the group cycle), and a pod in no group passes every point. A group member's PostFilter reads
        its group's waiting and listed pods, which no signature holds, so members get
        no failure reuse."""
        if purpose is SignPurpose.FAILURE and pod.scheduling_group:
            return None
        if pod.scheduling_group and not getattr(self.handle, "group_cycle", True):
            return None  # pod by pod, PreFilter narrows a member to its group's domain
        return ()

    def policy_of(self, pod: Pod, group: str | None = None) -> GroupPolicy | None:
        """The policy of the pod's group (`group`: its name, when the caller has read it)."""
        pg = self.handle.get_object(POD_GROUP_KEY, pod.namespace, pod.scheduling_group if group is None else group)
        return group_policy_of(pg) if isinstance(pg, SchedulingPodGroup) else None

    def members(self, namespace: str, group: str) -> list[Pod]:
        """Every stored pod naming the group (bound, assumed or pending)."""
        return self.handle.scheduling_group_pods(namespace, group)

    # --- PreEnqueue -----------------------------------------------------------------------

    def pre_enqueue(self, pod: Pod) -> Status | None:
        group = pod.scheduling_group
        if not group:
            return None
        policy = self.policy_of(pod, group)
        if policy is None:
            return Status(Code.UnschedulableAndUnresolvable, pod_group_missing(group))
        if not policy.gang:
            return None
        if len(self.members(pod.namespace, group)) < policy.quorum:
            return Status(Code.UnschedulableAndUnresolvable, QUORUM_NOT_PRESENT)
        return None

    # --- PreFilter: the topology domain on the pod-by-pod path --------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
                   ) -> tuple[PreFilterResult | None, Status | None]:
        if getattr(self.handle, "group_cycle", True) or not pod.scheduling_group:
            return None, SKIP
        policy = self.policy_of(pod)
        if policy is None or not policy.gang or not (policy.required_topology_key or policy.preferred_topology_key):
            return None, SKIP
        key = (pod.namespace, pod.scheduling_group)
        members = self.members(pod.namespace, pod.scheduling_group)
        pinned = [(p.key, p.node_name) for p in members if p.node_name]
        pinned += [(uid, self.nodes[uid]) for uid in sorted(self.assumed.get(key, set()))
                   if uid in self.nodes and uid != pod.uid and self._holds(uid)]
        unscheduled = [p for p in members if not p.node_name]
        return self.pin.nodes_for(self.handle, policy, pinned, unscheduled)

    def pre_filter_extensions(self) -> None:
        return None

    # --- PostFilter: the early stop ---------------------------------------------------------

    def post_filter(self, state: CycleState, pod: Pod, filtered: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        """A member no node takes (and preemption, run before, did not help): when the
        members holding a place plus the members not yet tried cannot make minCount,
        the group cannot be placed now, so its waiting members are rejected at once
        rather than holding their nodes until the group deadline. This is the
        PlacementFeasible early stop of 1.36's group cycle, applied pod by pod;
        upstream's pod-by-pod plugin has no PostFilter and holds them 300 s."""
        group = pod.scheduling_group
        policy = self.policy_of(pod) if group else None
        if policy is None or not policy.gang:
            return None, Status(Code.Unschedulable)
        key = (pod.namespace, group)
        holding = {uid for uid in self.assumed.get(key, set()) if self._holds(uid)}
        members = self.members(pod.namespace, group)
        holding |= self._bound(members)
        untried = [p for p in members if not p.node_name and p.uid not in holding and p.uid != pod.uid]
        verdict = placement_feasible(policy, scheduled=len(holding), remaining=len(untried))
        if verdict is None or verdict.code != Code.Unschedulable:
            return None, Status(Code.Unschedulable)
        message = f"pod group {group} rejected: {verdict.message()}"
        for uid in sorted(self.assumed.get(key, set())):
            wp = self.handle.get_waiting_pod(uid)
            if wp is not None and wp.decided is None:
                wp.reject(self.name, message)
        self.deadlines.pop(key, None)
        self._back_off(key)
        self.pin.rejected(key)
        return None, Status(Code.Unschedulable, message)

    def _back_off(self, key: tuple[str, str]) -> None:
        n = self.rejections.get(key, 0) + 1
        self.rejections[key] = n
        initial, most = self.handle.pod_backoff_seconds
        span = min(initial * 2 ** min(n - 1, 16), most)
        self.backoff_until[key] = self.handle.now() + span

    # --- Reserve / Unreserve ------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        group = pod.scheduling_group
        if group:
            key = (pod.namespace, group)
            uids = self.assumed.get(key)
            if uids is None:
                uids = self.assumed[key] = set()
            uids.add(pod.uid)
            self.nodes[pod.uid] = node_name
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.allowed.discard(pod.uid)
        self.nodes.pop(pod.uid, None)
        key = (pod.namespace, pod.scheduling_group)
        uids = self.assumed.get(key)
        if uids is not None:
            uids.discard(pod.uid)
            if not uids:
                del self.assumed[key]

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Bound, the member counts by its nodeName from now on: forget its reservation."""
        self.unreserve(state, pod, node_name)

    # --- Permit ---------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        group = pod.scheduling_group
        if not group:
            return None, 0
        together = state.get(GROUP_CYCLE_KEY)
        # the group cycle's own read of the PodGroup, this turn's (GroupCycleState)
        policy = together.policy if isinstance(together, GroupCycleState) and together.policy is not None \
            else self.policy_of(pod, group)
        if policy is None:
            return Status(Code.Error, f'failed to get pod group {pod.namespace}/{group}'), 0
        if not policy.gang:
            return None, 0
        key = (pod.namespace, group)
        members: list[Pod] | None = None
        if isinstance(together, GroupCycleState):
            # Placed by the whole-group cycle: its members placed together plus the
            # bound ones make the quorum, or the cycle would not have kept them (the
            # placed alone, the usual case, need no look at the bound ones).
            if (len(together.placed) >= policy.quorum
                    or len(together.placed | self._bound(members := self.members(pod.namespace, group))) >= policy.quorum):
                self.deadlines.pop(key, None)
                self.allowed.add(pod.uid)
                return None, 0
        if members is None:
            members = self.members(pod.namespace, group)
        assumed = self.assumed.get(key, set())
        ready = {uid for uid in assumed if self._holds(uid)} | {pod.uid} | self._bound(members)
        if len(ready) < policy.quorum:
            unscheduled = [p for p in members if not p.node_name and p.uid not in assumed and p.uid != pod.uid]
            if unscheduled and self.handle.now() >= self.backoff_until.get(key, 0.0):
                self.handle.activate_pods(unscheduled)
            return Status(Code.Wait, QUORUM_NOT_SCHEDULED), self._timeout(key)
        self.deadlines.pop(key, None)
        self.rejections.pop(key, None)
        self.backoff_until.pop(key, None)
        self.pin.placed(key)
        self.allowed.add(pod.uid)
        for uid in sorted(assumed):
            wp = self.handle.get_waiting_pod(uid)
            if wp is not None and wp.decided is None:
                wp.allow(self.name)
                self.allowed.add(uid)
        return None, 0

    def _bound(self, members: list[Pod]) -> set[str]:
        """The bound members that count toward the quorum: not those a preemption chose
        as victims (a gang evicted whole goes in more than one write; its pending member
        must not complete the quorum with a member on its way out)."""
        return {p.uid for p in members if p.node_name and not self.handle.being_evicted(p.uid)}

    def _holds(self, uid: str) -> bool:
        """Whether a reserved member still holds its place: waiting undecided, or let
        through and being bound. One rejected (its timeout, a sibling's failure) but
        not yet unreserved does not count, so no quorum is made of members on their
        way out."""
        wp = self.handle.get_waiting_pod(uid)
        if wp is not None:
            return wp.decided is None or wp.decided.is_success()
        return uid in self.allowed

    def _timeout(self, key: tuple[str, str]) -> float:
        """Seconds left of the group's deadline, made on first use and renewed once past."""
        now = self.handle.now()
        deadline = self.deadlines.get(key)
        if deadline is None or deadline <= now:
            deadline = now + SCHEDULING_TIMEOUT_SECONDS
            self.deadlines[key] = deadline
        return deadline - now


def same_group_pod_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if (isinstance(new, Pod) and pod.scheduling_group and new.namespace == pod.namespace
            and new.scheduling_group == pod.scheduling_group):
        return QueueingHint.Queue
    return QueueingHint.QueueSkip


def own_pod_group_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if isinstance(new, SchedulingPodGroup) and new.namespace == pod.namespace and new.name == pod.scheduling_group:
        return QueueingHint.Queue
    return QueueingHint.QueueSkip


# Hint keys (ClusterEventWithHint.event_keys / pod_keys): the two hints above answer
# Queue only when the event is about the pod's own group, named (namespace, group).

def group_keys(pod: Pod) -> frozenset[Hashable]:
    group = pod.scheduling_group
    return frozenset({(pod.namespace, group)}) if group else frozenset()


def added_pod_group_keys(old: Any, new: Any) -> frozenset[Hashable]:
    return group_keys(new) if isinstance(new, Pod) else frozenset()


def added_group_keys(old: Any, new: Any) -> frozenset[Hashable]:
    return frozenset({(new.namespace, new.name)}) if isinstance(new, SchedulingPodGroup) else frozenset()


PLUGINS = [GangScheduling]
