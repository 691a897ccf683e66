"""The scheduling queue (upstream's PriorityQueue), as a plain data structure.

No asyncio and no clock: every method that depends on time takes `now` (float
seconds), so the actor wrapper (actors/queue/actor.py) decides when timed work
runs and tests call it directly.

- activeQ: heap ordered by the profile's QueueSort `less`.
- backoffQ: heap ordered by backoff expiry (timestamp + initial * 2^(attempts-1),
  capped); pods that failed with an Error (no rejector plugins) use the same
  formula in their own heap, as upstream's podErrorBackoffQ.
- unschedulable pool: pods rejected by plugins, and gated pods (PreEnqueue said no).
- in-flight pods: popped, not done; events seen meanwhile replay if it fails (hints).
- nominator: pods PostFilter nominated to a node, kept on add/update/delete as
  upstream's PriorityQueue keeps it. In the running system the Scheduler actor
  owns the nominator instead (every nomination starts in its scheduling cycle or
  in a pod change it sees first, and the cycle reads it synchronously), so the
  pipeline builds this queue with `keep_nominations=False`.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

from actors.events import unscheduled_pod_update_events
from actors.queue.backoff_queue import backoff_duration_ns, backoff_less
from actors.queue.class_wakes import ClassKey, ClassWakes, Monotone, signed_change
from actors.queue.handover import handed_over
from actors.queue.heap import Less, PodHeap
from actors.queue.interest import EventInterest, HintMap
from actors.queue.nominator import Nominator
from actors.queue.sort_guard import SortGuard
from actors.queue.requeue_hints import FORCE_ACTIVATE, RequeueDecisions, Strategy, cross_topology, gate_removed
from actors.queue.unschedulable_pool import UnschedulablePool
from framework.api.objects import Pod
from framework.interface import ActionType, ClusterEvent, Code, QueuedPodInfo, Status

NS = 1_000_000_000
log = logging.getLogger("ksched.queue")
DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS = 300.0
UNSCHEDULABLE_TIMEOUT = ClusterEvent("*", ActionType.All, "UnschedulableTimeout")

PreEnqueue = Callable[[Pod], Status]

__all__ = ["FORCE_ACTIVATE", "UNSCHEDULABLE_TIMEOUT", "SchedulingQueue", "Strategy", "backoff_duration_ns"]


def to_ns(seconds: float) -> int:
    return int(round(seconds * NS))


class SchedulingQueue:
    """Holds its parts (pool, class wakes, requeue decisions, nominator); no base."""
    def __init__(
        self,
        *,
        less: Less,
        sort_plugin: str = "QueueSort",
        pre_enqueue: PreEnqueue | None = None,
        gate_holds: Callable[[Pod, str], bool] | None = None,
        hints_for: Callable[[Pod], HintMap] | None = None,
        hint_maps: Iterable[HintMap] = (),
        initial_backoff_seconds: float = 1.0,
        max_backoff_seconds: float = 10.0,
        max_in_unschedulable_seconds: float = DEFAULT_MAX_IN_UNSCHEDULABLE_SECONDS,
        pop_from_backoff_q: bool = True,
        sort_generation: Callable[[], int] | None = None,
        keep_nominations: bool = True,
        class_key: ClassKey | None = None,
        monotone: Monotone | None = None,
        by_priority: bool = False,
    ) -> None:
        self._less = SortGuard(less, sort_plugin)
        self.sort_faults = self._less.faulted  # non-empty: a comparison raised, retry_sort_faults has work
        # A QueueSort whose order can change while pods sit in the heap (Coscheduling
        # after a group fails) exposes a generation; activeQ is re-heapified when it moves.
        self._sort_generation = sort_generation
        self._seen_sort_generation = sort_generation() if sort_generation is not None else 0
        self._pre_enqueue = pre_enqueue
        self.requeue = RequeueDecisions(hints_for := hints_for or (lambda pod: {}), gate_holds)  # requeue_hints.py
        self.worth_requeuing = self.requeue.worth_requeuing  # isPodWorthRequeuing, for callers outside
        # Every profile's registrations: an event none of them covers moves no pod and
        # is not recorded for in-flight pods (upstream's isEventOfInterest).
        self.is_event_of_interest = EventInterest(hint_maps := tuple(hint_maps))
        self.initial_backoff_ns = to_ns(initial_backoff_seconds)
        self.max_backoff_ns = to_ns(max_backoff_seconds)
        self.max_in_unschedulable_ns = to_ns(max_in_unschedulable_seconds)
        self.active_q = PodHeap(self._less, by_priority=by_priority)  # PrioritySort's less, inline (heap.py)
        self.backoff_q, self.error_backoff_q = PodHeap(backoff_less), PodHeap(backoff_less)
        # Equivalence classes (pod_classes.py): `class_key` groups unschedulable pods
        # (None: every pod alone, as upstream), `monotone` lets a class sleep through
        # events that can only make its pods fail more.
        self.unschedulable = UnschedulablePool(class_key, lambda attempts: backoff_duration_ns(
            attempts, self.initial_backoff_ns, self.max_backoff_ns), self._less, (hints_for, hint_maps))
        self.classes = ClassWakes(self.unschedulable, class_key, monotone, self._requeue,
                                  lambda key: key in self.active_q or key in self.backoff_q
                                  or key in self.error_backoff_q)
        self.in_flight: dict[str, int] = {}  # pod key -> event sequence number at pop
        # The queue's own record of each in-flight pod; the popper got a copy.
        self._popped: dict[str, QueuedPodInfo] = {}
        self._in_flight_events: list[tuple[int, ClusterEvent, Any, Any]] = []
        self._event_seq = 0
        self.scheduling_cycle = 0
        self.latest_ns = 0  # the latest clock reading handed in (for what is told without one)
        self.nominator: Nominator | None = Nominator() if keep_nominations else None
        # SchedulerPopFromBackoffQ (KEP-5142): with activeQ empty, Pop takes the
        # head of backoffQ (not the error backoff heap) instead of idling.
        self.pop_from_backoff_q = pop_from_backoff_q

    # --- observation --------------------------------------------------------------------------

    def pending_counts(self) -> dict[str, int]:
        """Sizes of every sub-queue, O(1): the pool keeps its gated count."""
        a, b, u, g = self.pending_sizes()
        return {"active": a, "backoff": b, "unschedulable": u, "gated": g, "inFlight": len(self.in_flight)}

    def pending_sizes(self) -> tuple[int, int, int, int]:
        """Active, backoff, unschedulable, gated (PENDING_QUEUES' order), no dict built."""
        g = self.unschedulable.gated_count
        return len(self.active_q), len(self.backoff_q) + len(self.error_backoff_q), len(self.unschedulable) - g, g

    def where(self, pod_key: str) -> str:
        """"active", "backoff", "unschedulable", "gated", "inFlight" or ""."""
        if pod_key in self.active_q:
            return "active"
        if pod_key in self.backoff_q or pod_key in self.error_backoff_q:
            return "backoff"
        if pod_key in self.unschedulable:
            return "gated" if self.unschedulable.is_gated(pod_key) else "unschedulable"
        return "inFlight" if pod_key in self.in_flight else ""

    def get(self, pod_key: str) -> QueuedPodInfo | None:
        return (self.active_q.get(pod_key) or self.backoff_q.get(pod_key) or self.error_backoff_q.get(pod_key)
                or self.unschedulable.get(pod_key))

    def recorded_events(self) -> list[tuple[int, ClusterEvent]]:
        """The in-flight event log, oldest first: (sequence number, event)."""
        return [(seq, event) for seq, event, _, _ in self._in_flight_events]

    def backoff_expiry(self, qpi: QueuedPodInfo) -> int:
        """Queue timestamp + backoff, fixed until the next pop."""
        if qpi.backoff_expiration is None:
            qpi.backoff_expiration = qpi.timestamp + backoff_duration_ns(qpi.attempts, self.initial_backoff_ns,
                                                                          self.max_backoff_ns)
        return qpi.backoff_expiration

    def is_backing_off(self, qpi: QueuedPodInfo, now_ns: int) -> bool:
        """Still backing off at the expiry instant itself (upstream: a pod requeued at
        t with a 1 s backoff is still backing off at exactly t + 1 s). A pod never
        attempted does not back off."""
        return qpi.attempts > 0 and self.backoff_expiry(qpi) >= now_ns

    def next_backoff_expiry(self) -> float | None:
        """When the next backoff completes (seconds), for the actor's timer."""
        due = self.next_backoff_expiry_ns()
        return due / NS if due is not None else None

    def next_backoff_expiry_ns(self) -> int | None:
        """The first instant (ns) at which flush_backoff_completed moves a pod (one ns
        past the head's expiry)."""
        heads = [q.backoff_expiration for q in (self.backoff_q.peek(), self.error_backoff_q.peek()) if q is not None]
        return min(heads) + 1 if heads else None  # type: ignore[type-var,operator]

    def next_leftover_time(self) -> float | None:
        """When the oldest unschedulable (not gated) pod reaches the 5-minute limit."""
        oldest = self.unschedulable.oldest_ungated_timestamp()
        return (oldest + self.max_in_unschedulable_ns) / NS if oldest is not None else None

    def next_leftover_ns(self) -> int | None:
        """The first instant (ns) at which flush_unschedulable_leftover moves a pod
        (the limit is "longer than": one ns past it)."""
        oldest = self.unschedulable.oldest_ungated_timestamp()
        return oldest + self.max_in_unschedulable_ns + 1 if oldest is not None else None

    # --- pods arriving and leaving ---------------------------------------------------------------

    def add(self, pod: Pod, now: float) -> None:
        """A new pending pod."""
        if self.get(pod.key) is not None or pod.key in self.in_flight:
            self.update(pod, pod, now)
            return
        qpi = QueuedPodInfo(pod=pod, timestamp=(now_ns := to_ns(now)))
        if pod.nominated_node_name and self.nominator is not None:
            self.nominator.add(pod, pod.nominated_node_name)
        self._move_to_active(qpi, now_ns)

    def update(self, old: Pod | None, new: Pod, now: float) -> None:
        key = new.key
        if new.nominated_node_name and self.nominator is not None:
            self.nominator.add(new, new.nominated_node_name)
        for heap in (self.active_q, self.backoff_q, self.error_backoff_q):
            qpi = heap.get(key)
            if qpi is not None:
                qpi.pod = new
                heap.push(qpi)
                return
        qpi = self.unschedulable.get(key)
        if qpi is None:
            if key not in self.in_flight:
                self.add(new, now)
            elif old is None or old.spec != new.spec or old.labels != new.labels:
                # Replayed if the attempt in flight fails (addEventsIfPodInFlight).
                for event in unscheduled_pod_update_events(old, new):
                    self._record_event(event, old, new)
            return
        self.unschedulable.replace_pod(qpi, new)  # filed again by the new object's hint keys
        now_ns = to_ns(now)
        if self.classes.class_of(key) is not None and signed_change(old, new):
            self.unschedulable.pop(key)  # its signature may differ now: put again, in its class
            self.unschedulable.put(qpi)
        if qpi.gated:
            self._move_to_active(qpi, now_ns)
            return
        if old is not None and old.spec == new.spec and old.labels == new.labels:
            return
        # One event per kind of change, in upstream's order, until one moves the pod.
        for event in unscheduled_pod_update_events(old, new):
            strategy = self.worth_requeuing(qpi, event, old, new)
            if strategy != Strategy.SKIP:
                self._requeue(qpi, strategy, now_ns)
                return

    def delete(self, pod: Pod, now: float | None = None) -> None:
        key = pod.key
        for heap in (self.active_q, self.backoff_q, self.error_backoff_q):
            heap.remove(key)
        self.unschedulable.pop(key, None)
        if self.nominator is not None:
            self.nominator.delete(pod)
        self.done(key, now)

    # --- the scheduling cycle's side ---------------------------------------------------------------

    def has_poppable(self) -> bool:
        return bool(len(self.active_q)) or (self.pop_from_backoff_q and bool(len(self.backoff_q)))

    def pop(self) -> QueuedPodInfo | None:
        if self._sort_generation is not None:
            gen = self._sort_generation()
            if gen != self._seen_sort_generation:
                self._seen_sort_generation = gen
                self.active_q.reheapify()
        qpi = self.active_q.pop()
        from_backoff = qpi is None and self.pop_from_backoff_q
        if from_backoff:
            qpi = self.backoff_q.pop()
        if qpi is None:
            self.classes.idle()
            return None
        return self.hand_out(qpi, from_backoff)

    def hand_out(self, qpi: QueuedPodInfo, from_backoff: bool = False) -> QueuedPodInfo:
        """A pod taken out of its sub-queue for an attempt: in flight, a copy handed out."""
        self.classes.popping(qpi, from_backoff)
        qpi.attempts += 1
        qpi.backoff_expiration, qpi.tie = None, 0
        # The next attempt records its own rejectors (upstream's Pop clears both sets).
        qpi.unschedulable_plugins = set()
        qpi.pending_plugins = set()
        self.scheduling_cycle += 1
        qpi.popped_cycle = self.scheduling_cycle
        self.in_flight[qpi.pod.key] = self._event_seq
        self._popped[qpi.pod.key] = qpi
        return handed_over(qpi)  # the popper's to change; the record stays the queue's

    def popped(self, pod_key: str) -> QueuedPodInfo | None:
        """The queue's own record of an in-flight pod (read only)."""
        return self._popped.get(pod_key)

    def unpop(self, pod_key: str) -> None:
        """Put back a pod popped but never attempted (shutdown between pop and
        cycle), as the queue recorded it at the pop."""
        qpi = self._popped.pop(pod_key, None)
        self.in_flight.pop(pod_key, None)
        self._trim_events()
        if qpi is not None and self.get(pod_key) is None:
            qpi.attempts = max(0, qpi.attempts - 1)
            self.active_q.push(qpi)

    def done(self, pod_key: str, now: float | None = None) -> None:
        """The pod's attempt is over (bound, deleted or requeued)."""
        self._popped.pop(pod_key, None)
        if self.in_flight.pop(pod_key, None) is not None:
            self._trim_events()
        self.classes.ended(pod_key, to_ns(now) if now is not None else self.latest_ns)

    def assumed(self, pod_key: str, now: float) -> None:
        """A scheduling cycle assumed the pod: the next member of its class, if it
        leads one, follows it (before the next Pop is answered)."""
        self.classes.assumed(pod_key, to_ns(now))

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, now: float) -> str:
        """Requeue a pod whose attempt failed; `qpi.unschedulable_plugins` /
        `pending_plugins` say who rejected it (both empty: an Error). Returns the
        sub-queue it went to. The caller hands `qpi` over: from here on it is the
        queue's record, and the caller keeps no reference to it (the scheduler
        sends a copy, actors/queue/handover.py)."""
        key = qpi.pod.key
        self._popped.pop(key, None)
        now_ns = to_ns(now)
        since = self.in_flight.get(key)
        if self.get(key) is not None:
            self.done(key)
            return self.where(key)
        qpi.timestamp = self.classes.last_failure_ns = now_ns
        qpi.backoff_expiration = None
        if not qpi.unschedulable_plugins and not qpi.pending_plugins:
            strategy = Strategy.AFTER_BACKOFF
        else:
            strategy = self.requeue.after_events(qpi, self._in_flight_events, since)
        self.in_flight.pop(key, None)
        self._trim_events()
        if strategy == Strategy.SKIP:
            if not self.classes.failed(qpi, now_ns):
                self.unschedulable.put(qpi)
        else:
            self._requeue(qpi, strategy, now_ns)
        return self.where(key)

    def activate(self, pods: Iterable[Pod], now: float) -> None:
        """Move these pods from backoffQ / the unschedulable pool to activeQ now."""
        now_ns = to_ns(now)
        for pod in pods:
            key = pod.key
            if key in self.in_flight:
                self._record_event(FORCE_ACTIVATE, None, pod)
                continue
            qpi = self.backoff_q.remove(key) or self.error_backoff_q.remove(key) or self.unschedulable.pop(key, None)
            if qpi is not None:
                self._move_to_active(qpi, now_ns)

    def regate(self, pod_key: str, plugin: str, now: float) -> None:
        """A pod `plugin` gates goes back as after an event (PreEnqueue runs again)."""
        qpi = self.unschedulable.get(pod_key)
        if qpi is not None and qpi.gated and qpi.gating_plugin == plugin:
            self._requeue(qpi, Strategy.AFTER_BACKOFF, to_ns(now))

    # --- cluster events ---------------------------------------------------------------------------------

    def move_all_to_active_or_backoff(self, event: ClusterEvent, old: Any, new: Any, now: float,
                                      pre_check: Callable[[Pod], bool] | None = None,
                                      cross_topology_only: bool = False, after_cycle: int | None = None) -> int:
        """Offer `event` to every unschedulable pod; returns how many moved.
        `cross_topology_only` (assigned-pod add/update): only pods with pod (anti-)affinity
        or rejected by PodTopologySpread can care. `after_cycle` (the rollback of a pod
        assumed in that cycle): only pods attempted after it can care; one that failed
        before saw the cluster the rollback gives back, and would fail the same way
        (upstream moves them anyway). An event no plugin registered for does nothing.
        A gated pod whose gate holds stays put (RequeueDecisions.regated_in_place)."""
        if not self.is_event_of_interest(event):
            return 0
        self._record_event(event, old, new)
        now_ns = to_ns(now)
        moved = 0
        # Pods gated by SchedulingGates move only on their own gate removal (or the
        # timeout): the pool offers just that one of them, not every gated pod.
        if event is UNSCHEDULABLE_TIMEOUT:
            offered = self.unschedulable.items()
        else:
            offered = self.unschedulable.movable(also=new.key if isinstance(new, Pod) else None, event=(event, old, new))
        about = new.key if isinstance(new, Pod) else old.key if isinstance(old, Pod) else None
        worth = self.worth_requeuing
        for key, qpi in offered:
            cls = self.classes.class_of(key) if key != about else None
            if cls is not None and self.classes.unmoved_by(qpi, event):
                continue
            if cross_topology_only and not cross_topology(qpi, new):
                continue
            if self.unschedulable.is_gated(key) and qpi.gating_plugin == "SchedulingGates" \
                    and event is not UNSCHEDULABLE_TIMEOUT:
                if not gate_removed(qpi, new):
                    continue
            if pre_check is not None and not pre_check(qpi.pod):
                continue
            if qpi.gated and key != about and self.requeue.regated_in_place(
                    qpi, self.pop_from_backoff_q or not self.is_backing_off(qpi, now_ns)):
                continue
            cycle = max(qpi.popped_cycle, cls.last_cycle) if cls is not None else qpi.popped_cycle
            if after_cycle is not None and cycle <= after_cycle:
                continue
            strategy = worth(qpi, event, old, new)
            if strategy == Strategy.SKIP:
                continue
            moved += 1
            if cls is not None:
                self.classes.wake(cls, key, strategy, now_ns)
            else:
                self.classes.moved(key)
                self._requeue(qpi, strategy, now_ns)
        return moved

    # --- timed work ---------------------------------------------------------------------------------------

    def flush_backoff_completed(self, now: float) -> int:
        """Move every pod whose backoff has expired to activeQ."""
        now_ns = self.classes.last_flush_ns = to_ns(now)
        moved = 0
        for heap in (self.backoff_q, self.error_backoff_q):
            while True:
                qpi = heap.peek()
                if qpi is None or self.is_backing_off(qpi, now_ns):
                    break
                heap.pop()
                self._move_to_active(qpi, now_ns)
                moved += 1
        return moved

    def flush_unschedulable_leftover(self, now: float) -> int:
        """Pods in the unschedulable pool longer than the limit go back (UnschedulableTimeout)."""
        now_ns = to_ns(now)
        expired = self.unschedulable.take_expired(now_ns - self.max_in_unschedulable_ns)
        for qpi in expired:
            self._requeue(qpi, Strategy.AFTER_BACKOFF, now_ns)
        return len(expired)

    # --- internals ---------------------------------------------------------------------------------------

    def _record_event(self, event: ClusterEvent, old: Any, new: Any) -> None:
        if self.in_flight:
            self._event_seq += 1
            self._in_flight_events.append((self._event_seq, event, old, new))

    def _trim_events(self) -> None:
        if not self.in_flight:
            self._in_flight_events.clear()
        else:
            oldest = min(self.in_flight.values())
            self._in_flight_events = [e for e in self._in_flight_events if e[0] > oldest]

    def _move_to_active(self, qpi: QueuedPodInfo, now_ns: int) -> bool:
        key = qpi.pod.key
        self.latest_ns = max(self.latest_ns, now_ns)
        self.unschedulable.pop(key, None)
        for heap in (self.backoff_q, self.error_backoff_q):
            heap.remove(key)
        if self._gated(qpi, now_ns):
            return False
        qpi.gated = False
        qpi.gating_plugin = ""
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = now_ns
        self.active_q.push(qpi)
        return True

    def pre_enqueue(self, pod: Pod) -> Status | None:
        return self._pre_enqueue(pod) if self._pre_enqueue is not None else None

    def _gated(self, qpi: QueuedPodInfo, now_ns: int) -> bool:
        """Run PreEnqueue; a pod it refuses goes to the unschedulable pool, gated."""
        st = self.pre_enqueue(qpi.pod)
        if st is None or st.is_success():
            return False
        if st.code == Code.Error:  # upstream logs it and keeps the pod gated
            log.error("pod %s: %s", qpi.pod.key, st.message())
        qpi.gated = True
        qpi.gating_plugin = st.plugin
        if st.plugin:  # upstream's runPreEnqueuePlugins: the gating plugin's hints decide its moves
            qpi.unschedulable_plugins.add(st.plugin)
        qpi.timestamp = now_ns if not qpi.timestamp else qpi.timestamp
        for heap in (self.active_q, self.backoff_q, self.error_backoff_q):
            heap.remove(qpi.pod.key)
        self.unschedulable.put(qpi)
        return True

    def retry_sort_faults(self, now: float) -> list[str]:
        """Pods whose QueueSort comparison raised leave activeQ for the error
        backoff (their attempt counts, so the backoff grows); activeQ's order among
        the rest is restored. Returns their keys."""
        faults = self._less.take_faults()
        moved = []
        for key in faults:
            qpi = self.active_q.remove(key)
            if qpi is None:
                continue
            qpi.attempts += 1
            qpi.unschedulable_plugins, qpi.pending_plugins = set(), set()
            qpi.timestamp = to_ns(now)
            qpi.backoff_expiration = None
            self.backoff_expiry(qpi)  # the heap orders by it
            self.error_backoff_q.push(qpi)
            moved.append(key)
        if faults:
            self.active_q.reheapify()
        return moved

    def _requeue(self, qpi: QueuedPodInfo, strategy: Strategy, now_ns: int) -> None:
        key = qpi.pod.key
        self.latest_ns = max(self.latest_ns, now_ns)
        self.unschedulable.pop(key, None)  # first: a class member takes its share of the class's failures
        if strategy == Strategy.AFTER_BACKOFF and self.is_backing_off(qpi, now_ns):
            # With SchedulerPopFromBackoffQ a pod may be popped straight from backoffQ,
            # so PreEnqueue runs on the way in (upstream's moveToBackoffQ).
            if self.pop_from_backoff_q and self._gated(qpi, now_ns):
                return
            self.active_q.remove(key)
            errored = not qpi.unschedulable_plugins and not qpi.pending_plugins
            (self.error_backoff_q if errored else self.backoff_q).push(qpi)
            (self.backoff_q if errored else self.error_backoff_q).remove(key)
            return
        self._move_to_active(qpi, now_ns)

