"""Coscheduling: gang scheduling of PodGroups (kubernetes-sigs/scheduler-plugins
pkg/coscheduling), all-or-nothing.

A pod joins the group named by its label scheduling.x-k8s.io/pod-group in its own
namespace. Members are placed one by one by the normal plugins and held at Permit
until minMember of them are reserved or bound; then every waiting member is
allowed at once. A member that cannot be placed, or that times out, releases the
whole waiting group.

Upstream's behaviour, message for message, plus (placement.py)
a hold step in PreFilter: a group whose remaining members cannot be placed node
by node is rejected before it reserves anything, and a group that only fits once
another held group is done waits for it without holding reservations.

And one liveness rule upstream lacks (scheduler-plugins #429: with
podGroupBackoffSeconds 0 a group that cannot reach its quorum is retried forever,
because the first member to wait at Permit activates its siblings straight out of
the unschedulable pool and backoff). When a group is rejected, the plugin keeps a
fingerprint of the cluster as the group sees it (every node's allocatable and
what pods of other groups request on it, the group's own pods, its PodGroup's
spec). The first waiter activates its siblings only if that fingerprint changed
since: a retry on an unchanged cluster would fail the same way. Siblings still
come back by the queue's own means (the cluster events Coscheduling registers,
backoff, the unschedulable pool's periodic flush), as any unschedulable pod does.
"""
from __future__ import annotations

from typing import Any, Callable

from framework.api.objects import Pod, PodGroup
from framework.api.resources import Resource
from framework.cache import NodeInfo
from framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code, CycleState, Handle,
    NodeToStatus, PostFilterResult, PreFilterResult, QueuedPodInfo, QueueingHint, Status)
from framework.plugins.coscheduling.core import (PLUGIN_NAME, CoschedulingArgs, PodGroupManager, group_full_name,
    namespaced_name, wait_time_seconds)
from framework.plugins.coscheduling.placement import GroupHolds, check_placement

POD_GROUP_NOT_FOUND = "PodGroup not found"
CANNOT_FIND_POD_GROUP = "can not find pod group"
REJECTED_IN_POST_FILTER = "optimistic rejection in PostFilter"
REJECTED_IN_UNRESERVE = "rejection in Unreserve"


class Coscheduling:
    name = PLUGIN_NAME

    def __init__(self, handle: Handle, args: CoschedulingArgs) -> None:
        self.handle = handle
        self.args = args
        self.pg_mgr = PodGroupManager(handle, args)
        self.ledger = GroupHolds()
        self.rejected_on: dict[str, tuple] = {}  # group -> the cluster it saw when last rejected

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "Coscheduling":
        return cls(handle, CoschedulingArgs.parse(args))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Upstream: Pod/Add and PodGroup Add|Update, no hints. We add what frees
        # room for a waiting gang (a pod leaving a node, a node added or grown), so
        # a group held back for lack of room is retried when room appears rather
        # than at the unschedulable pool's periodic flush.
        return [
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.Add)),
            ClusterEventWithHint(ClusterEvent("PodGroup", ActionType.Add | ActionType.Update), _pod_group_changed),
            ClusterEventWithHint(ClusterEvent("AssignedPod", ActionType.Delete), _freed_by_another_group),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.Add | ActionType.UpdateNodeAllocatable)),
        ]

    # --- QueueSort ------------------------------------------------------------------------

    @property
    def sort_generation(self) -> int:
        """Changes whenever Less may order queued pods differently than before (a
        group failed or reached its quorum); a heap of queued pods must then be
        re-heapified."""
        return self.pg_mgr.sort_generation

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Priority (higher first), then the group's time (last failure, else its
        creation; the pod's first activeQ time outside a group), then "ns/name"."""
        if a.pod.priority != b.pod.priority:
            return a.pod.priority > b.pod.priority
        ta = self.pg_mgr.creation_timestamp(a.pod, _initial(a))
        tb = self.pg_mgr.creation_timestamp(b.pod, _initial(b))
        if ta == tb:
            return namespaced_name(a.pod) < namespaced_name(b.pod)
        return ta < tb

    # --- PreFilter ------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        """Every failure is UnschedulableAndUnresolvable, so preemption is not tried."""
        err = self.pg_mgr.pre_filter(pod)
        if err is None:
            err = self._hold_group(pod)
        if err is not None:
            return None, Status(Code.UnschedulableAndUnresolvable, err)
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def _hold_group(self, pod: Pod) -> str | None:
        """The gang hold step (coscheduling_gang.py); None to pass."""
        group, pg = self.pg_mgr.get_pod_group(pod)
        if pg is None:
            return None
        now = self.pg_mgr.now()
        self._expire_holds(now)
        if self.ledger.is_held(group, now):
            return None
        assigned = {p.key for p in self.pg_mgr.assigned_members(group)}
        needed = pg.min_member - len(assigned)
        if needed <= 0:
            return None
        on_nodes = {p.key for p in self.pg_mgr.placed_members(group)}
        candidates = [
            p for p in self.pg_mgr.group_pods(pod.namespace, pg.name)
            if p.key not in on_nodes and not p.node_name and not p.scheduling_gates
        ]
        if len(candidates) < needed:
            return None
        nodes = self.handle.snapshot().node_info_list
        requests = [p.resource for p in candidates]
        # What preemption could free counts as room: a "no" must hold even after
        # DefaultPreemption evicted every pod of lower priority.
        removable = _preemptable_by(pod)
        alone = check_placement(requests, needed, nodes, removable=removable)
        if alone.fits is False:
            return _fragmentation_message(group, pg, needed, len(nodes), alone.placeable, alone.summed_fit)
        others = self.ledger.others(group, now, pod.priority)
        if others:
            reserved = []
            for g, adm in others:
                reserved.extend(adm.requests[:self._outstanding(g, adm.min_member)])
            together = check_placement(requests, needed, nodes, reserved, removable=removable)
            if together.fits is not True:
                names = sorted(g for g, _ in others)
                self.ledger.block(group, names)
                return (f"podGroup {group} waits for podGroup {', '.join(names)} to be placed first: "
                        f"{needed} more members do not fit beside the members it is placing")
        self.ledger.hold(group, now, wait_time_seconds(pg, self.args), pg.min_member, requests, pod.priority)
        return None

    def _outstanding(self, group: str, min_member: int) -> int:
        """Members a held group still has to place: short of its quorum, and
        no more than it has pending (a deleted job holds nothing)."""
        ns, _, label = group.partition("/")
        placed = {p.key for p in self.pg_mgr.placed_members(group)}
        pending = sum(1 for p in self.pg_mgr.group_pods(ns, label) if not p.node_name and p.key not in placed)
        return max(0, min(min_member - len(self.pg_mgr.assigned_members(group)), pending))

    def _expire_holds(self, now: float) -> None:
        for g in self.ledger.expired(now):
            self._release(g)

    def _release(self, group: str) -> None:
        """Drop a group's hold and activate the groups it held back."""
        for blocked in sorted(self.ledger.release(group)):
            ns, _, label = blocked.partition("/")
            pending = [p for p in self.pg_mgr.group_pods(ns, label) if not p.node_name]
            if pending:
                self.handle.activate_pods(pending)

    # --- PostFilter -----------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: Pod, filtered: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        group, pg = self.pg_mgr.get_pod_group(pod)
        if pg is None:
            return PostFilterResult(), Status(Code.Unschedulable, CANNOT_FIND_POD_GROUP)
        assigned = len(self.pg_mgr.assigned_members(group, exclude=pod))
        if not self.pg_mgr.should_reject_group(pg, assigned):
            return PostFilterResult(), Status(Code.Unschedulable)
        self.reject_group(group, REJECTED_IN_POST_FILTER, pg)
        pods = self.pg_mgr.group_pods(pod.namespace, pg.name)
        self.pg_mgr.backoff(group, len(pods), pg)
        return PostFilterResult(), Status(
            Code.Unschedulable, f"PodGroup {group} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter"
        )

    def reject_group(self, group: str, message: str, pg: PodGroup | None = None) -> None:
        """Reject every waiting member and clear the group's hold, its
        minResources pass and its queue position, in one step. The quorum count is
        derived (assigned_members skips rejected waiters), so no stale count
        survives this call whatever order the binding cycles then run in."""
        for wp in self.pg_mgr.waiting_members(group):
            wp.reject(self.name, message)
            self.pg_mgr.forget_allowed(wp.pod)
        if pg is not None:
            self.rejected_on[group] = self._cluster_seen_by(group, pg)
        self.pg_mgr.permitted_pg.delete(group)
        self.pg_mgr.mark_failed(group, pg)
        self._release(group)

    # --- Reserve / Unreserve ------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        group, pg = self.pg_mgr.get_pod_group(pod)
        self.pg_mgr.forget_allowed(pod)
        if pg is None:
            return
        self.reject_group(group, REJECTED_IN_UNRESERVE, pg)

    # --- Permit ---------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        group, pg = self.pg_mgr.get_pod_group(pod)
        if not group:
            return None, 0
        if pg is None:
            return Status(Code.Unschedulable, POD_GROUP_NOT_FOUND), 0
        self.pg_mgr.forget_allowed(pod)
        assigned = self.pg_mgr.assigned_members(group, exclude=pod)
        if len(assigned) + 1 >= pg.min_member:
            self.rejected_on.pop(group, None)
            self.pg_mgr.clear_failed(group)
            self.pg_mgr.mark_allowed(pod)
            for wp in self.pg_mgr.waiting_members(group):
                wp.allow(self.name)
                decided = wp.decided
                if decided is not None and decided.is_success():
                    self.pg_mgr.mark_allowed(wp.pod)
            self._release(group)
            return None, 0
        if not assigned and self._changed_since_rejected(group, pg):
            # Only the first member to wait brings its siblings back to activeQ
            # (scheduler-plugins #682: every waiter doing so was a CPU storm).
            siblings = [p for p in self.pg_mgr.group_pods(pod.namespace, pg.name) if p.key != pod.key and not p.node_name]
            if siblings:
                self.handle.activate_pods(siblings)
        timeout = wait_time_seconds(pg, self.args)
        # The group's hold lasts as long as its members may wait.
        self.ledger.extend(group, self.pg_mgr.now() + timeout)
        return Status(Code.Wait), timeout


    # --- liveness: no retries of a rejected group on an unchanged cluster ------------------

    def _changed_since_rejected(self, group: str, pg: PodGroup) -> bool:
        seen = self.rejected_on.get(group)
        if seen is None:
            return True
        if seen == self._cluster_seen_by(group, pg):
            return False
        del self.rejected_on[group]
        return True

    def _cluster_seen_by(self, group: str, pg: PodGroup) -> tuple:
        """What could make a retry of `group` end differently: the nodes, what
        pods outside the group take on them (assumed ones included), the group's
        own pods and its PodGroup's spec. The group's own members placed or
        rolled back are left out: its rollback gives back only what it took.
        O(nodes + the group's placed members)."""
        own: dict[str, tuple[Resource, int]] = {}
        for p in self.pg_mgr.placed_members(group):
            r, n = own.get(p.node_name, (Resource(), 0))
            r.add(p.resource)
            own[p.node_name] = (r, n + 1)
        nodes = []
        for ni in self.handle.snapshot().node_info_list:
            taken = ni.requested.clone()
            count = len(ni.pods)
            mine = own.get(ni.name)
            if mine is not None:
                taken.sub(mine[0])
                count -= mine[1]
            a = ni.allocatable
            nodes.append((ni.name, a.milli_cpu, a.memory, a.ephemeral_storage, a.allowed_pod_number,
                          _nonzero(a.scalar), taken.milli_cpu, taken.memory, taken.ephemeral_storage,
                          _nonzero(taken.scalar), count))
        ns, _, label = group.partition("/")
        members = tuple(sorted((p.uid, bool(p.scheduling_gates)) for p in self.pg_mgr.group_pods(ns, label)))
        return tuple(nodes), members, repr(pg.raw.get("spec"))


def _nonzero(scalar: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((k, v) for k, v in scalar.items() if v))


def _preemptable_by(pod: Pod) -> Callable[[Pod], bool] | None:
    """The pods DefaultPreemption may evict for `pod` (lower priority), or None
    when the pod never preempts."""
    if pod.preemption_policy == "Never":
        return None
    prio = pod.priority
    return lambda victim: victim.priority < prio


def _pod_group_changed(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """A PodGroup event matters unless only its status changed: the scheduler never
    reads status, and the daemon writes it as pods are tried, so requeueing on
    it would feed a loop of retries and status writes."""
    if isinstance(old, PodGroup) and isinstance(new, PodGroup) and old.raw.get("spec") == new.raw.get("spec"):
        return QueueingHint.QueueSkip
    return QueueingHint.Queue


def _freed_by_another_group(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Room freed on a node helps a waiting gang unless the pod that left is of
    the same gang: a group's own rollback never makes room for itself, and
    requeueing on it would have the group re-reserve at once, without backoff."""
    if isinstance(old, Pod) and group_full_name(old) and group_full_name(old) == group_full_name(pod):
        return QueueingHint.QueueSkip
    return QueueingHint.Queue


def _initial(qp: QueuedPodInfo) -> int:
    return qp.initial_attempt_timestamp if qp.initial_attempt_timestamp is not None else qp.timestamp


def _fragmentation_message(group: str, pg: PodGroup, needed: int, num_nodes: int, placeable: int | None, summed_fit: bool) -> str:
    at_most = f", at most {placeable} fit" if placeable is not None else ""
    why = ("; the cluster's summed free capacity would hold them, but it is fragmented across nodes"
           if summed_fit else "; the cluster's free capacity is too small")
    return (f"podGroup {group} cannot be placed node by node: {needed} more members need a node"
            f"{at_most} on {num_nodes} nodes{why}")


PLUGINS = [Coscheduling]
