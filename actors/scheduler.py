"""The Scheduler actor: the scheduling cycle, strictly one pod at a time.

It owns the Cache (nodes, bound and assumed pods) and its Snapshot, and a view of the other objects plugins
list (the informer caches). Store changes reach it as messages (one StoreChanged for the events that follow
each other in its inbox) and update the cache between cycles; it then offers them to the queue. For each pod
the queue hands it: refresh the snapshot, run the algorithm, PostFilter on a FitError, assume, Reserve,
Permit, and start the pod's binding cycle; then ask for the next pod at once. Explain requests are messages
too, so they see the cache between two cycles, never inside one.

It holds refs to the other actors (queue, waiting room, store client), never the actors: the queue gets
Pop/Requeue/Move/... messages, the waiting room Park and Reject messages. It owns the nominator (pods
nominated to nodes by preemption): every nomination starts here or in a pod change that reaches here first,
and the scheduling cycle reads it synchronously through the handle. Binding cycles are its child tasks; they
report their outcomes as BindingDone messages (one for outcomes that follow each other in its inbox), and
the cache is changed (forget, Unreserve) only by its own loop.

One failure path, as upstream's schedulingCycle: the cycle returns a Status (`_cycle_failed` /
`_cycle_succeeded`), and `handle_failure` (upstream's FailureHandler) runs once for a failed attempt, from
`_finish_cycle` when the scheduling cycle failed or from `_binding_failed` when its binding cycle did. An
exception escaping a cycle is an InvariantBreach (the cache may be half updated): the system stops cleanly
instead of going on with it.

Metrics (actors.metrics_sink) are recorded where upstream's schedule_one.go records them: an attempt's
result and duration when it ends (scheduled after Bind, unschedulable or error in the failure handler),
extension point durations through the timed siblings of each profile's Framework
(actors/framework_timing.py), per-plugin durations on every PLUGIN_SAMPLE_EVERY-th cycle, and preemption
attempts and victims around PostFilter (actors/scheduler_preemption.py, which also hands asynchronous
preemptions to the preemption actor).
"""
from __future__ import annotations

import asyncio
import itertools
import time
from typing import Callable, Sequence, assert_never

from actors.base import Actor, ActorRef, InvariantBreach, MailboxClosed, new_reply, resolve
from actors.binding import AssumedPod, BindingCycles, undo_assume
from actors.clock import Clock
from actors.failure_reuse import FailureReuse
from actors.framework_timing import Timer, timed_frameworks
from actors.group_cycle import GroupCycle
from actors.group_topology import TopologyPlacement
from actors.metrics_sink import NO_METRICS, MetricsSink
from actors.preemption import PreemptionMsg
from actors.queue.actor import Assumed, Done, Pop, QueueMsg, Unpop
from actors.queue.group_pop import QueuedPodGroup, popped_keys
from actors.queue.nominator import Nominator
from actors.scheduler_events import ClusterEvents
from actors.scheduler_explain import Explaining
from actors.scheduler_messages import BindingDone, Explain, Popped, SchedulerMsg, StoreChanged
from actors.scheduler_outcomes import Outcomes
from actors.scheduler_preemption import PreemptionStep
from actors.scheduler_views import RECENT_BINDS, Attempt, GetAttempts, GetStats, SchedulerStats, StatsView, attempt_view
from actors.store import StoreClient, WatchEvent
from actors.store.premise import deriving_from
from actors.waiting_room import SHUTTING_DOWN, Decided, Park, PermitRejected, PermitSettled, WaitingRoomMsg
from framework import batching
from framework.algorithm import SchedulingAlgorithm
from framework.incremental_failure import LastFailures, Retry, same_but_nominations
from framework.attempt_outcome import (
    Diagnosis,
    FitError,
    KeptNodeToStatus,
    NoNodesAvailable,
    ScheduleResult,
    SchedulingError,
)
from framework.api.objects import Pod
from framework.cache import Cache, Snapshot
from framework.extender import Extender
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, QueuedPodInfo, Status
from framework.preemption import with_nominated_node_name
from framework.preemption_inflight import VictimsInFlight
from framework.runtime.node_local import NodeLocalColumns
from framework.runtime import Framework
from framework.waiting import WaitingPod

_SUCCESS, _WAIT = Code.Success, Code.Wait

__all__ = ["BindingDone", "Explain", "Popped", "Scheduler", "SchedulerMsg", "StoreChanged"]

# Upstream samples plugin durations in 10% of cycles (pluginMetricsSamplePercent);
# here every 10th cycle, starting with the first, so a test sees one at once.
PLUGIN_SAMPLE_EVERY = 10


class Scheduler(Actor[SchedulerMsg]):
    name = "scheduler"

    def __init__(
        self,
        *,
        frameworks: dict[str, Framework],
        queue: ActorRef[QueueMsg],
        store: StoreClient,
        waiting_room: ActorRef[WaitingRoomMsg],
        clock: Clock,
        algorithm: SchedulingAlgorithm,
        objects: InMemoryObjects,
        record: Callable[[str], None] | None = None,
        metrics: MetricsSink = NO_METRICS,
        timer: Timer = time.perf_counter,
        plugin_sample_every: int = PLUGIN_SAMPLE_EVERY,
        extenders: Sequence[Extender] = (),
        reuse_failures: bool = True,
        incremental_failures: bool = True,
        preemption: ActorRef[PreemptionMsg] | None = None,
    ) -> None:
        super().__init__()
        self.extenders = list(extenders)
        algorithm.extender_filters = any(e.config.is_filter() for e in self.extenders)
        algorithm.extender_prioritizers = any(e.config.is_prioritizer() for e in self.extenders)
        self.cycle_started = 0.0  # when the current scheduling cycle began (clock seconds)
        self.frameworks = frameworks
        self.queue = queue
        self.store = store
        self.waiting_room = waiting_room
        self.clock = clock
        self.algorithm = algorithm
        self.objects = objects
        self.record = record
        self.cache = Cache()
        self.view_rv = 0  # the newest resourceVersion of the store events handled (the cycles' view)
        self.snapshot = Snapshot()
        self.pending: dict[str, Pod] = {}  # unbound pods of our profiles, by key
        self.nominator = Nominator()
        self.victims_in_flight = VictimsInFlight()  # chosen victims not yet seen deleted (gang quorums skip them)
        self.attempts: dict[str, Attempt] = {}  # pod key -> its last attempt; read through GetAttempts
        self.stats = SchedulerStats()
        self.metrics = metrics
        self.plugin_sample_every = max(1, plugin_sample_every)
        self.preemption = PreemptionStep(self, preemption)
        # a gang popped as one unit (actors/group_cycle.py), in one topology domain (actors/group_topology.py)
        topology = TopologyPlacement(self)
        self.group_cycle = GroupCycle(self, topology)
        self.events = ClusterEvents(queue=queue, cache=self.cache, objects=objects, nominator=self.nominator,
                                    frameworks=frameworks, pending=self.pending, attempts=self.attempts,
                                    reject_waiting=self.reject_waiting, victims_in_flight=self.victims_in_flight)
        self.explaining = Explaining(self.cache, self.snapshot, frameworks, self.extenders,
                                     group_choices=topology.choices)
        self.outcomes = Outcomes(queue=queue, store=store, clock=clock, metrics=metrics, nominator=self.nominator,
                                 stats=self.stats, cache=self.cache, pending=self.pending, attempts=self.attempts,
                                 events=self.events, record=record, inbox=self.inbox)
        # The failure handler, and a binding cycle's report (BindingCycles' host calls), are the outcomes'.
        self.handle_failure = self.outcomes.handle_failure
        self.binding_done = self.outcomes.binding_done
        self.binding_cancelled = self.outcomes.binding_cancelled
        # Per profile: the view every cycle runs, and the one sampled cycles run.
        self.views = {name: self._timed_views(fwk, timer) for name, fwk in frameworks.items()}
        self.bindings = BindingCycles(self, record, metrics=metrics, clock=clock, extenders=self.extenders)
        self._assumed_keys: list[str] | None = None  # the cycle's Assumed, for the Pop after it (None: told at once)
        self._stopping = False
        for fwk in frameworks.values():
            self._connect(fwk.handle)
        # What a failed cycle's result depends on besides the pod (framework/failure_memo.py).
        self.reuse = FailureReuse(
            frameworks, lambda: (self.snapshot.generation, self.nominator.version, self.objects.revision),
            has_extenders=bool(self.extenders), enabled=reuse_failures, metrics=metrics)
        # Each class's last failure: its retry re-filters only the changed nodes
        # (framework/incremental_failure.py); off, every retry filters every node.
        self.incremental = incremental_failures and not self.extenders
        self.last_failures = LastFailures()
        # Node-local Filter verdicts and raw scores kept across cycles, by pod shape
        # (framework/runtime/node_local.py); None: every cycle runs its whole passes.
        self.node_columns: NodeLocalColumns | None = NodeLocalColumns()
        # OpportunisticBatching: same-signature pods reuse the last scored node list as a hint.
        algorithm.batching = batching.for_scheduler(frameworks, bool(self.extenders), clock.now,
                                                    lambda: self.stats.attempts, metrics)

    def _connect(self, handle: object) -> None:
        """Plugins' requests through the handle land in this actor's own methods."""
        if isinstance(handle, FrameworkHandle):
            handle.connect(nominator=self.nominator, activate=self.events.activate, evict=self.preemption.evict,
                           clear_nominations=self.preemption.clear_nominations,
                           start_preemption=self.preemption.start, nominate=self.preemption.nominate,
                           preempting_extenders=self.preemption.narrow if self.extenders else None,
                           victims_in_flight=self.victims_in_flight)

    # --- the loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        # The binding cycles are this loop's children, as in an asyncio.TaskGroup (leaving
        # drains them; an error cancels them), without its loop turn a pod (actors/binding.py).
        self.bindings.open()
        try:
            self._request_pop()
            await super().run()
        except BaseException as exc:  # noqa: BLE001 - the cycles are cancelled, then it is raised on
            await self.bindings.close(exc)
            raise
        await self.bindings.close(None)

    async def handle(self, msg: SchedulerMsg) -> None:
        match msg:
            case Popped(qpi=qpi) if qpi is not None and not self._stopping:
                try:
                    if isinstance(qpi, QueuedPodGroup):
                        await self.group_cycle.run(qpi)
                    else:
                        # The cycle's Assumed rides on the Pop sent right after it (nothing
                        # else reaches the queue between the two).
                        self._assumed_keys = []
                        await self.schedule_one(qpi)
                except Exception as e:  # noqa: BLE001 - reported as a breach with its cause
                    raise InvariantBreach(self.name, type(msg).__name__, repr(e)) from e
                self._request_pop()
            # A pod's two other messages, handled here rather than in _handle: a frame each fewer.
            case StoreChanged(events=evs):
                for ev in evs:  # each as a message of its own: one that raises is that one's failure
                    try:
                        if ev.resource_version > self.view_rv:  # (max's, in place)
                            self.view_rv = ev.resource_version
                        self.events.on_store_change(ev)
                    except InvariantBreach:
                        raise
                    except Exception as exc:  # noqa: BLE001
                        self.on_failure(msg, exc)
            case BindingDone(outcomes=ended):
                self.bindings.total -= len(ended)
                try:  # a step that raises leaves the cache (assumed pods, snapshot) unknown: a breach
                    self.outcomes.finish_bindings(ended)
                except Exception as e:  # noqa: BLE001 - reported as a breach with its cause
                    raise InvariantBreach(self.name, type(msg).__name__, repr(e)) from e
            case Explain(pod=pod, reply=reply):
                await self.explaining.explain(pod, reply)
            case _:
                self._handle(msg)
        if self._stopping:  # (_close_when_drained's first test: a frame a message fewer)
            self._close_when_drained()

    def idle(self) -> bool:
        return super().idle() and self.bindings.running == 0

    def cancel_bindings(self) -> None:
        """Stop's grace period ran out: cancel the binding cycles still running;
        each reports its cancellation as a BindingDone this loop handles."""
        self.bindings.cancel_all()

    def stop(self) -> None:
        """No new cycles; messages already queued are still handled, and the
        inbox stays open until every binding cycle has reported back."""
        self._stopping = True
        self._close_when_drained()

    def _close_when_drained(self) -> None:
        if self._stopping and self.bindings.total == 0 and not self.inbox.closed:
            self.inbox.close(drain=True)

    def _request_pop(self) -> None:
        assumed, self._assumed_keys = tuple(self._assumed_keys or ()), None
        if self._stopping:
            if assumed:
                self.queue.try_tell(Assumed(pod_keys=assumed))
            return
        # The queue calls `_popped` in its own turn (no Future and no callback's loop turn
        # before the Popped reaches this inbox).
        self.queue.try_tell(Pop(to=self._popped, assumed=assumed))

    def _popped(self, qpi: QueuedPodInfo | QueuedPodGroup | None) -> None:
        try:
            self.inbox.put(Popped(qpi=qpi))  # (tell's, in place)
        except MailboxClosed:
            for key in popped_keys(qpi) if qpi is not None else ():
                self.queue.try_tell(Unpop(pod_key=key))

    def _handle(self, msg: SchedulerMsg) -> None:
        match msg:
            case StoreChanged() | BindingDone() | Explain():
                raise AssertionError("handled in handle()")
            case Popped(qpi=qpi):  # a cycle is handle()'s: here, nothing popped, or stopping
                for key in popped_keys(qpi) if qpi is not None else ():
                    self.queue.try_tell(Unpop(pod_key=key))
            case PermitSettled(uid=uid, status=status):
                self._permit_settled(uid, status)
            case PermitRejected(uid=uid, plugin=plugin, message=message):
                self.reject_waiting(uid, plugin, message)
            case GetStats(reply=reply, latencies=latencies):
                st = self.stats
                recent = tuple(itertools.islice(reversed(st.bind_latencies), RECENT_BINDS))[::-1]
                every = (tuple(st.latencies), tuple(st.bind_latencies)) if latencies else ((), ())
                resolve(reply, StatsView(st.attempts, st.scheduled, st.failed, self.bindings.running,
                                         recent_bind_seconds=recent, failures_reused=self.reuse.hits,
                                         e2e_seconds=every[0], bind_seconds=every[1]))
            case GetAttempts(keys=keys, reply=reply):
                names = [ni.name for ni in self.snapshot.list()]
                resolve(reply, {k: attempt_view(self.attempts[k], names) for k in keys if k in self.attempts})
            case _:
                assert_never(msg)

    def store_changed(self, ev: WatchEvent) -> None:
        """A store event to this loop: added to a StoreChanged still last in the inbox
        (the loop's order is then that of one message per event), else a new one."""
        items = self.inbox._items  # (Mailbox.tail's and tell's work in place: two frames an event fewer)
        if items and type(items[-1]) is StoreChanged:
            items[-1].events.append(ev)
        else:
            self.inbox.put(StoreChanged(events=[ev]))

    # --- the scheduling cycle ---------------------------------------------------------------------

    async def schedule_one(self, qpi: QueuedPodInfo) -> None:
        """upstream's ScheduleOne: the scheduling cycle, then either the failure
        handler (once) or the binding cycle. The configured extenders are steps of
        the algorithm and of PostFilter: the cycle awaits their calls (each bounded by
        its httpTimeout) while other messages wait in the inbox; without extenders
        nothing in the cycle suspends."""
        cycle = self._begin_cycle(qpi)
        if cycle is None:
            return
        fwk, state = cycle
        nominated, world = bool(self.nominator.node_of(qpi.pod)), self.reuse.world()
        key = self.reuse.key(qpi.pod, nominated, world) if self.reuse.may_know() else None
        known = self.reuse.lookup(key) if key is not None else None
        if known is not None:
            self.finish_cycle(qpi, None, *self.reuse.reuse_known(qpi, known, self.attempts[qpi.pod.key]))
            return
        evicted_before = self.preemption.victims
        pod_class, kept = None, None
        if self.incremental and len(self.last_failures) > 0 and self.last_failures.may_hold(qpi.pod):
            pod_class = self.reuse.class_of(qpi.pod, nominated, key)
            kept = self.last_failures.get(pod_class) if pod_class is not None else None
        self.algorithm.retry = Retry(kept, world[1:], self.last_failures) if kept is not None else None
        if self.node_columns is not None:
            self.node_columns.begin_cycle(qpi.pod, self.objects.revision)
            self.algorithm.node_local = self.node_columns
        try:
            result = await self.algorithm.schedule(fwk, state, qpi.pod, self.snapshot, self.extenders)
        except FitError as e:
            if key is None:  # signed only now: the memo was empty when the cycle began
                key = self.reuse.key(qpi.pod, nominated, world)
            post = await self.preemption.post_filter(fwk, state, qpi.pod, e)
            # Kept after PostFilter (which reads the statuses, never changes them) unless it
            # moved the snapshot or the lister: a retry re-filters the nodes whose
            # nominations moved since (a preemptor's nomination), read from the nominator's log.
            if self.incremental and same_but_nominations(self.reuse.world(), world):
                pod_class = pod_class or self.reuse.class_of(qpi.pod, nominated, key)
                if pod_class is not None:
                    self.last_failures.keep(pod_class, qpi.pod, fwk, state, e.diagnosis, self.snapshot, world[1:], kept)
            status, nominated_to = self._cycle_failed(fwk, state, qpi, e, post.nominated)
            if key is not None:
                self.reuse.remember(key, e, status.message(), nominated_to, post.preemption_ran,
                                    self.preemption.victims != evicted_before)
            self.finish_cycle(qpi, None, status, nominated_to)
            return
        except (NoNodesAvailable, SchedulingError) as e:
            self.finish_cycle(qpi, None, *self._cycle_failed(fwk, state, qpi, e))
            return
        finally:
            self.algorithm.retry = self.algorithm.node_local = None
        self.finish_cycle(qpi, *self._cycle_succeeded(fwk, state, qpi, result))

    def finish_cycle(self, qpi: QueuedPodInfo, assumed: AssumedPod | None, status: Status,
                      nominated: str | None, *, tell_assumed: bool = True) -> None:
        """The one end of a scheduling cycle: the failure handler, or the pod's
        binding cycle. `tell_assumed=False`: the caller tells the queue itself
        (the whole-group cycle, once for all its members)."""
        if assumed is None:
            self.handle_failure(qpi, status, nominated, self.cycle_started)
            return
        assumed.started = self.cycle_started
        if tell_assumed:  # its class's next member follows it
            if self._assumed_keys is not None:
                self._assumed_keys.append(qpi.pod.key)
            else:
                self.queue.try_tell(Assumed(pod_keys=(qpi.pod.key,)))
        self.bindings.total += 1
        # The bind carries the view it was decided on (a view the store may yet lose: premise.py).
        self.bindings.start(assumed, deriving_from(self.view_rv))

    def _begin_cycle(self, qpi: QueuedPodInfo) -> tuple[Framework, CycleState] | None:
        pod = qpi.pod
        current = self.pending.get(pod.key)
        if current is None or current.is_deleting or self.cache.get_pod(pod.key) is not None:
            self.queue.try_tell(Done(pod_keys=(pod.key,)))  # deleted, already bound or assumed: nothing to do
            return None
        nominated = self.nominator.node_of(current)
        if nominated and current.nominated_node_name != nominated:
            # This scheduler nominated the pod and the store has not echoed the status
            # write yet: the cycle sees the pod as it is being stored, as upstream's
            # informer has it by then. Without this a preemptor retried meanwhile does
            # not look at its nominated node first and preempts a second one.
            current = with_nominated_node_name(current, nominated)
        qpi.pod = pod = current
        self.cycle_started = self.clock.now()
        self.stats.attempts += 1
        plain, sampled = self.views[pod.scheduler_name]
        fwk = sampled if self.stats.attempts % self.plugin_sample_every == 1 % self.plugin_sample_every else plain
        self.cache.update_snapshot(self.snapshot)
        fwk.handle.set_snapshot(self.snapshot)
        self.attempts[pod.key] = Attempt()
        return fwk, CycleState()

    def _cycle_failed(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo,
                      e: FitError | NoNodesAvailable | SchedulingError,
                      nominated: str | None = None) -> tuple[Status, str | None]:
        """The failed algorithm's Status for the failure handler, and the node
        PostFilter nominated ("" clears a nomination, None leaves it; PostFilter ran
        before, on a FitError only); `qpi`'s unschedulable/pending plugins say who
        rejected the pod."""
        attempt = self.attempts[qpi.pod.key]
        qpi.unschedulable_plugins, qpi.pending_plugins = set(), set()
        if isinstance(e, FitError):
            attempt.fit_error = e
            qpi.unschedulable_plugins = set(e.diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(e.diagnosis.pending_plugins)
            message = e.message()
            # Kept until the pod's next attempt: in its compact form.
            e.diagnosis.node_to_status = KeptNodeToStatus(e.diagnosis.node_to_status)
            return Status(Code.Unschedulable, message), nominated
        if isinstance(e, NoNodesAvailable):
            return Status(Code.Unschedulable, str(e)), None
        attempt.error = str(e)
        return Status(Code.Error, str(e)), None

    def _cycle_succeeded(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo,
                         result: ScheduleResult) -> tuple[AssumedPod | None, Status, None]:
        self.attempts[qpi.pod.key].result = result
        return self._assume_and_permit(fwk, state, qpi, result.suggested_host)

    def _assume_and_permit(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo,
                           host: str) -> tuple[AssumedPod | None, Status, None]:
        pod = qpi.pod
        assumed = pod.with_node_name(host)
        self.cache.assume_pod(assumed, host)
        if self.nominator.node_of(pod):
            self.nominator.delete(pod)
        a = AssumedPod(fwk=fwk, state=state, qpi=qpi, pod=assumed, node_name=host, permit=None,
                       assumed_at=self.clock.now())
        status = fwk.run_reserve(state, assumed, host)
        if status.code == _SUCCESS:  # (is_success and is_wait read in place: a frame each fewer)
            status, timeouts = fwk.run_permit(state, assumed, host)
            if status.code == _WAIT:
                a.permit = self.park_at_permit(fwk, assumed, host, timeouts)
                status = Status()
        if status.code == _SUCCESS:
            return a, status, None
        undo_assume(a, self.cache, self.record)
        if status.is_rejected():
            # As upstream: a FitError over the one node tried ("0/1 nodes are available: ...").
            diagnosis = Diagnosis()
            diagnosis.node_to_status.set(host, status)
            diagnosis.add_plugin_status(status)
            err = FitError(pod, 1, diagnosis)
            attempt = self.attempts[pod.key]
            attempt.result, attempt.fit_error = None, err
            qpi.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(diagnosis.pending_plugins)
            status = Status(status.code, err.message(), plugin=status.plugin)
        return None, status, None

    def park_at_permit(self, fwk: Framework, assumed: Pod, host: str, timeouts: dict[str, float]) -> asyncio.Future[Status]:
        """Permit said Wait: the pod joins the view of waiting pods plugins read at
        once (as upstream's RunPermitPlugins adds it), and the waiting room, which
        owns the wait, gets it by message to time it and resolve the returned
        Future with the decision. A plugin's decision through the view goes to the
        room as a message; the room's PermitSettled takes the pod out of the view."""
        now = self.clock.now()
        room, uid = self.waiting_room, assumed.uid
        wp = WaitingPod(assumed, host, {p: now + t for p, t in timeouts.items()},
                        on_decision=lambda status: room.try_tell(Decided(uid=uid, status=status)))
        decision: asyncio.Future[Status] = new_reply()
        fwk.handle.waiting_pods.add(wp)
        if not room.try_tell(Park(pod=assumed, node_name=host, timeouts=dict(timeouts), decision=decision,
                                  reply_to=self.ref())):
            fwk.handle.waiting_pods.remove(uid)
            decision.set_result(Status(Code.Unschedulable, SHUTTING_DOWN))
        return decision

    def _waiting_views(self) -> list:
        return list({id(f.handle): f.handle.waiting_pods for f in self.frameworks.values()}.values())

    def reject_waiting(self, uid: str, plugin: str, message: str) -> bool:
        """Reject a pod waiting at Permit in the view (a no-op once it is decided);
        the decision goes to the waiting room as Decided. Whether the view held it."""
        held = False
        for view in self._waiting_views():
            wp = view.get(uid)
            if wp is not None:
                wp.reject(plugin, message)
                held = True
        return held

    def _permit_settled(self, uid: str, status: Status) -> None:
        """The waiting room ended a wait: its word replaces the view's, and the
        pod leaves the view plugins read."""
        for view in self._waiting_views():
            wp = view.remove(uid)
            if wp is not None:
                wp.settled(status)

    # --- metrics ---------------------------------------------------------------------------------

    def _timed_views(self, fwk: Framework, timer: Timer) -> tuple[Framework, Framework]:
        # The sink is the scheduler's for its life: its recorder itself, no closure's frame.
        return timed_frameworks(fwk, self.metrics, timer, self.metrics.plugin_execution)

