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
  leaves the pool (`rounds`), and waits for a new event.

A completion costs O(classes woken), not O(pods queued). The queue keeps the
members in the pool (`UnschedulablePool`), so every other path (delete, update,
activate, the leftover timeout, counts) sees them as before.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Iterator

from framework.interface import QueuedPodInfo


@dataclass(slots=True, eq=False)
class PodClass:
    """One class: its parked members in put order, and its wake."""

    key: Hashable
    members: dict[str, int] = field(default_factory=dict)  # pod key -> put seq, in put order
    awake: int = 0  # 0: parked; else the requeue strategy (Strategy) its members follow with
    out: str = ""  # while awake: the member out of the pool (activeQ, backoffQ or in flight)
    covered: int = 0  # while awake: members put at or before this seq follow the one out
    rounds: int = 0  # failures of the class; a member's share is rounds minus its base
    parked_at: int = 0  # ns: when the last failure parked it
    last_cycle: int = 0  # the scheduling cycle of the last failure

    def first(self) -> str:
        return next(iter(self.members))

    def next_covered(self) -> str | None:
        """The member that follows the one out: the earliest put the wake covered."""
        for key, seq in self.members.items():
            return key if seq <= self.covered else None
        return None


@dataclass(frozen=True, slots=True)
class Share:
    """What a member leaving the pool takes of its class's failures."""

    rounds: int
    parked_at: int
    last_cycle: int

    def apply(self, qpi: QueuedPodInfo) -> None:
        """As if it had been attempted with the class each time: the attempts, the
        queue timestamp of the last failure, the cycle of it."""
        if self.rounds <= 0:
            return
        qpi.attempts += self.rounds
        qpi.timestamp = max(qpi.timestamp, self.parked_at)
        qpi.backoff_expiration = None
        qpi.popped_cycle = max(qpi.popped_cycle, self.last_cycle)


class ClassIndex:
    """The classes of the pool's members, and which member is out for which class."""

    def __init__(self) -> None:
        self._classes: dict[Hashable, PodClass] = {}
        self._of: dict[str, PodClass] = {}  # member (parked) -> its class
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

    def join(self, key: str, class_key: Hashable, seq: int) -> PodClass:
        cls = self._classes.get(class_key)
        if cls is None:
            cls = self._classes[class_key] = PodClass(class_key)
        cls.members[key] = seq
        self._of[key] = cls
        # A member joining an awake class was not woken with it: the failure that
        # parks the class next is not its own.
        self._base[key] = cls.rounds + (1 if cls.awake else 0)
        return cls

    def share_of(self, key: str) -> Share | None:
        """`key`'s share of its class's failures so far (None: no class)."""
        cls = self._of.get(key)
        return None if cls is None else Share(cls.rounds - self._base[key], cls.parked_at, cls.last_cycle)

    def leave(self, key: str) -> Share | None:
        """`key` leaves the pool: its share of its class's failures (None: no class)."""
        cls = self._of.pop(key, None)
        if cls is None:
            return None
        del cls.members[key]
        share = Share(cls.rounds - self._base.pop(key), cls.parked_at, cls.last_cycle)
        self._drop_if_idle(cls)
        return share

    def parked(self) -> Iterator[PodClass]:
        """The classes an event may wake (parked, with members)."""
        return (c for c in self._classes.values() if not c.awake and c.members)

    def wake(self, cls: PodClass, out: str, strategy: int, covered: int) -> None:
        cls.awake, cls.covered = strategy, covered
        self.lead(cls, out)

    def lead(self, cls: PodClass, out: str) -> None:
        if cls.out:
            self._out.pop(cls.out, None)
        cls.out = out
        self._out[out] = cls

    def park(self, cls: PodClass, now_ns: int, cycle: int) -> None:
        """The member out failed: the class waits for a new event, each member the
        wake covered having failed once more (its share grows by one)."""
        self._out.pop(cls.out, None)
        cls.awake, cls.out, cls.covered = 0, "", 0
        cls.rounds += 1
        cls.parked_at = max(cls.parked_at, now_ns)
        cls.last_cycle = max(cls.last_cycle, cycle)
        self._drop_if_idle(cls)

    def release(self, cls: PodClass) -> None:
        """The wake is over without a failure (no member left that it covered)."""
        self._out.pop(cls.out, None)
        # Members that joined while it was awake (the last ones put) keep no share
        # of a failure that did not happen.
        for key in reversed(cls.members):
            if self._base[key] <= cls.rounds:
                break
            self._base[key] = cls.rounds
        cls.awake, cls.out, cls.covered = 0, "", 0
        self._drop_if_idle(cls)

    def covered_members(self, cls: PodClass, covered: int) -> list[str]:
        """The members put at or before `covered` (a re-key after a park)."""
        return [k for k, seq in cls.members.items() if seq <= covered]

    def _drop_if_idle(self, cls: PodClass) -> None:
        if not cls.members and not cls.awake and self._classes.get(cls.key) is cls:
            del self._classes[cls.key]
