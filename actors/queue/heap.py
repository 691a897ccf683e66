"""A heap of QueuedPodInfo keyed by pod key, with removal by key: the shape of
upstream's activeQ and backoffQ (backend/heap)."""
from __future__ import annotations

import heapq
import itertools
from typing import Callable

from framework.interface import QueuedPodInfo

Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]


class PodHeap:
    """A heap of QueuedPodInfo keyed by pod key, with removal by key.
    `by_priority`: `less` is PrioritySort's order (priority, then time queued), which
    never raises; the heap holds (-priority, timestamp, entry) tuples, which Python
    compares in C, and an entry's own comparison (the same order written out) is
    reached only between pods of equal priority and timestamp: the same answers
    without ~11 Python calls a pop. The key is taken at push: a queued pod's priority
    and timestamp change only out of the heap or with a push again (an update), and
    `reheapify` takes them again."""

    def __init__(self, less: Less, *, by_priority: bool = False) -> None:
        self._less = less
        self._keyed = by_priority
        self._entry = _PriorityEntry if by_priority else _Entry
        self._items: list = []  # entries, or (-priority, timestamp, entry) when keyed
        self._by_key: dict[str, _Entry] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, key: str) -> bool:
        return key in self._by_key

    def get(self, key: str) -> QueuedPodInfo | None:
        e = self._by_key.get(key)
        return e.qpi if e is not None else None

    def push(self, qpi: QueuedPodInfo) -> None:
        key, by_key = qpi.pod.key, self._by_key
        old = by_key.pop(key, None)  # remove's work in place (the key then goes last, as there)
        if old is not None:
            old.live = False
        e = self._entry(qpi, next(self._seq), self._less)
        by_key[key] = e
        heapq.heappush(self._items, (-qpi.pod.priority, qpi.timestamp, e) if self._keyed else e)

    def remove(self, key: str) -> QueuedPodInfo | None:
        e = self._by_key.pop(key, None)
        if e is None:
            return None
        e.live = False
        return e.qpi

    def peek(self) -> QueuedPodInfo | None:
        items = self._items
        if self._keyed:
            while items and not items[0][2].live:
                heapq.heappop(items)
            return items[0][2].qpi if items else None
        while items and not items[0].live:
            heapq.heappop(items)
        return items[0].qpi if items else None

    def pop(self) -> QueuedPodInfo | None:
        qpi = self.peek()
        if qpi is not None:
            heapq.heappop(self._items)
            del self._by_key[qpi.pod.key]
        return qpi

    def values(self) -> list[QueuedPodInfo]:
        return [e.qpi for e in self._by_key.values()]

    def reheapify(self) -> None:
        """Restore heap order after `less` changed its mind about queued pods."""
        if self._keyed:
            self._items = [(-e.qpi.pod.priority, e.qpi.timestamp, e) for _, _, e in self._items if e.live]
        else:
            self._items = [e for e in self._items if e.live]
        heapq.heapify(self._items)


class _Entry:
    __slots__ = ("qpi", "seq", "less", "live")

    def __init__(self, qpi: QueuedPodInfo, seq: int, less: Less) -> None:
        self.qpi = qpi
        self.seq = seq
        self.less = less
        self.live = True

    def __lt__(self, other: "_Entry") -> bool:
        if self.less(self.qpi, other.qpi):
            return True
        if self.less(other.qpi, self.qpi):
            return False
        a, b = self.qpi.tie, other.qpi.tie
        return a < b if a and b and a != b else self.seq < other.seq


class _PriorityEntry(_Entry):
    """_Entry.__lt__ with PrioritySort's `less` (higher priority first, then the
    earlier timestamp) written out: the same answer for every pair."""

    __slots__ = ()

    def __lt__(self, other: "_Entry") -> bool:
        a, b = self.qpi, other.qpi
        pa, pb = a.pod.priority, b.pod.priority
        if pa != pb:
            return pa > pb
        ta, tb = a.timestamp, b.timestamp
        if ta != tb:
            return ta < tb
        a, b = a.tie, b.tie
        return a < b if a and b and a != b else self.seq < other.seq
