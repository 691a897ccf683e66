"""The Queue actor: owns a SchedulingQueue and runs its timed work on the clock.

Others hold its ActorRef and send it messages. The scheduler asks for the next
pod with Pop; the reply comes as soon as activeQ has a pod (one outstanding Pop
at a time). A QueueSort or PreEnqueue plugin that raises is an Error for the pods
it concerns (sort_guard.py; PreEnqueue's exception gates its pod, as upstream's
error status does), never for the queue: an exception of the queue's own leaves
its heaps in an unknown state, an InvariantBreach that stops the system. Backoff
completion and the unschedulable-pool limit are timers armed at the exact due time. After every
message the queue's sizes go to the metrics sink when they changed
(scheduler_pending_pods, kept current as upstream's queue keeps it).
"""
from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any, Callable, Union, assert_never

from actors.base import Actor, InvariantBreach, resolve
from actors.clock import Clock, Timer
from actors.metrics_sink import NO_METRICS, PENDING_QUEUES, MetricsSink
from actors.queue.group_pop import GangMembers, pop_specific, with_group
from actors.queue.scheduling_queue import NS, SchedulingQueue, to_ns
from framework.api.objects import Pod
from framework.interface import ClusterEvent, QueuedPodInfo
from framework.preemption_inflight import InFlightPreemptions


@dataclass(frozen=True, slots=True, kw_only=True)
class AddPod:
    pod: Pod


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdatePod:
    old: Pod | None
    new: Pod


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletePod:
    """The pod left the queue (deleted, or bound). `then`: the Move that followed it in
    the same sender's step (a pending pod bound: its AssignedPodAdd), applied right
    after, as the next message of the turn would have been."""

    pod: Pod
    then: Move | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Pop:
    """Reply with the next QueuedPodInfo once activeQ has one (None if the queue
    closes); a gang member comes with its queued siblings as a QueuedPodGroup.
    `assumed`: the Assumed the scheduler's cycle just ended with, applied first (one
    message where two followed each other in the inbox). `to`, when given, is called
    with the answer in the queue's turn instead of `reply` being set (the scheduler's
    own inbox put: no loop turn for a Future's callback between the pop and its Popped)."""

    reply: asyncio.Future | None = None
    to: Callable[[Any], None] | None = None
    assumed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TakeMembers:
    """The whole-group cycle asks for members of its gang the scheduler's view holds
    but the popped group lacked (their AddPod was on its way): reply with those now
    queued and let in by PreEnqueue, popped (actors/queue/group_pop.py)."""

    keys: tuple[str, ...]
    reply: asyncio.Future


@dataclass(frozen=True, slots=True, kw_only=True)
class Unpop:
    """A pod popped but never attempted (the scheduler is stopping): back to
    activeQ as the queue recorded it at the pop."""

    pod_key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Requeue:
    """A failed attempt: back to backoffQ / unschedulable pool / activeQ. `qpi` is
    a copy the sender keeps no reference to (actors/queue/handover.py): the
    queue owns it from then on."""

    qpi: QueuedPodInfo


@dataclass(frozen=True, slots=True, kw_only=True)
class Done:
    """The pods' attempts ended (bound, or nothing to do): no longer in flight. The
    scheduler sends one for the pods whose bindings it took in one BindingDone."""

    pod_keys: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Assumed:
    """A scheduling cycle assumed the pods (their binding cycles run), or failed
    after nominating a node for one (preemption): the next member of the
    equivalence class each leads follows it (pod_classes.py), in the order given.
    Sent before the scheduler asks for its next pod (and before a failed pod's
    Requeue); a whole-group cycle sends one for all the members it assumed. An
    ordinary cycle's rides on the Pop that follows it instead (`Pop.assumed`)."""

    pod_keys: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Activate:
    pods: tuple[Pod, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Regate:
    """`plugin`'s gate on this pod may have lifted: run PreEnqueue again if it is
    the pod's gating plugin (the preemption actor, when a preemption ends)."""

    pod_key: str
    plugin: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PreemptionBegun:
    """The scheduling cycle handed the preemptor `uid`'s evictions to the
    preemption actor: PreEnqueue holds it back (sent before its Requeue)."""

    uid: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PreemptionLastVictim:
    """The preemption actor is evicting `victim`, the last one `uid` waits for."""

    uid: str
    victim: Pod


@dataclass(frozen=True, slots=True, kw_only=True)
class PreemptionEnded:
    uid: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Move:
    event: ClusterEvent
    old: Any
    new: Any
    pre_check: Callable[[Pod], bool] | None = None
    cross_topology_only: bool = False
    after_cycle: int | None = None  # a rollback: see SchedulingQueue.move_all_to_active_or_backoff


@dataclass(frozen=True, slots=True, kw_only=True)
class HoldPops:
    """The store is storing a bulk apply with no share of the loop for the scheduler
    (StoreLimits.bulk_apply_scheduler_share 0): no pod is handed out while `held`;
    the Pop asked meanwhile is answered once the store lets go."""

    held: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Flush:
    """A timer fired: run the timed work due now."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Counts:
    reply: asyncio.Future


QueueMsg = Union[AddPod, UpdatePod, DeletePod, Pop, TakeMembers, Unpop, Requeue, Done, Assumed, Activate, Regate, Move, Flush, Counts,
                 HoldPops, PreemptionBegun, PreemptionLastVictim, PreemptionEnded]



def clock_time_at(ns: int) -> float:
    """The first clock reading (float seconds) from ns / 1e9 up that the queue
    sees (to_ns) as `ns` or later. At epoch-sized readings a float is ~240 ns
    coarse, so ns / 1e9 can round to an instant just before `ns`: a timer armed
    there would find nothing due and re-arm at the same time forever (on a
    FakeClock, time would never move)."""
    t = ns / NS
    while to_ns(t) < ns:
        t = math.nextafter(t, math.inf)
    return t


class QueueActor(Actor[QueueMsg]):
    name = "queue"

    def __init__(self, queue: SchedulingQueue, clock: Clock, metrics: MetricsSink = NO_METRICS,
                 preemptions: InFlightPreemptions | None = None, group_members: GangMembers | None = None) -> None:
        super().__init__()
        self.group_members = group_members  # a gang's other members, popped with it (group_pop.py)
        self.queue = queue
        # The in-flight preemption record: this actor is its one writer (by the
        # messages below) and its PreEnqueue (DefaultPreemption) its one reader.
        self.preemptions = preemptions if preemptions is not None else InFlightPreemptions()
        self.clock = clock
        self.metrics = metrics
        self._sizes: tuple[int, ...] | None = None
        self._popper: asyncio.Future | Callable[[Any], None] | None = None  # the waiting Pop's reply or `to`
        self._timer: Timer | None = None
        self._timer_at: float | None = None
        self._timer_ns: int | None = None  # the queue instant _timer_at was worked out for
        self._popping = True  # False once stop_popping(): Pops are answered None
        self._held = False  # HoldPops: a bulk apply is being stored

    def idle(self) -> bool:
        # Waiting for a pod while activeQ is empty is not work; a poppable pod is.
        return super().idle() and not self.queue.has_poppable()

    # A turn takes every queued message: each is applied in order, then the waiting Pop
    # is answered, the timer armed and the sizes published once for all of them. A
    # scheduler's cycle sends one or two messages (the Pop carrying the cycle's Assumed,
    # the bound pod's DeletePod carrying its Move; a Done only when the bind's outcome
    # came before its store event) that arrive together; answering the Pop after the
    # last of a turn hands out the head of the queue as those messages left it.
    batched = True

    async def handle(self, msg: QueueMsg) -> None:
        await self.handle_turn([msg])

    async def handle_turn(self, msgs: list[QueueMsg]) -> None:
        msg = msgs[0]
        q = self.queue
        try:
            for msg in msgs:
                self._apply(msg)
                if q.sort_faults:  # a QueueSort comparison raised while it was applied
                    q.retry_sort_faults(self.clock.now())
            self._deliver()
            if q.sort_faults:  # the pop's own comparisons
                q.retry_sort_faults(self.clock.now())
        except Exception as e:  # noqa: BLE001 - reported as a breach with its cause
            raise InvariantBreach(self.name, type(msg).__name__, repr(e)) from e
        self._arm()
        self._publish_pending()

    def pending_counts(self) -> dict[str, int]:
        """For the supervisor once the actor has stopped (no inbox to ask)."""
        assert self.inbox.closed, "ask with Counts while the queue runs"
        return self.queue.pending_counts()

    def _publish_pending(self) -> None:
        # O(1): the queue keeps its counts (the pool its gated count) as pods move; the
        # sink hears them only when one moved (most turns of a completion move none or one).
        sizes = self.queue.pending_sizes()
        if sizes == self._sizes:
            return
        self._sizes = sizes
        self.metrics.set_pending_pods(dict(zip(PENDING_QUEUES, sizes)))

    def _apply(self, msg: QueueMsg) -> None:
        q = self.queue
        now = self.clock.now()
        # The cases a pod's cycle sends come first (Pop, DeletePod, AddPod, Move, Done): no
        # message type is another's subclass, so the order decides nothing but the tries.
        match msg:
            case Pop(reply=reply, to=to, assumed=assumed):
                if assumed:
                    # As an Assumed message of its own just before it: the turn's reading for
                    # this message, taken before the Pop's own work (which reads none).
                    for key in assumed:
                        q.assumed(key, now)
                    if q.sort_faults:  # as after a message of its own
                        q.retry_sort_faults(now)
                if self._popping:
                    self._popper = to if to is not None else reply
                elif to is not None:
                    to(None)
                else:
                    resolve(reply, None)
            case DeletePod(pod=pod, then=then):
                q.delete(pod, now)
                if then is not None:  # a Move (its type's one case), as a message of its own after it
                    if q.sort_faults:
                        q.retry_sort_faults(now)
                    q.move_all_to_active_or_backoff(then.event, then.old, then.new, self.clock.now(), then.pre_check,
                                                    then.cross_topology_only, then.after_cycle)
            case AddPod(pod=pod):
                q.add(pod, now)
            case Move(event=event, old=old, new=new, pre_check=pre_check, cross_topology_only=cto, after_cycle=after):
                q.move_all_to_active_or_backoff(event, old, new, now, pre_check, cto, after)
            case Done(pod_keys=keys):
                for key in keys:
                    q.done(key, now)
            case UpdatePod(old=old, new=new):
                q.update(old, new, now)
            case TakeMembers(keys=keys, reply=reply):
                taken = [pop_specific(q, key) for key in keys] if self._popping else []
                resolve(reply, [qpi for qpi in taken if qpi is not None])
            case Unpop(pod_key=key):
                q.unpop(key)
            case Requeue(qpi=qpi):
                q.add_unschedulable_if_not_present(qpi, now)
            case Assumed(pod_keys=keys):
                for key in keys:
                    q.assumed(key, now)
            case Activate(pods=pods):
                q.activate(pods, now)
            case Regate(pod_key=key, plugin=plugin):
                q.regate(key, plugin, now)
            case Flush():
                self._timer = None
                self._timer_at = self._timer_ns = None
                q.flush_backoff_completed(now)
                q.flush_unschedulable_leftover(now)
            case Counts(reply=reply):
                resolve(reply, {**q.pending_counts(), **q.classes.counts()})
            case HoldPops(held=held):
                self._held = held
            case PreemptionBegun(uid=uid):
                self.preemptions.begin(uid)
            case PreemptionLastVictim(uid=uid, victim=victim):
                self.preemptions.last_victim(uid, victim)
            case PreemptionEnded(uid=uid):
                self.preemptions.end(uid)
            case _:
                assert_never(msg)

    def _deliver(self) -> None:
        if self._popper is None or self._held:
            return
        popper = self._popper
        if isinstance(popper, asyncio.Future) and popper.done():  # the asker went away
            self._popper = None
            return
        qpi = self.queue.pop()
        if qpi is not None:
            self._popper = None
            answer = qpi if self.group_members is None else with_group(self.queue, qpi, self.group_members)
            if isinstance(popper, asyncio.Future):  # (_answer's, in place: every pod's pop)
                resolve(popper, answer)
            else:
                popper(answer)

    def _arm(self) -> None:
        if not self._popping:
            return
        q = self.queue
        backoff, leftover = q.next_backoff_expiry_ns(), q.next_leftover_ns()
        due = leftover if backoff is None else backoff if leftover is None else min(backoff, leftover)
        if due == self._timer_ns and due is not None:  # armed for this instant already (most turns)
            return
        self._timer_ns = due
        when = clock_time_at(due) if due is not None else None
        if when == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, when
        if when is not None:
            self._timer = self.clock.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        if not self.inbox.closed and self._popping:
            self.tell(Flush())

    def stop_popping(self) -> None:
        """The first stop phase: no pod is handed out any more (the outstanding
        Pop and every later one are answered None), while requeues from cycles
        still finishing keep arriving as messages."""
        self._popping = False
        popper, self._popper = self._popper, None
        if popper is not None:
            _answer(popper, None)

    def stop(self) -> None:
        """The last stop phase (after the scheduler and its binding cycles ended):
        handle what the inbox still holds, then end; timers stop."""
        self.stop_popping()
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at, self._timer_ns = None, None, None
        self.inbox.close(drain=True)


def _answer(popper: asyncio.Future | Callable[[Any], None], answer: Any) -> None:
    """Hand a Pop its answer: set its reply Future (if still open) or call its `to`."""
    if isinstance(popper, asyncio.Future):
        resolve(popper, answer)
    else:
        popper(answer)
