"""The Scheduler actor's whole-group cycle (upstream's scheduleOnePodGroup /
podGroupCycle / submitPodGroupAlgorithmResult) for a gang the queue popped as one
unit (actors/queue/group_pop.py's QueuedPodGroup).

In one turn of the scheduler's loop, nothing suspending: the members still pending
are ordered (priority, then first attempt), tried in one snapshot by
framework/workload/group_cycle.py's `place_group` through a CachePlacer over the
scheduler's own cache and algorithm (batching included). When minCount is reached,
every placed member runs Permit with the group's GroupCycleState (GangScheduling lets
it through at once; another plugin may still make it wait) and goes to its binding
cycle, as `schedule_one` sends a pod. Otherwise nothing stays assumed and every
member goes to the failure handler: its own FitError when it failed itself, the
group's reason when it was placed and undone or never tried. Either way the
PodGroup's PodGroupScheduled condition is written (framework/workload/group_status.py).

A basic PodGroup takes the same cycle with a quorum of one (upstream 1.36's
ScheduleOne sends every pod with spec.schedulingGroup to scheduleOnePodGroup): its
queued members are tried together in one snapshot (one topology domain when it has a
constraint), those that fit are bound, the others fail with their own reasons.
A group whose PodGroup vanished between the pop and the cycle is scheduled pod by pod."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from actors.binding import AssumedPod, undo_assume
from actors.base import new_reply
from actors.metrics_sink import ERROR, SCHEDULED, UNSCHEDULABLE, WAITING_ON_PREEMPTION
from actors.queue.actor import Assumed, Done, TakeMembers
from actors.queue.group_pop import GANG_PLUGIN, QueuedPodGroup
from actors.scheduler_views import Attempt
from framework.api.groups import POD_GROUP_KEY
from framework.api.objects import Pod
from framework.api.workload_api import WORKLOAD_AWARE_PREEMPTION, SchedulingPodGroup
from framework.attempt_outcome import FitError, KeptNodeToStatus
from framework.interface import Code, CycleState, QueuedPodInfo, Status
from framework.runtime import run_unsuspended
from framework.workload.group_cycle import (
    GROUP_CYCLE_KEY, GROUP_ORDER_KEY, GroupCycleState, GroupPlacement, member_order,
    place_group, skips_member,
)
from framework.workload.group_status import scheduled_condition, with_condition
from framework.workload.member_placer import CachePlacer, MemberPostFilter, columns_world
from framework.workload.policy import GroupPolicy, group_policy_of

if TYPE_CHECKING:
    from framework.runtime import Framework


class CycleHost(Protocol):
    """What the group cycle uses of the Scheduler (actors/scheduler.py), which holds it:
    its state and its one scheduling cycle's steps."""

    pending: dict[str, Pod]
    cache: Any
    objects: Any
    queue: Any
    clock: Any
    attempts: dict[str, Any]
    nominator: Any
    metrics: Any
    algorithm: Any
    snapshot: Any
    stats: Any
    record: Any
    preemption: Any
    views: dict[str, Any]
    cycle_started: float

    async def schedule_one(self, qpi: QueuedPodInfo) -> None: ...

    def handle_failure(self, qpi: QueuedPodInfo, status: Status, nominated: str | None, started: float) -> None: ...

    def finish_cycle(self, qpi: QueuedPodInfo, assumed: AssumedPod | None, status: Status,
                     nominated: str | None, *, tell_assumed: bool = True) -> None: ...

    def park_at_permit(self, fwk: "Framework", assumed: Pod, host: str, timeouts: dict[str, float]) -> Any: ...


def mixed_profiles_message(a: str, b: str) -> str:
    return f"all pods in a single pod group should have the same .spec.schedulerName set, got: {a!r} and {b!r}"


class Placement(Protocol):
    """How the cycle places a group: `place_group` over the whole cluster by default;
    the topology layer (framework/workload/topology.py) plugs in its own, which calls
    `place_group` per domain with the same placer (keep=False) and returns the result
    of its last call (keep=True in the domain it picks): the placer's `tries` are
    that call's, and the binding and failure paths read them."""

    def __call__(self, policy: GroupPolicy, pods: list[Pod], placer: CachePlacer, *,
                 scheduled: int) -> GroupPlacement: ...


def whole_cluster(policy: GroupPolicy, pods: list[Pod], placer: CachePlacer, *, scheduled: int) -> GroupPlacement:
    return place_group(policy, pods, placer, scheduled=scheduled)


class Preempt(Protocol):
    """Workload-aware preemption for a group the cycle left Unschedulable: (the uid of
    the member that preempted, the node it was nominated to; "" clears, None: none ran)."""

    async def __call__(self, fwk: "Framework", placer: CachePlacer,
                       result: GroupPlacement) -> tuple[str, str | None]: ...


class GroupCycle:
    def __init__(self, sched: CycleHost, placement: Placement = whole_cluster) -> None:
        self.sched = sched
        self.placement = placement
        self._placers: dict[str, CachePlacer] = {}  # per profile
        self.cycles = 0  # whole-group cycles run (tests and stats)
        # The workload-aware preemption of a group the cycle left Unschedulable (a seam,
        # as `placement` is: conformance/group_submit_cases.py scripts it).
        self.preempt: Preempt = self.workload_preemption

    async def run(self, group: QueuedPodGroup) -> None:
        s = self.sched
        live: list[QueuedPodInfo] = []
        for qpi in group.members:
            current = s.pending.get(qpi.pod.key)
            if current is None or skips_member(current, s.cache.get_pod(qpi.pod.key) is not None):
                s.queue.try_tell(Done(pod_keys=(qpi.pod.key,)))  # deleted, bound or assumed meanwhile
                continue
            qpi.pod = current
            live.append(qpi)
        live += await self._late_members(group)
        pg = s.objects.get(POD_GROUP_KEY, group.namespace, group.name)
        if not isinstance(pg, SchedulingPodGroup):
            for qpi in live:
                await s.schedule_one(qpi)
            return
        if not live:
            return
        profiles = sorted({q.pod.scheduler_name for q in live})
        if len(profiles) > 1:
            error = Status(Code.Error, mixed_profiles_message(profiles[1], profiles[0]))
            started = s.clock.now()
            for qpi in live:
                s.attempts[qpi.pod.key] = Attempt(error=error.message())
                s.handle_failure(qpi, error, "", started)
            s.metrics.pod_group_attempt(ERROR, profiles[0], s.clock.now() - started, None)
            return
        self.cycles += 1
        await self._cycle(pg, live)

    async def _late_members(self, group: QueuedPodGroup) -> list[QueuedPodInfo]:
        """Members the view holds pending but the pop lacked: their AddPod reached the
        queue after the pop was answered. One ask, answered after those AddPods (one
        sender, one mailbox); members PreEnqueue still refuses stay queued."""
        s = self.sched
        popped = set(group.keys)
        missing = tuple(p.key for p in s.objects.scheduling_group_pods(group.namespace, group.name)
                        if p.key in s.pending and p.key not in popped and not p.node_name and not p.is_deleting
                        and s.cache.get_pod(p.key) is None)
        if not missing:
            return []
        reply = new_reply()
        if not s.queue.try_tell(TakeMembers(keys=missing, reply=reply)):
            return []
        late: list[QueuedPodInfo] = await reply
        for qpi in late:
            qpi.pod = s.pending.get(qpi.pod.key, qpi.pod)
        return late

    def _placer(self, fwk: "Framework", members: int) -> CachePlacer:
        placer = self._placers.get(fwk.profile_name)
        if placer is None:
            s = self.sched
            placer = self._placers[fwk.profile_name] = CachePlacer(fwk, s.algorithm, s.cache, s.snapshot)

            def counted(pod: object) -> None:
                s.stats.attempts += 1  # each member is an attempt (batching reads the count)

            placer.on_attempt = counted

            def assumed(pod: Pod) -> None:
                # As upstream's assume: a member placed no longer holds its nominated
                # node, or its gang's later members would see it there and here both.
                if s.nominator.node_of(pod):
                    s.nominator.delete(pod)

            placer.on_assumed = assumed
        placer.start_group(members, columns_world(self.sched.objects))
        return placer

    async def _cycle(self, pg: SchedulingPodGroup, live: list[QueuedPodInfo]) -> None:
        s = self.sched
        started = s.cycle_started = s.clock.now()
        fwk = s.views[live[0].pod.scheduler_name][0]
        order = member_order([q.pod for q in live], [q.initial_attempt_timestamp for q in live])
        members = [live[i] for i in order]
        for qpi in members:
            s.attempts[qpi.pod.key] = Attempt()
        # bound or assumed outside this cycle, but not a victim chosen to go (its gang
        # must not reach minCount on a member on its way out)
        outside = [p for p in s.objects.scheduling_group_pods(pg.namespace, pg.name)
                   if (p.node_name or s.cache.get_pod(p.key) is not None) and p.uid not in s.victims_in_flight]
        placer = self._placer(fwk, len(members))
        policy = group_policy_of(pg)
        group_step = fwk.handle.features.enabled(WORKLOAD_AWARE_PREEMPTION)
        placer.post_filter = None if group_step else self._member_post_filter(fwk, policy)
        result = self.placement(policy, [q.pod for q in members], placer, scheduled=len(outside))
        placer.post_filter = None
        algorithm_s = s.clock.now() - started
        preempted: tuple[str, str | None] = ("", None)
        if result.feasible:
            self._bind_placed(fwk, placer, result, members, started, policy)
        else:
            # upstream's podGroupCycle: only an Unschedulable group preempts, an Error does
            # not, and only with WorkloadAwarePreemption on (off, each member ran its own
            # PostFilter inside the placement)
            preempts = result.status.code == Code.Unschedulable and group_step
            if preempts:
                self._order_for_plan(placer, result, members)
            preempted = await self.preempt(fwk, placer, result) if preempts else ("", None)
            self._reject(placer, result, members, started, preempted)
        # upstream's submitPodGroupAlgorithmResult: a rejected group that waits on its
        # preemption (its members' own, or the group step's that nominated) is counted apart
        waiting = result.waiting_on_preemption or bool(preempted[1])
        outcome = (SCHEDULED if result.feasible else ERROR if result.status.code == Code.Error
                   else WAITING_ON_PREEMPTION if waiting else UNSCHEDULABLE)
        s.metrics.pod_group_attempt(outcome, fwk.profile_name, s.clock.now() - started, algorithm_s)
        now_ns = int(s.clock.now() * 1e9)
        written = with_condition(pg.raw, scheduled_condition(result.status), now_ns)
        if written is not None:
            fwk.handle.update_object_later(written)

    def _bind_placed(self, fwk: "Framework", placer: CachePlacer, result: GroupPlacement,
                     members: list[QueuedPodInfo], started: float, policy: GroupPolicy | None = None) -> None:
        s = self.sched
        together = GroupCycleState(frozenset(result.placed), policy)
        # The members handed to binding, told to the queue in one Assumed: before any
        # failure's Requeue, as one message per member was.
        assumed: list[str] = []

        def tell_assumed() -> None:
            if assumed:
                s.queue.try_tell(Assumed(pod_keys=tuple(assumed)))
                assumed.clear()

        for qpi in members:
            t = placer.tries.get(qpi.pod.uid)
            if qpi.pod.uid not in result.placed or t is None or t.assumed is None:
                tell_assumed()
                self._fail(placer, result, qpi, started)
                continue
            t.state.write(GROUP_CYCLE_KEY, together)
            s.attempts[qpi.pod.key].result = t.result
            if s.nominator.node_of(qpi.pod):
                s.nominator.delete(qpi.pod)
            a = AssumedPod(fwk=fwk, state=t.state, qpi=qpi, pod=t.assumed, node_name=t.node, permit=None,
                           assumed_at=s.clock.now())
            status, timeouts = fwk.run_permit(t.state, t.assumed, t.node)
            if status.is_wait():
                a.permit = s.park_at_permit(fwk, t.assumed, t.node, timeouts)
                status = Status()
            if status.is_success():
                s.finish_cycle(qpi, a, status, None, tell_assumed=False)
                assumed.append(qpi.pod.key)
                continue
            undo_assume(a, s.cache, s.record)
            qpi.unschedulable_plugins = {status.plugin} if status.is_rejected() and status.plugin else set()
            qpi.pending_plugins = set()
            tell_assumed()
            s.handle_failure(qpi, status, "", started)
        tell_assumed()

    def _member_post_filter(self, fwk: "Framework", policy: GroupPolicy) -> MemberPostFilter | None:
        """WorkloadAwarePreemption off: each member that fits nowhere runs its own PostFilter
        inside the placement, as upstream 1.36's podGroupPodSchedulingAlgorithm runs
        schedulingAlgorithm's PostFilter per member (DefaultPreemption preempts for that
        pod alone and nominates it; the placer assumes it there). Not for a group placed
        domain by domain: upstream's DefaultPreemption refuses those members
        (NOT_ELIGIBLE_PLACEMENT), and a try per domain must not evict per domain."""
        if policy.required_topology_key or policy.preferred_topology_key:
            return None
        step = self.sched.preemption

        def post_filter(state: CycleState, pod: Pod, err: FitError) -> str | None:
            # no extenders in the group cycle (they would suspend it), so nothing awaits
            return run_unsuspended(step.post_filter(fwk, state, pod, err)).nominated

        return post_filter

    async def workload_preemption(self, fwk: "Framework", placer: CachePlacer,
                                  result: GroupPlacement) -> tuple[str, str | None]:
        """Workload-aware preemption for a group not placed (KEP-5710, issue 29): the first
        member that failed on its own runs PostFilter on the view without the group's
        undone members; DefaultPreemption's group step makes room for the whole group and
        nominates the other members. (that member's uid, the node it was nominated to)."""
        s = self.sched
        for uid, t in placer.tries.items():
            if t.fit_error is not None and uid in result.unplaced:
                s.cache.update_snapshot(s.snapshot)
                fwk.handle.set_snapshot(s.snapshot)
                post = await s.preemption.post_filter(fwk, t.state, t.fit_error.pod, t.fit_error)
                return uid, post.nominated
        return "", None

    @staticmethod
    def _order_for_plan(placer: CachePlacer, result: GroupPlacement, members: list[QueuedPodInfo]) -> None:
        """The group step's plan takes the members in the cycle's order, those placed
        first (GROUP_ORDER_KEY, in every try's state: the preemptor is one of them), so
        every member that fit is in the plan: a member that fit goes back nominated to
        its node (upstream's SuggestedHost), and one left out of the plan would ask for
        room the plan did not count."""
        uids = [q.pod.uid for q in members]
        order = (*(u for u in uids if u in result.placed), *(u for u in uids if u not in result.placed))
        for t in placer.tries.values():
            t.state.write(GROUP_ORDER_KEY, order)

    def _reject(self, placer: CachePlacer, result: GroupPlacement, members: list[QueuedPodInfo],
                started: float, preempted: tuple[str, str | None] = ("", None)) -> None:
        """Every member to the failure handler, backing off as one: each carries the
        group's attempts (its oldest member's, who was in every cycle of the group),
        so a member that joined late does not come back first and pull the gang out
        of its backoff early; the queue stamps them all in this one turn."""
        attempts = max(q.attempts for q in members)
        for qpi in members:
            qpi.attempts = attempts
            self._fail(placer, result, qpi, started, preempted)

    def _fail(self, placer: CachePlacer, result: GroupPlacement, qpi: QueuedPodInfo, started: float,
              preempted: tuple[str, str | None] = ("", None)) -> None:
        """One member's end of a cycle that did not place it: its own FitError (or the
        one of the same-signature member whose verdict it took), else the group's."""
        s = self.sched
        uid = qpi.pod.uid
        status = result.unplaced.get(uid, result.status)
        own = placer.tries.get(uid)
        if uid in result.placed:  # placed, then undone with its group
            status, nominated = Status(Code.Unschedulable, result.status.message()), ""
        elif uid in result.preempting and not result.waiting_on_preemption:
            # preempted for itself but its group fell short (or failed): upstream's submit
            # gives it the group's word and clears its nomination
            status, nominated = Status(result.status.code, result.status.message()), ""
        else:
            nominated = own.nominated if own is not None else None  # its own PostFilter's
        if result.waiting_on_preemption and uid in result.placed:
            nominated = result.placed[uid]  # upstream nominates a member that fit to its SuggestedHost
        if preempted[0] == uid:
            nominated = preempted[1]  # the preemptor's node; "" clears a stale nomination
        elif preempted[1] and uid in result.placed and not s.nominator.node_of(qpi.pod):
            # The group waits on its preemption (upstream's waitingOnPreemption): a member
            # that fit goes back nominated to the node it fit on, as upstream's
            # submitPodGroupAlgorithmResult nominates it to its SuggestedHost, unless the
            # group's plan nominated it (below): the plan placed every member the gang
            # lacks, this one too, and its other members' nodes count on that node.
            nominated = result.placed[uid]
        elif preempted[1]:
            nominated = None  # the group's preemption nominated this member: keep it
        origin = next((t for u, t in placer.tries.items() if result.unplaced.get(u) is status), None)
        fit = origin.fit_error if origin is not None else None
        attempt = s.attempts[qpi.pod.key]
        if fit is not None:
            attempt.fit_error = fit
            status = Status(status.code, fit.message())  # with PostFilter's verdict, when it ran
            qpi.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(fit.diagnosis.pending_plugins)
            if not isinstance(fit.diagnosis.node_to_status, KeptNodeToStatus):
                fit.diagnosis.node_to_status = KeptNodeToStatus(fit.diagnosis.node_to_status)
        elif status.is_rejected():
            qpi.unschedulable_plugins, qpi.pending_plugins = {GANG_PLUGIN}, set()
        else:
            attempt.error = status.message()
            qpi.unschedulable_plugins, qpi.pending_plugins = set(), set()
        s.handle_failure(qpi, status, nominated, started)


__all__ = ["GroupCycle", "Placement", "Preempt", "mixed_profiles_message", "whole_cluster"]
