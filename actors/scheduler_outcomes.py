"""How an attempt ends, in the Scheduler actor's loop: the failure handler
(upstream's FailureHandler), a binding cycle's outcome (BindingDone: PostBind, or
Unreserve + forget + the failure handler) and the attempt's metrics.

A binding cycle whose outcome finds the BindingDone of an earlier one still last in
the Scheduler's inbox joins it (a group's members, whose Binds the store answered in
one turn, end one after another): the loop handles them as it would have handled
consecutive messages, and the queue hears the pods bound among them in one Done.

A part of the Scheduler (actors/scheduler.py), given the Scheduler's own queue ref,
store client, clock, metrics, nominator, stats, cache, pending pods, attempts, cluster
events and mailbox (the same objects; the Scheduler never rebinds them): only the
scheduler's own loop runs it. The one exception is `binding_cancelled`, run when
the loop itself is being cancelled (docs/decisions.md).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from actors.base import ActorRef, Mailbox, MailboxClosed
from actors.binding import AssumedPod, undo_assume
from actors.clock import Clock
from actors.events import event_for
from actors.failure_reuse import status_write_needed
from actors.metrics_sink import ERROR, SCHEDULED, UNSCHEDULABLE, MetricsSink
from actors.queue.actor import Assumed, Done, Move, QueueMsg, Requeue
from actors.queue.handover import handed_over
from actors.queue.nominator import Nominator
from actors.scheduler_messages import BindingDone
from actors.scheduler_views import SchedulerStats
from actors.store import StoreClient
from actors.store.messages import UpdatePodStatus
from framework.api.objects import Pod
from framework.cache import Cache
from framework.interface import Code, QueuedPodInfo, Status

_SUCCESS = Code.Success

if TYPE_CHECKING:
    from actors.scheduler_events import ClusterEvents
    from actors.scheduler_views import Attempt


class Outcomes:
    def __init__(self, *, queue: ActorRef[QueueMsg], store: StoreClient, clock: Clock, metrics: MetricsSink,
                 nominator: Nominator, stats: SchedulerStats, cache: Cache, pending: dict[str, Pod],
                 attempts: "dict[str, Attempt]", events: "ClusterEvents", record: Callable[[str], None] | None,
                 inbox: Mailbox) -> None:
        self.queue = queue
        self.store = store
        self.clock = clock
        self.metrics = metrics
        self.nominator = nominator
        self.stats = stats
        self.cache = cache
        self.pending = pending
        self.attempts = attempts
        self.events = events
        self.record = record
        self.inbox = inbox  # the Scheduler's own: a BindingDone still last in it takes the next outcome

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
            # A failure that nominated (preemption chose victims) changed the cluster:
            # its equivalence class's next pod follows, as after an assume, rather
            # than sleeping on a failure its own retry would not repeat.
            self.queue.try_tell(Assumed(pod_keys=(pod.key,)))
        elif nominated == "":
            self.nominator.delete(pod)
        # A copy: the queue owns what it is sent; a stopped queue leaves the pod pending in the store.
        self.queue.try_tell(Requeue(qpi=handed_over(qpi)))
        condition = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}
        if status_write_needed(self.pending.get(pod.key, pod), condition, nominated):
            self._write_status(pod, condition, nominated)

    def _write_status(self, pod: Pod, condition: dict, nominated: str | None) -> None:
        self.store.send(UpdatePodStatus(namespace=pod.namespace, name=pod.name, uid=pod.meta.uid,
                                        condition=condition, nominated_node_name=nominated))

    def finish_bindings(self, ended: list[tuple[AssumedPod, Status]]) -> None:
        """A BindingDone the Scheduler's loop took, cycle by cycle in the order they ended:
        PostBind, or undo and the failure handler. The pods bound go to the queue in one
        Done, sent before any other message a failure among them sends the queue (the
        order one Done per pod gave). A pod no longer pending needs none: the store
        event that took it out (bound, or deleted) already sent the queue its DeletePod,
        which ends its attempt as Done would (SchedulingQueue.delete), and which the
        queue takes first; a Done after it changes nothing."""
        bound: list[str] = []
        for a, status in ended:
            if status.code == _SUCCESS:  # (is_success's, in place)
                self._binding_succeeded(a)
                if a.pod.key in self.pending:
                    bound.append(a.pod.key)
                continue
            self._tell_done(bound)
            undo_assume(a, self.cache, self.record)
            self._binding_failed(a, status)
        self._tell_done(bound)

    def _tell_done(self, keys: list[str]) -> None:
        if keys:
            self.queue.try_tell(Done(pod_keys=tuple(keys)))
            keys.clear()

    def binding_done(self, a: AssumedPod, status: Status) -> None:
        """A binding cycle's outcome, as a message to this actor's loop: added to the
        BindingDone last in the inbox when there is one (nothing was queued after it,
        so the loop's order is that of one message per outcome), else a new one."""
        items = self.inbox._items  # (Mailbox.tail's work in place: a frame a pod fewer)
        if items and type(items[-1]) is BindingDone:  # (no message type subclasses BindingDone)
            items[-1].outcomes.append((a, status))
            return
        try:
            self.inbox.put(BindingDone(outcomes=[(a, status)]))  # (the Scheduler's tell, in place; read now)
        except MailboxClosed:  # stopped on a breach: the pod stays as the store has it
            pass

    def binding_cancelled(self, a: AssumedPod) -> None:
        """The scheduler's own loop is being cancelled (it did not end after its
        binding cycles were cancelled), so no message can reach it: undo here,
        leave the pod queued."""
        undo_assume(a, self.cache, self.record)
        self._binding_failed(a, Status(Code.Error, "binding cycle cancelled"))

    def _binding_failed(self, a: AssumedPod, status: Status) -> None:
        qpi = a.qpi
        if qpi.pod.key not in self.pending:  # deleted meanwhile: nothing to requeue
            self._attempt_ended(qpi.pod, UNSCHEDULABLE if status.is_rejected() else ERROR, a.started)
            self.queue.try_tell(Done(pod_keys=(qpi.pod.key,)))
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
            self.events.offer(Move(event=freed, old=a.pod, new=None, pre_check=lambda p, uid=a.pod.uid: p.uid != uid,
                             after_cycle=cycle))
        else:
            self.events.offer(Move(event=freed, old=a.pod, new=None, after_cycle=cycle))
            self.handle_failure(qpi, status, None, a.started)

    def _binding_succeeded(self, a: AssumedPod) -> None:
        pod = a.pod
        self.stats.scheduled += 1
        now = self.clock.now()  # one reading for the attempt's duration and both latencies
        self.metrics.schedule_attempt(SCHEDULED, pod.scheduler_name, max(0.0, now - a.started))  # (_attempt_ended's)
        if a.qpi.initial_attempt_timestamp is not None:
            self.stats.latencies.append(now - a.qpi.initial_attempt_timestamp / 1e9)
        self.stats.bind_latencies.append(now - a.assumed_at)
        # Written with the binding when the pipeline's binder carried it (StoreClient.record_scheduled).
        self.store.record_scheduled(pod.namespace, pod.name, a.node_name, pod.meta.uid)
        a.fwk.run_post_bind(a.state, pod, a.node_name)
        if self.record is not None:
            self.record(f"bound:{pod.name}")

    def _attempt_ended(self, pod: Pod, result: str, started: float, now: float | None = None) -> None:
        now = self.clock.now() if now is None else now
        self.metrics.schedule_attempt(result, pod.scheduler_name, max(0.0, now - started))
