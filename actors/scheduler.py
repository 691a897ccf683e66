"""The Scheduler actor: the scheduling cycle, strictly one pod at a time.

It owns the Cache (nodes, bound and assumed pods) and its Snapshot, and a view of
the other objects plugins list (the informer caches). Store changes reach it as
messages and update the cache between cycles; it then offers them to the queue.
For each pod the queue hands it: refresh the snapshot, run the algorithm,
PostFilter on a FitError, assume, Reserve, Permit, and start the pod's binding
cycle; then ask for the next pod at once. Explain requests are messages too, so
they see the cache between two cycles, never inside one.

It holds refs to the other actors (queue, waiting room, store client), never
the actors: the queue gets Pop/Requeue/Move/... messages, the waiting room Park
and Reject messages. It owns the nominator (pods nominated to nodes by
preemption): every nomination starts here or in a pod change that reaches here
first, and the scheduling cycle reads it synchronously through the handle.
Binding cycles are its child tasks; they report their outcome as a BindingDone
message, and the cache is changed (forget, Unreserve) only by its own loop.

One failure path, as upstream's schedulingCycle: the cycle returns a Status
(`_cycle_failed` / `_cycle_succeeded`), and `handle_failure` (upstream's
FailureHandler) runs once for a failed attempt, from `_finish_cycle` when the
scheduling cycle failed or from `_binding_failed` when its binding cycle did.
An exception escaping a cycle is an InvariantBreach (the cache may be half
updated): the system stops cleanly instead of going on with it.

Metrics (actors.metrics_sink) are recorded where upstream's schedule_one.go
records them: an attempt's result and duration when it ends (scheduled after
Bind, unschedulable or error in the failure handler), extension point durations
through the profile's TimedFramework view, per-plugin durations on every
PLUGIN_SAMPLE_EVERY-th cycle, and preemption attempts and victims around PostFilter
(actors/scheduler_preemption.py, which also hands asynchronous preemptions to the
preemption actor).
"""
from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence, Union, assert_never

from actors.base import Actor, ActorRef, InvariantBreach, MailboxClosed, new_reply, reject, resolve
from actors.binding import AssumedPod, BindingCycles, undo_assume
from actors.clock import Clock
from actors.events import event_for
from actors.failure_reuse import FailureReuse, status_write_needed
from actors.explain_unbound import without_pod
from actors.extenders import explain_extenders
from actors.preemption import PreemptionMsg
from actors.scheduler_preemption import PreemptionStep
from actors.scheduler_views import (
    RECENT_BINDS,
    Attempt,
    GetAttempts,
    GetStats,
    SchedulerStats,
    StatsView,
    attempt_view,
)
from actors.framework_timing import PLUGIN_LISTS, Timer, TimedFramework
from actors.metrics_sink import ERROR, NO_METRICS, SCHEDULED, UNSCHEDULABLE, MetricsSink
from actors.queue.actor import Activate, AddPod, DeletePod, Done, Move, Pop, QueueMsg, Requeue, Unpop, UpdatePod
from actors.queue.nominator import Nominator
from actors.store import StoreClient, WatchEvent
from actors.store.messages import UpdatePodStatus
from actors.waiting_room import Park, Reject, WaitingRoomMsg
from framework.algorithm import (
    Diagnosis,
    FitError,
    KeptNodeToStatus,
    NoNodesAvailable,
    ScheduleResult,
    SchedulingAlgorithm,
    SchedulingError,
    explain,
)
from framework import batching
from framework.api.objects import Pod
from framework.cache import Cache, Snapshot
from framework.extender import Extender
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, QueuedPodInfo, Status
from framework.preemption import with_nominated_node_name
from framework.runtime import Framework
from framework.waiting import WaitingPod


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreChanged:
    event: WatchEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class Popped:
    qpi: QueuedPodInfo | None  # None: the queue closed


@dataclass(frozen=True, slots=True, kw_only=True)
class Explain:
    """A dry run of `pod` on the live cache (framework.algorithm.explain); the
    reply is its report. Nothing is assumed, reserved or written."""

    pod: Pod
    reply: asyncio.Future


@dataclass(frozen=True, slots=True, kw_only=True)
class BindingDone:
    """A binding cycle ended: Success (bound) or why it failed."""

    assumed: AssumedPod
    status: Status


SchedulerMsg = Union[StoreChanged, Popped, Explain, BindingDone, GetStats, GetAttempts]

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
        preemption: ActorRef[PreemptionMsg] | None = None,
    ) -> None:
        super().__init__()
        self.extenders = list(extenders)
        algorithm.extender_filters = any(e.config.is_filter() for e in self.extenders)
        algorithm.extender_prioritizers = any(e.config.is_prioritizer() for e in self.extenders)
        self._started = 0.0  # when the current scheduling cycle began (clock seconds)
        self.frameworks = frameworks
        self.queue = queue
        self.store = store
        self.waiting_room = waiting_room
        self.clock = clock
        self.algorithm = algorithm
        self.objects = objects
        self.record = record
        self.cache = Cache()
        self.snapshot = Snapshot()
        self.pending: dict[str, Pod] = {}  # unbound pods of our profiles, by key
        self.nominator = Nominator()
        self.attempts: dict[str, Attempt] = {}  # pod key -> its last attempt; read through GetAttempts
        self.stats = SchedulerStats()
        self.metrics = metrics
        self.plugin_sample_every = max(1, plugin_sample_every)
        self.preemption = PreemptionStep(self, preemption)
        # Per profile: the view every cycle runs, and the one sampled cycles run.
        self._views = {name: self._timed_views(fwk, timer) for name, fwk in frameworks.items()}
        self.bindings = BindingCycles(self, record, metrics=metrics, clock=clock, extenders=self.extenders)
        self._binding_group: asyncio.TaskGroup | None = None
        self._pop: asyncio.Future | None = None
        self._stopping = False
        for fwk in frameworks.values():
            self._connect(fwk.handle)
        # What a failed cycle's result depends on besides the pod (framework/failure_memo.py).
        self.reuse = FailureReuse(
            frameworks, lambda: (self.snapshot.generation, self.nominator.version, self.objects.revision),
            has_extenders=bool(self.extenders), enabled=reuse_failures, metrics=metrics)
        # OpportunisticBatching: same-signature pods reuse the last scored node list as a hint.
        algorithm.batching = batching.for_scheduler(frameworks, bool(self.extenders), clock.now,
                                                    lambda: self.stats.attempts, metrics)

    def _connect(self, handle: object) -> None:
        """Plugins' requests through the handle land in this actor's own methods."""
        if isinstance(handle, FrameworkHandle):
            handle.connect(nominator=self.nominator, activate=self.activate, evict=self.preemption.evict,
                           clear_nominations=self.preemption.clear_nominations,
                           start_preemption=self.preemption.start)

    # --- the loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:  # binding cycles; leaving it drains them
            self._binding_group = tg
            self._request_pop()
            await super().run()

    async def handle(self, msg: SchedulerMsg) -> None:
        if self.extenders:
            match msg:
                case Popped(qpi=qpi) if qpi is not None and not self._stopping:
                    try:
                        await self.schedule_one_with_extenders(qpi)
                    except Exception as e:  # noqa: BLE001 - reported as a breach with its cause
                        raise InvariantBreach(self.name, type(msg).__name__, repr(e)) from e
                    self._request_pop()
                    return
                case Explain(pod=pod, reply=reply):
                    await self._explain_with_extenders(pod, reply)
                    return
        self._handle(msg)
        self._close_when_drained()

    def idle(self) -> bool:
        popped_not_seen = self._pop is not None and self._pop.done()
        return super().idle() and not popped_not_seen and self.bindings.running == 0

    def stop(self) -> None:
        """No new cycles; messages already queued are still handled, and the
        inbox stays open until every binding cycle has reported back."""
        self._stopping = True
        self._close_when_drained()

    def _close_when_drained(self) -> None:
        if self._stopping and self.bindings.total == 0 and not self.inbox.closed:
            self.inbox.close(drain=True)

    def _request_pop(self) -> None:
        if self._stopping:
            return
        fut = new_reply()
        self._pop = fut
        if not self.queue.try_tell(Pop(reply=fut)):
            self._pop = None
            return

        def deliver(f: asyncio.Future) -> None:
            qpi = None if f.cancelled() or f.exception() is not None else f.result()
            try:
                self.tell(Popped(qpi=qpi))
            except MailboxClosed:
                if qpi is not None:
                    self.queue.try_tell(Unpop(qpi=qpi))
            finally:
                self._pop = None

        fut.add_done_callback(deliver)

    def _handle(self, msg: SchedulerMsg) -> None:
        match msg:
            case StoreChanged(event=ev):
                self._on_store_change(ev)
            case Explain(pod=pod, reply=reply):
                self._explain(pod, reply)
            case Popped(qpi=qpi):
                if qpi is None:
                    return
                if self._stopping:
                    self.queue.try_tell(Unpop(qpi=qpi))
                    return
                self._guarded(msg, lambda: self.schedule_one(qpi))
                self._request_pop()
            case BindingDone(assumed=a, status=status):
                self.bindings.total -= 1
                self._guarded(msg, lambda: self._binding_done(a, status))
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

    def _guarded(self, msg: SchedulerMsg, step: Callable[[], None]) -> None:
        """A cycle that raises leaves the cache (assumed pods, snapshot) in an
        unknown state: that is an invariant breach, not one failed message."""
        try:
            step()
        except Exception as e:  # noqa: BLE001 - reported as a breach with its cause
            raise InvariantBreach(self.name, type(msg).__name__, repr(e)) from e

    # --- the scheduling cycle ---------------------------------------------------------------------

    def schedule_one(self, qpi: QueuedPodInfo) -> None:
        """upstream's ScheduleOne: the scheduling cycle, then either the failure
        handler (once) or the binding cycle."""
        cycle = self._begin_cycle(qpi)
        if cycle is None:
            return
        fwk, state = cycle
        key = self.reuse.key(qpi.pod, bool(self.nominator.node_of(qpi.pod)))
        known = self.reuse.lookup(key) if key is not None else None
        if known is not None:
            self._finish_cycle(qpi, None, *self.reuse.replay(qpi, known, self.attempts[qpi.pod.key]))
            return
        evicted_before = self.preemption.victims
        try:
            result = self.algorithm.schedule_pod(fwk, state, qpi.pod, self.snapshot)
        except FitError as e:
            post = self.preemption.post_filter(fwk, state, qpi.pod, e)
            status, nominated = self._cycle_failed(fwk, state, qpi, e, post.nominated)
            if key is not None:
                self.reuse.remember(key, e, status.message(), nominated, post.preemption_ran,
                                    self.preemption.victims != evicted_before)
            self._finish_cycle(qpi, None, status, nominated)
            return
        except (NoNodesAvailable, SchedulingError) as e:
            self._finish_cycle(qpi, None, *self._cycle_failed(fwk, state, qpi, e))
            return
        self._finish_cycle(qpi, *self._cycle_succeeded(fwk, state, qpi, result))

    async def schedule_one_with_extenders(self, qpi: QueuedPodInfo) -> None:
        """schedule_one with the configured extenders: the cycle awaits their calls
        (each bounded by its httpTimeout); other messages wait in the inbox."""
        cycle = self._begin_cycle(qpi)
        if cycle is None:
            return
        fwk, state = cycle
        try:
            result = await self.algorithm.schedule(fwk, state, qpi.pod, self.snapshot, self.extenders)
        except FitError as e:
            post = await self.preemption.post_filter_with_extenders(fwk, state, qpi.pod, e)
            self._finish_cycle(qpi, None, *self._cycle_failed(fwk, state, qpi, e, post.nominated))
            return
        except (NoNodesAvailable, SchedulingError) as e:
            self._finish_cycle(qpi, None, *self._cycle_failed(fwk, state, qpi, e))
            return
        self._finish_cycle(qpi, *self._cycle_succeeded(fwk, state, qpi, result))

    def _finish_cycle(self, qpi: QueuedPodInfo, assumed: AssumedPod | None, status: Status,
                      nominated: str | None) -> None:
        """The one end of a scheduling cycle: the failure handler, or the pod's
        binding cycle."""
        if assumed is None:
            self.handle_failure(qpi, status, nominated, self._started)
            return
        assumed.started = self._started
        assert self._binding_group is not None
        self.bindings.total += 1
        self._binding_group.create_task(self.bindings.run(assumed))

    def _begin_cycle(self, qpi: QueuedPodInfo) -> tuple[Framework, CycleState] | None:
        pod = qpi.pod
        current = self.pending.get(pod.key)
        if current is None or current.is_deleting or self.cache.get_pod(pod.key) is not None:
            self.queue.try_tell(Done(pod_key=pod.key))  # deleted, already bound or assumed: nothing to do
            return None
        nominated = self.nominator.node_of(current)
        if nominated and current.nominated_node_name != nominated:
            # This scheduler nominated the pod and the store has not echoed the status
            # write yet: the cycle sees the pod as it is being stored, as upstream's
            # informer has it by then. Without this a preemptor retried meanwhile does
            # not look at its nominated node first and preempts a second one.
            current = with_nominated_node_name(current, nominated)
        qpi.pod = pod = current
        self._started = self.clock.now()
        self.stats.attempts += 1
        plain, sampled = self._views[pod.scheduler_name]
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
        if status.is_success():
            status, timeouts = fwk.run_permit(state, assumed, host)
            if status.is_wait():
                a.permit = self._park(fwk, assumed, host, timeouts)
                status = Status()
        if status.is_success():
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

    def _park(self, fwk: Framework, assumed: Pod, host: str, timeouts: dict[str, float]) -> asyncio.Future[Status]:
        """Permit said Wait: the pod joins the waiting pods plugins see at once
        (as upstream's RunPermitPlugins adds it), and the waiting room gets it by
        message to time it and resolve the returned Future with the decision."""
        now = self.clock.now()
        wp = WaitingPod(assumed, host, {p: now + t for p, t in timeouts.items()})
        decision: asyncio.Future[Status] = new_reply()
        fwk.handle.waiting_pods.add(wp)
        if not self.waiting_room.try_tell(Park(waiting=wp, timeouts=timeouts, decision=decision)):
            fwk.handle.waiting_pods.remove(assumed.uid)
            decision.set_result(Status(Code.Unschedulable, "scheduler is shutting down"))
        return decision

    # --- outcomes ---------------------------------------------------------------------------------

    def handle_failure(self, qpi: QueuedPodInfo, status: Status, nominated: str | None, started: float) -> None:
        """upstream's FailureHandler (handleSchedulingFailure): metrics, event,
        requeue, pod status; the one place a failed attempt ends.
        `started`: when the attempt's scheduling cycle began (clock seconds)."""
        pod = qpi.pod
        self.stats.failed += 1
        self._attempt_ended(pod, UNSCHEDULABLE if status.is_rejected() else ERROR, started)
        message = status.message()
        reason = "Unschedulable" if status.is_rejected() else "SchedulerError"
        self.store.record_event("Pod", pod.key, "Warning", "FailedScheduling", message, pod.meta.uid)
        if nominated:
            self.nominator.add(pod, nominated)
        elif nominated == "":
            self.nominator.delete(pod)
        self.queue.try_tell(Requeue(qpi=qpi))  # a stopped queue: the pod stays pending in the store
        condition = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}
        if status_write_needed(self.pending.get(pod.key, pod), condition, nominated):
            self._write_status(pod, condition, nominated)

    def _write_status(self, pod: Pod, condition: dict, nominated: str | None) -> None:
        self.store.send(UpdatePodStatus(namespace=pod.namespace, name=pod.name, uid=pod.meta.uid,
                                        condition=condition, nominated_node_name=nominated))

    def _binding_done(self, a: AssumedPod, status: Status) -> None:
        if status.is_success():
            self._binding_succeeded(a)
            return
        undo_assume(a, self.cache, self.record)
        self._binding_failed(a, status)

    def binding_done(self, a: AssumedPod, status: Status) -> None:
        """A binding cycle's outcome, as a message to this actor's loop."""
        try:
            self.tell(BindingDone(assumed=a, status=status))
        except MailboxClosed:  # stopped on a breach: the pod stays as the store has it
            pass

    def binding_cancelled(self, a: AssumedPod) -> None:
        """The scheduler's own task group is being cancelled (stop's grace period
        ran out), so no message can reach its loop: undo here, leave the pod queued."""
        undo_assume(a, self.cache, self.record)
        self._binding_failed(a, Status(Code.Error, "binding cycle cancelled"))

    def _binding_failed(self, a: AssumedPod, status: Status) -> None:
        qpi = a.qpi
        if qpi.pod.key not in self.pending:  # deleted meanwhile: nothing to requeue
            self._attempt_ended(qpi.pod, UNSCHEDULABLE if status.is_rejected() else ERROR, a.started)
            self.queue.try_tell(Done(pod_key=qpi.pod.key))
            return
        if status.is_rejected():
            qpi.unschedulable_plugins, qpi.pending_plugins = ({status.plugin} if status.plugin else set()), set()
        else:
            qpi.unschedulable_plugins, qpi.pending_plugins = set(), set()
        attempt = self.attempts.get(qpi.pod.key)
        if attempt is not None:
            attempt.result = None
        # Forgetting the assumed pod frees its resources, like a deleted pod. A
        # rejected pod is requeued first and left out of the move (it would only
        # fail again); an errored one is in flight during the move, as upstream.
        freed = event_for("Pod", "DELETED", a.pod, None)
        cycle = qpi.popped_cycle or None
        if status.is_rejected():
            self.handle_failure(qpi, status, None, a.started)
            self._offer(Move(event=freed, old=a.pod, new=None, pre_check=lambda p, uid=a.pod.uid: p.uid != uid,
                             after_cycle=cycle))
        else:
            self._offer(Move(event=freed, old=a.pod, new=None, after_cycle=cycle))
            self.handle_failure(qpi, status, None, a.started)

    def _binding_succeeded(self, a: AssumedPod) -> None:
        pod = a.pod
        self.stats.scheduled += 1
        self._attempt_ended(pod, SCHEDULED, a.started)
        if a.qpi.initial_attempt_timestamp is not None:
            self.stats.latencies.append(self.clock.now() - a.qpi.initial_attempt_timestamp / 1e9)
        self.stats.bind_latencies.append(self.clock.now() - a.assumed_at)
        self.store.record_event("Pod", pod.key, "Normal", "Scheduled",
                                f"Successfully assigned {pod.namespace}/{pod.name} to {a.node_name}", pod.meta.uid)
        a.fwk.run_post_bind(a.state, pod, a.node_name)
        self.queue.try_tell(Done(pod_key=pod.key))
        if self.record is not None:
            self.record(f"bound:{pod.name}")

    # --- metrics and explain ---------------------------------------------------------------------

    def _timed_views(self, fwk: Framework, timer: Timer) -> tuple[TimedFramework, TimedFramework]:
        def plain(plugin: str, point: str, status: str, seconds: float) -> None:
            return None

        def sampled(plugin: str, point: str, status: str, seconds: float) -> None:
            self.metrics.plugin_execution(plugin, point, status, seconds)

        return (TimedFramework.of(fwk, self.metrics, timer, plugin_record=plain, proxied=()),
                TimedFramework.of(fwk, self.metrics, timer, plugin_record=sampled, proxied=tuple(PLUGIN_LISTS)))

    def _attempt_ended(self, pod: Pod, result: str, started: float) -> None:
        self.metrics.schedule_attempt(result, pod.scheduler_name, max(0.0, self.clock.now() - started))

    def _explain(self, pod: Pod, reply: asyncio.Future) -> None:
        """The cache as the next cycle would see it, on the profile's own Framework,
        without the pod itself (actors/explain_unbound.py)."""
        with without_pod(self.cache, pod.key):
            report = self._explain_report(pod, reply)
        self.cache.update_snapshot(self.snapshot)
        if report is not None:
            resolve(reply, report)

    async def _explain_with_extenders(self, pod: Pod, reply: asyncio.Future) -> None:
        """Explain, then each interested extender's verdicts and scores beside the plugins'."""
        try:
            with without_pod(self.cache, pod.key):
                report = self._explain_report(pod, reply)
                if report is None:
                    return
                await explain_extenders(report, self.extenders, pod, self.snapshot)
        except Exception as e:  # noqa: BLE001 - the asker gets the failure; the actor carries on
            reject(reply, e)
            return
        finally:
            self.cache.update_snapshot(self.snapshot)
        resolve(reply, report)

    def _explain_report(self, pod: Pod, reply: asyncio.Future) -> dict[str, Any] | None:
        fwk = self.frameworks.get(pod.scheduler_name)
        if fwk is None:
            reject(reply, KeyError(f"no profile named {pod.scheduler_name!r}"))
            return None
        # A bound (or assumed) pod is explained as if it were not bound yet: it is
        # taken off its node for this dry run and put back before any other message
        # (nothing here awaits); its node is dirty, so the next cycle's snapshot has it.
        placed = self.cache.get_pod(pod.key)
        assumed = placed is not None and self.cache.is_assumed(placed)
        if placed is not None:
            self.cache.remove_pod(placed)
        self.cache.update_snapshot(self.snapshot)
        previous = fwk.handle.snapshot()
        try:
            # An exception fails this ask only (actors.base): the cache is only read.
            return explain(fwk, pod, self.snapshot)
        finally:
            fwk.handle.set_snapshot(previous)
            if placed is not None:
                if assumed:
                    self.cache.assume_pod(placed, placed.node_name)
                else:
                    self.cache.add_pod(placed)

    # --- plugins' requests through the handle -----------------------------------------------------

    def activate(self, pods: list[Pod]) -> None:
        self.queue.try_tell(Activate(pods=tuple(pods)))

    # --- cluster events ----------------------------------------------------------------------------

    def _offer(self, msg: QueueMsg) -> None:
        self.queue.try_tell(msg)

    def _on_store_change(self, ev: WatchEvent) -> None:
        if ev.kind == "Pod":
            self._on_pod_change(ev)
            return
        if ev.type == "DELETED":
            self.objects.delete(ev.kind, ev.obj.key)
        else:
            self.objects.put(ev.obj)
        if ev.kind == "Node":
            if ev.type == "DELETED":
                self.cache.remove_node(ev.obj.name)
            else:
                self.cache.add_node(ev.obj)  # type: ignore[arg-type]
        cluster_event = event_for(ev.kind, ev.type, ev.old, None if ev.type == "DELETED" else ev.obj)
        if cluster_event is not None:
            self._offer(Move(event=cluster_event, old=ev.old, new=None if ev.type == "DELETED" else ev.obj))

    def _on_pod_change(self, ev: WatchEvent) -> None:
        pod: Pod = ev.obj  # type: ignore[assignment]
        old: Pod | None = ev.old  # type: ignore[assignment]
        if ev.type == "DELETED":
            self.objects.delete("Pod", pod.key)
            self.pending.pop(pod.key, None)
            self.attempts.pop(pod.key, None)
            self.nominator.delete(pod)
            self.waiting_room.try_tell(Reject(uid=pod.uid, plugin="", message="pod deleted"))
            if pod.node_name:
                self.cache.remove_pod(pod)
                self._offer(Move(event=event_for("Pod", "DELETED", pod, None), old=pod, new=None))
            else:
                self._offer(DeletePod(pod=pod))  # type: ignore[arg-type]
            return
        self.objects.put(pod)
        if pod.node_name:
            was_pending = self.pending.pop(pod.key, None) is not None
            if pod.is_terminal:
                self.cache.remove_pod(pod)
                self._offer(Move(event=event_for("Pod", "DELETED", pod, None), old=pod, new=None))
                return
            assigned_before = old is not None and bool(old.node_name)
            self.cache.add_pod(pod) if not assigned_before else self.cache.update_pod(pod)
            if was_pending:
                self.nominator.delete(pod)
                self._offer(DeletePod(pod=pod))  # type: ignore[arg-type]
            if not assigned_before:
                self._offer(Move(event=event_for("Pod", "ADDED", None, pod), old=None, new=pod, cross_topology_only=True))
            else:
                ce = event_for("Pod", "MODIFIED", old, pod)
                if ce is not None:
                    scale_down = bool(ce.action & ce.action.UpdatePodScaleDown)
                    self._offer(Move(event=ce, old=old, new=pod, cross_topology_only=not scale_down))
            return
        if pod.scheduler_name not in self.frameworks or pod.is_terminal:
            return
        known = pod.key in self.pending
        self.pending[pod.key] = pod
        if pod.nominated_node_name:
            self.nominator.add(pod, pod.nominated_node_name)
        elif old is not None and old.nominated_node_name and self.nominator.node_of(pod) == old.nominated_node_name:
            self.nominator.delete(pod)  # cleared in the store (asynchronous preemption clears it there)
        if known:
            self._offer(UpdatePod(old=old, new=pod))  # type: ignore[arg-type]
        else:
            self._offer(AddPod(pod=pod))  # type: ignore[arg-type]

