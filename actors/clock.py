"""Injected time: the real clock and a fake one tests drive by hand.

Every actor reads time and arms timers only through a Clock, so backoff and Permit
timeouts are tested exactly without sleeping (upstream injects a clock into its
queue; Trio's MockClock does the same). Times are float seconds; `now_ns()` gives
the integer nanoseconds QueuedPodInfo timestamps use.
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Callable, Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on this clock (wall time for the real clock)."""
        ...

    def call_at(self, when: float, fn: Callable[[], None]) -> Timer:
        """Run `fn` (on the event loop) once the clock reaches `when`."""
        ...

    def work_time(self) -> float:
        """A monotonic reading for measuring how long a piece of work took (how long
        a big apply runs before it gives the loop a turn). A fake clock's does not
        move while work runs, so slicing depends on step counts alone and a test's
        interleaving of actors is the same however loaded the machine is."""
        ...


def now_ns(clock: Clock) -> int:
    return int(round(clock.now() * 1e9))


class RealClock:
    """Wall-clock time, so queue timestamps compare with objects' creationTimestamp
    as upstream's do (Coscheduling sorts pods by their group's creation time)."""

    def now(self) -> float:
        return time.time()

    def call_at(self, when: float, fn: Callable[[], None]) -> Timer:
        loop = asyncio.get_running_loop()
        return loop.call_later(max(0.0, when - self.now()), fn)

    def work_time(self) -> float:
        return time.perf_counter()


class _FakeTimer:
    __slots__ = ("when", "fn", "cancelled")

    def __init__(self, when: float, fn: Callable[[], None]) -> None:
        self.when = when
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """Time moves only when a test calls advance(); due timers then fire in time
    order (ties in arming order), each with the clock set to its own due time."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._heap: list[tuple[float, int, _FakeTimer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def work_time(self) -> float:
        return self._now

    def call_at(self, when: float, fn: Callable[[], None]) -> Timer:
        t = _FakeTimer(when, fn)
        heapq.heappush(self._heap, (when, next(self._seq), t))
        return t

    def next_deadline(self) -> float | None:
        """When the earliest live timer is due, or None if none is armed."""
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def deadlines(self) -> list[float]:
        """When each live timer is due, earliest first."""
        return sorted(when for when, _, t in self._heap if not t.cancelled)

    def advance(self, seconds: float) -> int:
        """Move time forward by `seconds`, firing every timer that falls due;
        returns how many fired."""
        return self.advance_to(self._now + seconds)

    def advance_to(self, when: float) -> int:
        fired = 0
        while True:
            due = self.next_deadline()
            if due is None or due > when:
                break
            _, _, t = heapq.heappop(self._heap)
            self._now = max(self._now, t.when)
            t.fn()
            fired += 1
        self._now = max(self._now, when)
        return fired
