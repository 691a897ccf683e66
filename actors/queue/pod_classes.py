"""Equivalence classes of the unschedulable pool: pods that would meet the same
fate wait as one.

Pods of one profile with the same FAILURE signature (framework/interface.py's
SignPlugin: every PreFilter, Filter and PostFilter plugin signed them) that were
rejected by the same plugins form a class. In the same cluster state they get the
same verdict, and their QueueingHints give the same answer for every event that
is not about one of them. So:

- an event is offered to the class once, through its first member (the one the
  queue would take first: the earliest put); an event that every rejecting plugin
  declares monotone for the class (MonotoneEventsPlugin: a bind of a member, for
  NodeResourcesFit) is not offered at all;
- a wake moves only that first member out (the class is *awake*); each time the
  member out is assumed by a scheduling cycle, the next member the wake covered
  follows it with the same strategy; when the member out fails again, the class
  parks: every member it covered counts that failure as its own (the attempt
  upstream would have made for it, in the same cluster state) lazily, when it
  leaves the pool (`rounds`, each `Round` keeping when its members had their
  turns), and waits for a new event.

A completion costs O(classes woken), not O(pods queued). The queue keeps the
members in the pool (`UnschedulablePool`), so every other path (delete, update,
activate, the leftover timeout, counts) sees them as before.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterator

from actors.queue.requeue_hints import Strategy
from framework.interface import QueuedPodInfo


@dataclass(frozen=True, slots=True)
class Turn:
    """A pod the queue popped while a class was parked after a failure."""

    popped: QueuedPodInfo  # as it was in the queue (timestamp, attempts before the pop)
    failed_before: int  # ns: the last failure the queue took back before this pop
    from_backoff: bool  # popped from backoffQ (activeQ was empty)
    flushed_at: int  # ns: the last backoff flush before this pop


@dataclass(slots=True, eq=False)
class Round:
    """One failure of a class, and when each member it covered had its own
    (failed) turn upstream: just after the last failure before the first pod
    popped meanwhile that the queue would have taken after the member (in
    activeQ by the QueueSort, in backoffQ by expiry, activeQ first); else just
    after `placed_at`."""

    placed_at: int  # ns: the failure; then when the queue reached the class's last members
    woken_at: int  # ns: the wake this failure ended (its members went to activeQ or backoffQ then)
    strategy: int  # that wake's requeue strategy
    turns: list[Turn] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class PodClass:
    """One class: its members in queue order, and its wake.

    The order is a deque of segments, each a deque of (pod key, put seq) kept
    lazily (a member that left stays until it reaches the front, where it is
    dropped), so taking the first member and moving every member the wake covered
    behind the one that failed are O(1) amortized, whatever the class's size."""

    key: Hashable
    attempts: int  # the attempts of its first members; every member has the same backoff
    segments: deque[deque[tuple[str, int]]] = field(default_factory=deque)
    count: int = 0  # members in the pool
    awake: int = 0  # 0: parked; else the requeue strategy (Strategy) its members follow with
    out: str = ""  # while awake: the member out of the pool (activeQ, backoffQ or in flight)
    covered: int = 0  # while awake: its first `covered` segments follow the one out
    rounds: int = 0  # failures of the class; a member's share is rounds minus its base
    last_cycle: int = 0  # the scheduling cycle of the last failure
    woken_at: int = 0  # ns: while awake, when the wake came
    # Round n (1..rounds) for every n a live member still has to count (the ones
    # after its base); rounds[0] is the empty round before the first failure.
    history: dict[int, Round] = field(default_factory=lambda: {0: Round(0, 0, 0)})
    bases: dict[int, int] = field(default_factory=dict)  # base -> live members with it
    low: int = 0  # no live member has a base below it; history before low + 1 is dropped

    @property
    def current(self) -> Round:
        return self.history[self.rounds]


@dataclass(frozen=True, slots=True)
class Share:
    """What a member leaving the pool takes of its class's failures."""

    rounds: int
    timestamp: int  # ns: its queue timestamp after them (that of its turn in the last)
    last_cycle: int
    put: int  # its put seq in the pool: its order among members placed at one instant

    def apply(self, qpi: QueuedPodInfo) -> None:
        """As if it had been attempted with the class each time: the attempts, the
        queue timestamp of its last failure, the cycle of it."""
        if self.rounds <= 0:
            return
        qpi.attempts += self.rounds
        qpi.timestamp = max(qpi.timestamp, self.timestamp)
        qpi.tie = self.put
        qpi.backoff_expiration = None
        qpi.popped_cycle = max(qpi.popped_cycle, self.last_cycle)


class ClassIndex:
    """The classes of the pool's members, and which member is out for which class."""

    def __init__(self, backoff_of: Callable[[int], int] = lambda attempts: attempts,
                 less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] | None = None) -> None:
        self._less = less
        # Members of a class also share their backoff (`backoff_of` their attempts), so
        # their queue order is their put order, as upstream's by backoff expiry and time.
        self._backoff_of = backoff_of
        self._classes: dict[int, PodClass] = {}  # every class, by id
        self._joinable: dict[tuple[Hashable, int], PodClass] = {}  # (key, backoff) -> the class a pod joins
        self._of: dict[str, PodClass] = {}  # member (parked) -> its class
        self._seq: dict[str, int] = {}  # member -> its put seq (which segment entry is live)
        self._base: dict[str, int] = {}  # member -> its class's rounds when it joined
        self._out: dict[str, PodClass] = {}  # member out of the pool -> the class it leads

    def __len__(self) -> int:
        return len(self._of)

    def __contains__(self, key: object) -> bool:
        return key in self._of

    def class_of(self, key: str) -> PodClass | None:
        return self._of.get(key)

    def led_by(self, key: str) -> PodClass | None:
        """The awake class whose member out is `key`."""
        return self._out.get(key)

    def join(self, key: str, class_key: Hashable, seq: int, attempts: int) -> PodClass:
        slot = (class_key, self._backoff_of(attempts))
        cls = self._joinable.get(slot)
        if cls is None:
            cls = self._joinable[slot] = PodClass(class_key, attempts)
            self._classes[id(cls)] = cls
        # A member joining an awake class was not woken with it: it goes behind the
        # members the wake covers, and the failure that parks the class next is not its own.
        if not cls.segments or (cls.awake and len(cls.segments) <= cls.covered):
            cls.segments.append(deque())
        cls.segments[-1].append((key, seq))
        cls.count += 1
        self._of[key] = cls
        self._seq[key] = seq
        self._set_base(cls, key, cls.rounds + (1 if cls.awake else 0))
        return cls

    def _timestamp_of(self, cls: PodClass, base: int, qpi: QueuedPodInfo, upto: int) -> int:
        """The queue timestamp `qpi` (a member, as put) has after the class's
        failures since `base`: round by round, its turn among the pods popped in
        that round, placed by the timestamp and attempts the rounds before gave
        it. A round in which no pod was popped places every member alike, so the
        replay starts at the last such round: O(1) when the queue ran empty after
        each failure (the steady state), else the rounds since, times their pops.
        Rounds after `upto` are not counted."""
        start = upto
        while start > base + 1 and cls.history[start].turns:
            start -= 1
        start = max(start, base + 1)
        own = qpi.timestamp
        ts = own
        try:
            for n in range(start, upto + 1):
                ts = max(ts, self._turn_in(cls.history[n], qpi, qpi.attempts + n - 1 - base))
                qpi.timestamp = ts
        finally:
            qpi.timestamp = own
        return ts

    def _turn_in(self, rnd: Round, qpi: QueuedPodInfo, attempts: int) -> int:
        """When `qpi` (its timestamp and `attempts` before the round) failed in
        the round: one ns after the last failure before the first pod popped
        behind it (its own failure came between them, and after every failure
        before it)."""
        if rnd.turns:
            expiry = qpi.timestamp + self._backoff_of(attempts)
            for turn in rnd.turns:
                if self._precedes(qpi, expiry, rnd, turn):
                    return turn.failed_before + 1
        return rnd.placed_at + 1

    def _precedes(self, qpi: QueuedPodInfo, expiry: int, rnd: Round, turn: Turn) -> bool:
        """Whether upstream's queue held `qpi` (backoff expiry `expiry`) before
        `turn.popped`: it sat in activeQ (moved there at the wake, or flushed
        since), or both in backoffQ with its expiry first. Equal keys are a
        placement at one instant: the earlier put goes first (PodHeap's tie)."""
        active = rnd.strategy == Strategy.IMMEDIATELY or expiry < max(rnd.woken_at, turn.flushed_at)
        popped = turn.popped
        tie = 0 < self._seq[qpi.pod.key] < popped.tie
        if turn.from_backoff:
            popped_expiry = popped.timestamp + self._backoff_of(popped.attempts)
            return active or expiry < popped_expiry or (expiry == popped_expiry and tie)
        if not active:
            return False
        if self._less is None:
            return True
        return self._less(qpi, popped) or (tie and not self._less(popped, qpi))

    def share_of(self, key: str, qpi: QueuedPodInfo, upto: int | None = None) -> Share | None:
        """`key`'s (its record `qpi`, as put) share of its class's failures so far,
        or up to round `upto` (None: no class)."""
        cls = self._of.get(key)
        if cls is None:
            return None
        base = self._base[key]
        upto = cls.rounds if upto is None else upto
        return Share(upto - base, self._timestamp_of(cls, base, qpi, upto), cls.last_cycle, self._seq[key])

    def leave(self, key: str, qpi: QueuedPodInfo, upto: int | None = None) -> Share | None:
        """`key` (its record `qpi`, as put) leaves the pool: its share of its
        class's failures (None: no class), each counted at its turn; with `upto`,
        of the rounds up to that one only."""
        share = self.share_of(key, qpi, upto)
        if share is None:
            return None
        cls = self._of.pop(key)
        del self._seq[key]
        cls.count -= 1
        self._set_base(cls, key, None)
        self._drop_if_idle(cls)
        return share

    def unreached(self, cls: PodClass, entry: Callable[[str], QueuedPodInfo | None]) -> list[str]:
        """The members the class's last failure covered that upstream's queue had
        not popped yet (none of the pods popped since is behind them): they still
        sit in activeQ or backoffQ there, untouched by that failure. A suffix of
        the covered members, in class order, found from the back."""
        out: list[str] = []
        last = cls.rounds
        for seg in reversed(cls.segments):
            for key, seq in reversed(seg):
                if self._of.get(key) is not cls or self._seq[key] != seq or self._base[key] >= last:
                    continue  # left, or joined after the failure
                qpi = entry(key)
                assert qpi is not None
                if self._reached(cls, self._base[key], qpi):
                    out.reverse()
                    return out
                out.append(key)
        out.reverse()
        return out

    def _reached(self, cls: PodClass, base: int, qpi: QueuedPodInfo) -> bool:
        rnd = cls.current
        if not rnd.turns:
            return False
        own = qpi.timestamp
        qpi.timestamp = self._timestamp_of(cls, base, qpi, cls.rounds - 1)
        try:
            expiry = qpi.timestamp + self._backoff_of(qpi.attempts + cls.rounds - 1 - base)
            return any(self._precedes(qpi, expiry, rnd, turn) for turn in rnd.turns)
        finally:
            qpi.timestamp = own

    def _set_base(self, cls: PodClass, key: str, base: int | None) -> None:
        """Count `key`'s base (None: it left) and drop the rounds no member counts any more."""
        old = self._base.pop(key, None)
        if old is not None:
            left = cls.bases[old] - 1
            if left:
                cls.bases[old] = left
            else:
                del cls.bases[old]
        if base is not None:
            self._base[key] = base
            cls.bases[base] = cls.bases.get(base, 0) + 1
            cls.low = min(cls.low, base)
        while cls.low + 1 < cls.rounds and cls.low not in cls.bases:
            cls.low += 1
            cls.history.pop(cls.low, None)

    def parked(self) -> Iterator[PodClass]:
        """The classes an event may wake (parked, with members)."""
        return (c for c in self._classes.values() if not c.awake and c.count)

    def first(self, cls: PodClass) -> str | None:
        """The member the queue would take first."""
        self._clean_front(cls)
        return cls.segments[0][0][0] if cls.segments else None

    def next_covered(self, cls: PodClass) -> str | None:
        """The member that follows the one out: the first the wake covered."""
        self._clean_front(cls)
        return cls.segments[0][0][0] if cls.segments and cls.covered else None

    def wake(self, cls: PodClass, out: str, strategy: int, now_ns: int) -> None:
        cls.awake, cls.covered, cls.woken_at = strategy, len(cls.segments), now_ns
        self.lead(cls, out)

    def lead(self, cls: PodClass, out: str) -> None:
        if cls.out:
            self._out.pop(cls.out, None)
        cls.out = out
        self._out[out] = cls

    def park(self, cls: PodClass, now_ns: int, cycle: int) -> list[deque[tuple[str, int]]]:
        """The member out failed: the class waits for a new event, each member the
        wake covered having failed once more (its share grows by one). Returns the
        covered segments, detached: upstream's retries of them came after the
        failure, so they go behind the failed member (`reattach`, once it is put)."""
        self._out.pop(cls.out, None)
        tail = [cls.segments.popleft() for _ in range(min(cls.covered, len(cls.segments)))]
        cls.rounds += 1
        cls.history[cls.rounds] = Round(now_ns, cls.woken_at, cls.awake)
        cls.awake, cls.out, cls.covered = 0, "", 0
        slot = (cls.key, self._backoff_of(cls.attempts))
        if self._joinable.get(slot) is cls:
            del self._joinable[slot]
        cls.attempts += 1
        # The failed member joins it again (its attempts are the class's now); a
        # class of later pods at that backoff takes new members no more.
        self._joinable[(cls.key, self._backoff_of(cls.attempts))] = cls
        cls.last_cycle = max(cls.last_cycle, cycle)
        return tail

    def rekey(self, cls: PodClass, key: Hashable) -> None:
        """The class's members now have another class key; new pods no longer
        join it under the old one."""
        slot = (cls.key, self._backoff_of(cls.attempts))
        if self._joinable.get(slot) is cls:
            del self._joinable[slot]
        cls.key = key

    def reattach(self, cls: PodClass, tail: list[deque[tuple[str, int]]]) -> None:
        cls.segments.extend(tail)
        self._drop_if_idle(cls)

    def live_in(self, cls: PodClass, segments: list[deque[tuple[str, int]]]) -> list[str]:
        """The members still in these segments, in order."""
        return [k for seg in segments for k, seq in seg if self._of.get(k) is cls and self._seq[k] == seq]

    def live_first(self, cls: PodClass, segments: list[deque[tuple[str, int]]]) -> str | None:
        """The first member still in these segments."""
        for seg in segments:
            for k, seq in seg:
                if self._of.get(k) is cls and self._seq[k] == seq:
                    return k
        return None

    def release(self, cls: PodClass) -> None:
        """The wake is over without a failure (no member left that it covered)."""
        self._out.pop(cls.out, None)
        # Members that joined while it was awake (all behind what it covered) keep
        # no share of a failure that did not happen.
        for key in self.live_in(cls, list(cls.segments)[cls.covered:]):
            self._set_base(cls, key, min(self._base[key], cls.rounds))
        cls.awake, cls.out, cls.covered = 0, "", 0
        self._drop_if_idle(cls)

    def _clean_front(self, cls: PodClass) -> None:
        segs = cls.segments
        while segs:
            seg = segs[0]
            while seg and not (self._of.get(seg[0][0]) is cls and self._seq[seg[0][0]] == seg[0][1]):
                seg.popleft()
            if seg:
                return
            segs.popleft()
            if cls.covered:
                cls.covered -= 1

    def _drop_if_idle(self, cls: PodClass) -> None:
        if not cls.count and not cls.awake and self._classes.pop(id(cls), None) is not None:
            slot = (cls.key, self._backoff_of(cls.attempts))
            if self._joinable.get(slot) is cls:
                del self._joinable[slot]
