"""The running system in one process: store, waiting room, queue and scheduler.

Started in dependency order in one TaskGroup and stopped in reverse, in named
phases: stop the queue handing out pods, finish the current cycle, reject Permit
waiters, drain binding cycles, stop the queue, flush the store. After stop() no
task is left and every pod is either bound in the store or back in the queue.

The pipeline is the supervisor: actors reach each other only through refs it
hands out. An actor that reports an InvariantBreach makes the pipeline `broken`
(its reason in `breach`, the `broken_event` set); whoever runs it (the daemon)
then stops it cleanly, so the store is flushed, and exits non-zero.

Used by tests (with FakeClock: `run_until_quiescent`), by the conformance scenario
driver, by `ksched bench`, and by the daemon (transport) around its listeners.
The daemon passes its metrics (an actors.metrics_sink.MetricsSink); the queue and
the scheduler record into it. Without one nothing is recorded.
"""
from __future__ import annotations

import asyncio
import itertools
import random
from typing import Any, Awaitable, Callable, Iterable, Mapping

from actors.base import InvariantBreach, MailboxClosed, new_reply
from actors.extenders import build_extenders, close_extenders
from actors.admission import AdmissionActor, AdmissionConfig
from actors.clock import Clock, FakeClock, RealClock
from actors.metrics_sink import NO_METRICS, MetricsSink
from actors.store.write_chain import STRICT, WriteRules
from actors.podgroup_status_writer import PodGroupStatusWriter
from actors.resourceclaims import ResourceClaimController
from actors.preemption import PreemptionActor
from actors.queue.class_rules import CLASSES_GATE, ClassRules
from actors.queue.scheduling_queue import SchedulingQueue
from actors.queue.actor import Counts, HoldPops, QueueActor
from actors.queue.group_pop import GANG_PLUGIN, gang_members
from actors.quiet_events import QuietEvents
from actors.scheduler import Scheduler
from actors.scheduler_views import GetAttempts, AttemptView, GetStats, StatsView
from actors.store import Store, WatchEvent
from actors.store.backend import StoreBackend
from actors.store.event_hold import EVENT_HOLD_SECONDS
from actors.store.limits import StoreLimits
from actors.store import StoreClient
from actors.waiting_room import WaitingRoom, WaitingSnapshot, list_waiting
from framework.algorithm import SchedulingAlgorithm
from framework.bind_writes import StatusWrite, Update as BindUpdate
from framework.api.objects import KINDS, Pod
from framework.config import SchedulerConfig, build_frameworks, load_config
from framework.extender import EXTENDER_NAME
from framework.features import FeatureGates
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import ActionType, ClusterEvent, ClusterEventWithHint
from framework.plugins import Registry
from framework.plugins.queuesort.priority_sort import PrioritySort
from framework.preemption_inflight import InFlightPreemptions
from framework.runtime import Framework
from framework.waiting import WaitingPodsMap

SETTLE_ROUNDS = 100_000
MAX_QUIESCENT_SECONDS = 15 * 60
# How long stop waits, after cancelling the binding cycles, for the scheduler loop to
# handle their outcomes before it cancels the loop itself (a bound, not a pause).
CANCELLED_BINDINGS_SECONDS = 5.0


# The extension points at which a plugin can reject a pod: only such plugins' events
# count, and such a plugin without EnqueueExtensions cares about every event
# (upstream's shouldHaveEnqueueExtensions / fillEnqueueExtensions).
_REJECTING_POINTS = ("pre_enqueue", "pre_filter", "filter", "reserve", "permit")


def events_with_defaults(fwk: Framework) -> dict[str, list[ClusterEventWithHint]]:
    """Plugin -> registered events, for the plugins that can reject a pod
    (upstream's buildQueueingHintMap over the profile's EnqueueExtensions)."""
    registered = fwk.events_to_register()
    events: dict[str, list[ClusterEventWithHint]] = {}
    for name, plugin in fwk.plugins.items():
        if not any(hasattr(plugin, point) for point in _REJECTING_POINTS):
            continue
        events[name] = registered.get(name) or [] if hasattr(plugin, "events_to_register") else [
            ClusterEventWithHint(ClusterEvent("*", ActionType.All, "WildCard"))]
    return events


class Pipeline:
    def __init__(
        self,
        config: SchedulerConfig | Mapping[str, Any] | str | None = None,
        *,
        clock: Clock | None = None,
        backend: StoreBackend | None = None,
        registry: Registry | None = None,
        rand: random.Random | None = None,
        record: Callable[[str], None] | None = None,
        drain_grace_seconds: float = 30.0,
        metrics: MetricsSink | None = None,
        write_rules: WriteRules = STRICT,
        store_class: type[Store] = Store,
        store_limits: StoreLimits | None = None,
        reuse_failures: bool = True,
        queue_classes: bool = True,
        incremental_failures: bool = True,
        admission: AdmissionConfig | None = None,
    ) -> None:
        self.config = config if isinstance(config, SchedulerConfig) else load_config(config)
        self.clock: Clock = clock if clock is not None else RealClock()
        self._backend = backend
        self._registry = registry
        self._rand = rand if rand is not None else random.Random()
        self._record = record
        self.drain_grace_seconds = drain_grace_seconds
        self.metrics: MetricsSink = metrics if metrics is not None else NO_METRICS
        self.write_rules = write_rules  # the store's write chain knobs (actors/store/write_chain.py)
        self._store_class = store_class  # SharedStore over etcd (actors.store.shared)
        self.store_limits = store_limits
        self.reuse_failures = reuse_failures  # failure reuse (actors/failure_reuse.py); off to measure
        # Equivalence classes in the unschedulable pool (actors/queue/pod_classes.py);
        # off: every pod is woken and retried alone, as upstream (the differential test).
        self.queue_classes = queue_classes
        # A class's retry re-filters only the nodes changed since its last failure
        # (framework/incremental_failure.py); off: every retry filters every node.
        self.incremental_failures = incremental_failures
        self.admission_config = admission or AdmissionConfig()
        self.phase = "new"
        self._tg: asyncio.TaskGroup | None = None
        self._tasks: dict[str, asyncio.Task] = {}
        self.breach: InvariantBreach | None = None
        self.broken_event = asyncio.Event()
        self.on_broken: Callable[[InvariantBreach], None] | None = None  # the daemon stops on it

    # --- start / stop -------------------------------------------------------------------------------

    async def __aenter__(self) -> "Pipeline":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        cfg = self.config
        self._tg = asyncio.TaskGroup()
        await self._tg.__aenter__()
        try:
            self.store = self._store_class(self._backend, clock=self.clock.now, rules=self.write_rules,
                                           limits=self.store_limits, work_time=self.clock.work_time,
                                           timers=self.clock, event_hold_seconds=EVENT_HOLD_SECONDS)
            self.store.features = FeatureGates(cfg.feature_gates)  # what the gates let in (actors.store.gates)
            await self.store.load()
            self.client = StoreClient(self.store)
            self._spawn("store", self.store.run())

            # The scheduler's view of who waits at Permit (plugins read it in the
            # cycle); the waiting room owns the waits and updates it by message.
            waiting_pods = WaitingPodsMap()
            self.waiting_room = WaitingRoom(self.clock)
            self._spawn("waiting-room", self.waiting_room.run())

            # The scheduler plugs its nominator and requests in (Scheduler.__init__).
            self.objects = InMemoryObjects()
            in_flight = InFlightPreemptions()
            self.handle = FrameworkHandle(
                objects=self.objects,
                waiting_pods=waiting_pods,
                clock=self.clock.now,
                features=FeatureGates(cfg.feature_gates),
                rand=self._rand,
                binder=self._bind,
                preemptions=in_flight,
                updater=self._update_object,
                binder_with_updates=self._bind_with_updates,
                pod_backoff_seconds=(cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds),
            )
            self.frameworks: dict[str, Framework] = build_frameworks(cfg, self.handle, self._registry)
            self.extenders = build_extenders(cfg.extenders)  # one HTTP connection pool each
            self.handle.group_cycle = not self.extenders
            # A gang pops with its queued members for the whole-group cycle (not with extenders:
            # their calls suspend, so such gangs keep the pod-by-pod path).
            gangs = {name: any(pl.name == GANG_PLUGIN for pl in f.binding.permit_plugins) for name, f in self.frameworks.items()}
            self.queue = QueueActor(self._new_queue(), self.clock, self.metrics, preemptions=in_flight,
                                    group_members=None if self.extenders else gang_members(self.objects, gangs))
            self._spawn("queue", self.queue.run())
            self.store.hold_scheduling = self._hold_pops
            # Evictions of asynchronous preemption (SchedulerAsyncPreemption).
            self.preemption = PreemptionActor(store=self.client,
                                              waiting_room=self.waiting_room.ref(), queue=self.queue.ref())
            self._spawn("preemption", self.preemption.run())

            self.scheduler = Scheduler(
                frameworks=self.frameworks, queue=self.queue.ref(), store=self.client,
                waiting_room=self.waiting_room.ref(),
                clock=self.clock, algorithm=SchedulingAlgorithm(self._rand, cfg.percentage_of_nodes_to_score),
                objects=self.objects, record=self._record, metrics=self.metrics,
                extenders=self.extenders, reuse_failures=self.reuse_failures,
                incremental_failures=self.incremental_failures,
                preemption=self.preemption.ref(),
            )
            hints = self._queue_hints  # the queue's own (_new_queue): the events it would ignore are not sent
            self.scheduler.events.quiet = QuietEvents(lambda pod: hints.get(pod.scheduler_name, {}), hints.values())
            self._spawn("scheduler", self.scheduler.run())
            # Every kind but Events: the scheduler reads none, and there is one per binding.
            # Early: told of a turn when it is handed to the disk (actors/store/premise.py).
            await self.client.watch(self._to_scheduler, kinds=frozenset(k for k in KINDS if k != "Event"), early=True)

            # PodGroup status (phase, counts, why a gang waits), written back to the store.
            self.podgroup_status = await PodGroupStatusWriter.attach(self.client, self.list_waiting, self.clock.now)
            self.podgroup_status.wall_clock = self.clock.now  # the real clock is wall time
            tick = None if isinstance(self.clock, FakeClock) else 1.0
            self._spawn("podgroup-status", self.podgroup_status.run(tick))

            # Kueue's admission layer: queued pods wait gated until their Workload is admitted.
            self.admission = await AdmissionActor.attach(self.client, self.clock, self.admission_config,
                                                         getattr(self.metrics, "kueue", None))
            self._spawn("admission", self.admission.run())

            # The resourceclaim controller: a claim per pod from its template, released and deleted with it.
            self.resourceclaims = await ResourceClaimController.attach(self.client)
            self._spawn("resourceclaims", self.resourceclaims.run())
            self.phase = "running"
        except BaseException:
            await self.stop()
            raise

    def _new_queue(self) -> SchedulingQueue:
        fwks = self.frameworks
        first = next(iter(fwks.values()))
        hints = self._queue_hints = {name: events_with_defaults(f) for name, f in fwks.items()}
        if self.extenders:
            # Extenders register no events: a pod they rejected ("Extender" among its
            # unschedulable plugins) is worth retrying on any event (upstream's
            # defaultEnqueueExtension for framework.ExtenderName).
            for per_plugin in hints.values():
                per_plugin[EXTENDER_NAME] = [ClusterEventWithHint(ClusterEvent("*", ActionType.All, "WildCard"))]

        def pre_enqueue(pod: Pod):  # noqa: ANN202
            f = fwks.get(pod.scheduler_name, first)
            return f.run_pre_enqueue(pod)

        classes = self.queue_classes and self.handle.features.enabled(CLASSES_GATE)
        rules = ClassRules(fwks, bool(self.extenders)) if classes else None

        return SchedulingQueue(
            less=first.queue_sort_less,
            sort_plugin=first.queue_sort_name(),
            pre_enqueue=pre_enqueue,
            gate_holds=lambda pod, plugin: fwks.get(pod.scheduler_name, first).pre_enqueue_gate_holds(pod, plugin),
            hints_for=lambda pod: hints.get(pod.scheduler_name, {}),
            hint_maps=list(hints.values()),
            initial_backoff_seconds=self.config.pod_initial_backoff_seconds,
            max_backoff_seconds=self.config.pod_max_backoff_seconds,
            pop_from_backoff_q=self.handle.features.enabled("SchedulerPopFromBackoffQ"),
            sort_generation=(lambda: first.queue_sort_plugin.sort_generation)
            if hasattr(first.queue_sort_plugin, "sort_generation") else None,
            keep_nominations=False,  # the Scheduler actor owns the nominator
            class_key=rules.class_key if rules is not None else None,
            monotone=rules.monotone if rules is not None else None,
            by_priority=type(first.queue_sort_plugin) is PrioritySort,
        )

    def _spawn(self, phase: str, coro: Any) -> None:
        assert self._tg is not None
        actor = {"store": "store", "waiting-room": "waiting_room", "queue": "queue", "preemption": "preemption",
                 "scheduler": "scheduler", "admission": "admission"}.get(phase)
        if actor is not None:
            getattr(self, actor).on_breach = self._on_breach
        self._tasks[phase] = self._tg.create_task(coro, name=f"ksched-{phase}")
        self.phase = f"started:{phase}"

    @property
    def broken(self) -> bool:
        return self.breach is not None

    def _on_breach(self, breach: InvariantBreach) -> None:
        """An actor stopped on a breach: the system cannot go on. Whoever runs the
        pipeline awaits `broken_event` and stops it (store flushed)."""
        if self.breach is None:
            self.breach = breach
            if self.on_broken is not None:
                self.on_broken(breach)
        self.broken_event.set()

    def _hold_pops(self, held: bool) -> None:
        """The store's word around a bulk apply's turn, to the queue (HoldPops)."""
        self.queue.ref().try_tell(HoldPops(held=held))

    def _to_scheduler(self, ev: WatchEvent) -> None:
        self.scheduler.store_changed(ev)

    def _bind(self, pod: Pod, node_name: str) -> Awaitable[Any]:
        # The Scheduled event rides with the binding's write (messages.Bind) when the pod has a uid.
        # The client's coroutine itself, which the handle awaits (no frame of this one's to resume);
        # the handle's `await self._binder(...)` discards its result, as it discarded this one's None.
        return self.client.bind(pod.namespace, pod.name, node_name, pod.meta.uid, scheduled_event=bool(pod.meta.uid))

    async def _update_object(self, obj: BindUpdate) -> dict[str, Any]:
        """The framework's object writes (DynamicResources' claims): a StatusWrite as the
        status subresource takes it (the plugin sends its finalizer in an Update first)."""
        if isinstance(obj, StatusWrite):
            return await self.client.update_status(obj.as_object())
        return await self.client.update(obj)

    async def _bind_with_updates(self, pod: Pod, node_name: str, updates: list[BindUpdate]) -> list[dict[str, Any]]:
        stored, _ = await self.client.bind_with_updates(pod.namespace, pod.name, node_name, pod.meta.uid, updates,
                                                        scheduled_event=bool(pod.meta.uid))
        return stored

    async def stop(self) -> None:
        """Graceful stop, phase by phase; safe to call twice."""
        if self._tg is None:
            return
        tg, self._tg = self._tg, None
        self.phase = "stopping:queue"
        if "queue" in self._tasks:
            self.queue.stop_popping()
        self.phase = "stopping:scheduler"
        if "scheduler" in self._tasks:
            self.scheduler.stop()  # the current cycle finishes; no new one starts
        self.phase = "stopping:waiting-room"
        if "waiting-room" in self._tasks:
            self.waiting_room.stop()  # waiters are rejected: their cycles undo and requeue
        self.phase = "stopping:binding"
        sched = self._tasks.get("scheduler")
        if sched is not None:
            done, _ = await asyncio.wait({sched}, timeout=self.drain_grace_seconds)
            if not done:
                # Cancelled cycles report by message; the scheduler's loop undoes and requeues.
                self.scheduler.cancel_bindings()
                done, _ = await asyncio.wait({sched}, timeout=CANCELLED_BINDINGS_SECONDS)
            if not done:
                sched.cancel()  # its loop is stuck: cancelled cycles undo in place and requeue
                await asyncio.wait({sched})
        preemption = self._tasks.get("preemption")
        if preemption is not None:
            self.phase = "stopping:preemption"
            self.preemption.stop()  # no cycle is left to start one; running evictions finish
            await asyncio.wait({preemption}, timeout=self.drain_grace_seconds)
        if "queue" in self._tasks:
            self.queue.stop()  # requeues from the drained cycles are in its inbox
        admission = self._tasks.get("admission")
        if admission is not None:
            self.admission.close()  # its store writes finish before the store stops
            await asyncio.wait({admission}, timeout=self.drain_grace_seconds)
        claims = self._tasks.get("resourceclaims")
        if claims is not None:
            self.resourceclaims.close()  # its store writes finish before the store stops
            await asyncio.wait({claims}, timeout=self.drain_grace_seconds)
        writer = self._tasks.get("podgroup-status")
        if writer is not None:
            self.podgroup_status.close()
            await asyncio.wait({writer}, timeout=self.drain_grace_seconds)
        self.phase = "stopping:store"
        if "store" in self._tasks:
            self.store.release_events()  # events waiting for a write go with what is queued
            self.store.inbox.close(drain=True)  # flush what is queued, then stop
        try:
            await tg.__aexit__(None, None, None)
        finally:
            await close_extenders(getattr(self, "extenders", []))
            if "store" in self._tasks:
                await self.store.close()
            self.phase = "stopped"

    async def run(self, stop: asyncio.Event) -> None:
        """For a daemon: start, run until `stop` is set, stop gracefully."""
        async with self:
            await stop.wait()

    # --- driving and observing -----------------------------------------------------------------------

    def idle(self) -> bool:
        """Nothing queued anywhere and no cycle doing work (pods parked at Permit,
        in backoff or unschedulable are not work)."""
        return self.store.idle() and self._others_idle()

    def _others_idle(self) -> bool:
        return (self.queue.idle() and self.waiting_room.idle()
                and self.scheduler.idle() and self.preemption.idle()
                and ("podgroup-status" not in self._tasks or self.podgroup_status.idle())
                and ("admission" not in self._tasks or self.admission.idle())
                and ("resourceclaims" not in self._tasks or self.resourceclaims.idle()))

    async def settle(self, max_rounds: int | None = SETTLE_ROUNDS) -> None:
        """Let the actors run until the system is idle (no time passes on a
        FakeClock). None: no bound on the rounds (real clock, large runs)."""
        calm = 0
        rounds = itertools.count() if max_rounds is None else range(max_rounds)
        for _ in rounds:
            if self.idle():
                calm += 1
                if calm >= 3:
                    return
            else:
                calm = 0
                if not self.store.idle() and self._others_idle():
                    self.store.release_events()  # events waiting for a write: nothing else will come
                done = self.store.commit_done()
                if done is not None:  # the backend's own work (a thread for SQLite): await it
                    await done
            await asyncio.sleep(0)
        raise RuntimeError("pipeline did not settle")

    async def run_until_quiescent(self, max_seconds: float = MAX_QUIESCENT_SECONDS) -> float:
        """With a FakeClock: settle, then jump to the next timer, until nothing is
        due within `max_seconds` of now. Returns the simulated seconds spent."""
        clock = self.clock
        assert isinstance(clock, FakeClock), "run_until_quiescent needs a FakeClock"
        start = clock.now()
        while True:
            await self.settle()
            due = clock.next_deadline()
            if due is None or due > start + max_seconds:
                return clock.now() - start
            clock.advance_to(due)

    async def scheduler_stats(self, latencies: bool = False) -> StatsView:
        """The scheduler's counters, asked of the scheduler (zeros once it has stopped);
        `latencies`: with every latency it keeps."""
        try:
            return await self.scheduler.ref().ask(GetStats(reply=new_reply(), latencies=latencies))
        except MailboxClosed:
            return StatsView(0, 0, 0, 0)

    async def attempts(self, keys: Iterable[str]) -> dict[str, AttemptView]:
        """What the last attempt of each of these pods produced, asked of the scheduler."""
        return await self.scheduler.ref().ask(GetAttempts(keys=tuple(keys), reply=new_reply()))

    async def list_waiting(self) -> tuple[WaitingSnapshot, ...]:
        """Who waits at Permit now, asked of the waiting room."""
        return await list_waiting(self.waiting_room.ref())

    async def pending_counts(self) -> dict[str, int]:
        try:
            return await self.queue.ref().ask(Counts(reply=new_reply()))
        except MailboxClosed:
            return self.queue.pending_counts()
