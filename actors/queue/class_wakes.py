"""The scheduling queue's side of equivalence classes (pod_classes.py): waking a
class through its first member, the members following while the one out is
assumed, and parking the class when it fails. Composed into SchedulingQueue,
which hands in how a pod is requeued and where it went."""
from __future__ import annotations

from typing import Callable, Hashable

from actors.queue.pod_classes import PodClass, Turn
from actors.queue.unschedulable_pool import UnschedulablePool
from framework.api.objects import Pod
from framework.interface import ClusterEvent, QueuedPodInfo

ClassKey = Callable[[QueuedPodInfo], Hashable | None]
Monotone = Callable[[QueuedPodInfo, ClusterEvent], bool]
Requeue = Callable[[QueuedPodInfo, int, int], None]  # (qpi, strategy, now_ns)


class ClassWakes:
    """Counts what events wake (`woken_pods`, `woken_classes`) for every pod, in
    a class or not; `monotone(qpi, event)` says whether every plugin that
    rejected the class's pods declares the event monotone for them."""

    def __init__(self, pool: UnschedulablePool, class_key: ClassKey | None, monotone: Monotone | None,
                 requeue: Requeue, waiting: Callable[[str], bool]) -> None:
        self.pool = pool
        self.index = pool.classes
        self._class_key = class_key
        self._monotone = monotone
        self._requeue = requeue
        self._waiting = waiting  # whether the pod is in activeQ or backoffQ
        # Set by the queue: when it last took back a failed pod, when it last moved
        # expired backoffs to activeQ (ns).
        self.last_failure_ns = 0
        self.last_flush_ns = 0
        # Parked classes whose covered members upstream would still retry, each in its
        # turn among the other pods after the failure that parked it: the pods
        # popped meanwhile are recorded on the class (Round.turns).
        self._open: dict[int, PodClass] = {}
        self.woken_pods = 0
        self.woken_classes = 0

    def counts(self) -> dict[str, int]:
        return {"wokenPods": self.woken_pods, "wokenClasses": self.woken_classes}

    def class_of(self, key: str) -> PodClass | None:
        return self.index.class_of(key)

    def unmoved_by(self, qpi: QueuedPodInfo, event: ClusterEvent) -> bool:
        """A class whose every rejector declares `event` monotone sleeps through it."""
        return self._monotone is not None and event.resource != "*" and self._monotone(qpi, event)

    def wake(self, cls: PodClass, key: str, strategy: int, now_ns: int) -> None:
        """An event's hint moves the class's first member `key`; the members put
        until now follow it, one at a time, while each is assumed."""
        self.woken_classes += 1
        self._unreached(cls)
        self._place(cls)  # the rest failed before this wake
        if self.pool.get(key) is None:
            # `key` was unreached (upstream's queue still held it, untouched by the
            # failure) and has gone back alone: the members left, if any, wake
            # through the one first among them now.
            nxt = self.index.first(cls)
            if nxt is None:
                return
            key = nxt
        self.index.wake(cls, key, strategy, now_ns)
        self._move(key, strategy, now_ns)
        if not self._waiting(key):  # PreEnqueue held it back: the next one leads
            self.follow(cls, now_ns)

    def moved(self, key: str) -> None:
        """A pod left the pool by an event, alone."""
        self.woken_pods += 1

    def popping(self, qpi: QueuedPodInfo, from_backoff: bool) -> None:
        """The queue pops `qpi` (from backoffQ: activeQ was empty): a parked
        class's members that upstream's queue held before it had their failed
        turn before this pop."""
        if not self._open:
            return
        popped = QueuedPodInfo(pod=qpi.pod, timestamp=qpi.timestamp, attempts=qpi.attempts,
                               initial_attempt_timestamp=qpi.initial_attempt_timestamp, tie=qpi.tie)
        turn = Turn(popped, self.last_failure_ns, from_backoff, self.last_flush_ns)
        for key, cls in list(self._open.items()):
            if cls.count:
                cls.current.turns.append(turn)
            else:  # every member left: nothing to place
                del self._open[key]

    def idle(self) -> None:
        """Nothing to pop: upstream's queue would now reach every parked member it
        still holds (each fails, just after the last failure taken back)."""
        for cls in list(self._open.values()):
            self._place(cls)

    def _unreached(self, cls: PodClass) -> None:
        """The class wakes before upstream's queue popped every member its last
        failure covered: those not popped yet leave the pool without that failure,
        to where upstream's wake put them (activeQ or backoffQ by their backoff
        then, flushed since), and are popped alone, as upstream pops them."""
        if id(cls) not in self._open:
            return
        rnd = cls.current
        for key in self.index.unreached(cls, self.pool.get):
            qpi = self.pool.pop(key, upto=cls.rounds - 1)
            assert qpi is not None
            self.woken_pods += 1
            self._requeue(qpi, rnd.strategy, max(rnd.woken_at, self.last_flush_ns))

    def _place(self, cls: PodClass) -> None:
        """The queue reached the rest of the class's covered members (a wake): they
        count as failed just after the last failure it took back."""
        if self._open.pop(id(cls), None) is not None:
            cls.current.placed_at = max(cls.current.placed_at, self.last_failure_ns)

    def assumed(self, key: str, now_ns: int) -> None:
        """A scheduling cycle assumed `key`: if it leads a class, the next follows."""
        cls = self.index.led_by(key)
        if cls is not None:
            self.follow(cls, now_ns)

    def follow(self, cls: PodClass, now_ns: int) -> None:
        while True:
            nxt = self.index.next_covered(cls)
            if nxt is None:
                self.index.release(cls)
                return
            self.index.lead(cls, nxt)
            # Where upstream's wake put it, flushed since: not where a move now would.
            self._move(nxt, cls.awake, max(cls.woken_at, self.last_flush_ns))
            if self._waiting(nxt):
                return

    def failed(self, qpi: QueuedPodInfo, now_ns: int) -> bool:
        """The member out of an awake class failed and goes back to the pool
        (put here; False: it leads no class, the caller puts it): the class parks,
        the failed member first, then the members the wake covered (each failed
        after it, as upstream retries them). If the pod now has another class key
        (other rejectors), those members take it too: they would have failed the
        same way, in their turns."""
        cls = self.index.led_by(qpi.pod.key)
        if cls is None:
            return False
        self._place(cls)
        tail = self.index.park(cls, now_ns, qpi.popped_cycle)
        self.pool.put(qpi)
        self.index.reattach(cls, tail)
        if self.index.live_first(cls, tail) is not None:
            self._open[id(cls)] = cls
        new_key = self._class_key(qpi) if self._class_key is not None else None
        if new_key is None or new_key == cls.key:
            return True
        # The covered members stay (their turns in this failure are yet to be
        # placed) and the class takes the new key; members that joined while it
        # was awake did not fail with it and go to a class of the old key.
        covered = set(self.index.live_in(cls, tail))
        later = [k for k in self.index.live_in(cls, list(cls.segments)) if k not in covered]
        self.index.rekey(cls, new_key)
        for key in covered:
            member = self.pool.get(key)
            assert member is not None
            member.unschedulable_plugins = set(qpi.unschedulable_plugins)
            member.pending_plugins = set(qpi.pending_plugins)
        for key in later:
            member = self.pool.pop(key)
            assert member is not None
            self.pool.put(member)
        return True

    def ended(self, key: str, now_ns: int) -> None:
        """The member out left for good (deleted, bound elsewhere): the next follows."""
        cls = self.index.led_by(key)
        if cls is not None:
            self.follow(cls, now_ns)

    def _move(self, key: str, strategy: int, now_ns: int) -> None:
        qpi = self.pool.pop(key)  # takes its share of the class's failures first
        assert qpi is not None
        self.woken_pods += 1
        self._requeue(qpi, strategy, now_ns)


def signed_change(old: Pod | None, new: Pod) -> bool:
    """Whether an update may change the pod's signature (framework/failure_memo.py):
    its spec, labels, annotations, owner references or nomination."""
    if old is None:
        return True
    return (old.spec != new.spec or old.labels != new.labels or old.nominated_node_name != new.nominated_node_name
            or old.meta.annotations != new.meta.annotations
            or (old.raw.get("metadata") or {}).get("ownerReferences") != (new.raw.get("metadata") or {}).get("ownerReferences"))
