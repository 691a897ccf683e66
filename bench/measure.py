"""What every bench run measures, whichever way the pods travel: when each
measured pod was submitted and when its binding was seen, and the figures made
from those (pods/s, latency percentiles, peak RSS).
"""
from __future__ import annotations

import asyncio
import resource
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from actors.metrics_sink import percentile

if TYPE_CHECKING:
    from actors.pipeline import Pipeline

Key = tuple[str, str]  # (namespace, name)


def peak_rss_mb(children: bool = False) -> float:
    """Peak resident set of this process (or of its largest waited-for child), in MiB."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    kib = usage.ru_maxrss / 1024 if sys.platform == "darwin" else usage.ru_maxrss  # bytes on macOS, KiB on Linux
    return round(kib / 1024, 1)


def proc_peak_rss_mb(pid: int) -> float | None:
    """Another live process's peak resident set (Linux VmHWM), in MiB; None where unknown."""
    kib = _proc_status_kib(pid, "VmHWM:")
    return None if kib is None else round(kib / 1024, 1)


def proc_rss_kib(pid: int) -> int | None:
    """Another live process's resident set now (Linux VmRSS), in KiB; None where unknown."""
    return _proc_status_kib(pid, "VmRSS:")


def _proc_status_kib(pid: int, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class _Waiter:
    """Resolved once `need` more of `keys` (None: any pod) have bound for the first time."""

    __slots__ = ("keys", "need", "done")

    def __init__(self, keys: set[Key] | None, need: int) -> None:
        self.keys = keys
        self.need = need
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()


@dataclass
class BindTracker:
    """Records first bindings of pods from watch events and wakes whoever waits on them.

    Each binding touches only the waiters registered (one or two), never the pods
    seen so far: `wait(keys, count)` counts down as bindings arrive and returns once
    `count` of `keys` are bound, or when no new binding arrived for `stall_seconds`
    (whatever could bind has bound)."""

    stall_seconds: float = 60.0
    bound_at: dict[Key, float] = field(default_factory=dict)
    submitted_at: dict[Key, float] = field(default_factory=dict)
    binds: int = 0  # first bindings seen, of any pod
    order: list[Key] = field(default_factory=list)  # pods in the order their first binding was seen
    _waiters: list[_Waiter] = field(default_factory=list)

    def submitted(self, keys: list[Key]) -> None:
        now = time.perf_counter()
        for k in keys:
            self.submitted_at.setdefault(k, now)

    def observe(self, key: Key, node_name: str | None) -> None:
        if not node_name or key in self.bound_at:
            return
        self.bound_at[key] = time.perf_counter()
        self.binds += 1
        self.order.append(key)
        for w in self._waiters:
            if w.keys is None or key in w.keys:
                w.need -= 1
                if w.need <= 0 and not w.done.done():
                    w.done.set_result(None)

    def bound(self, keys: set[Key]) -> int:
        return sum(1 for k in keys if k in self.bound_at)

    async def wait(self, keys: set[Key], count: int, have: int | None = None) -> bool:
        """True when `count` of `keys` are bound; False after a stall. `have`: how
        many of them the caller knows are bound (saves counting them)."""
        return await self._await(_Waiter(keys, count - (self.bound(keys) if have is None else have)))

    async def wait_new(self, keys: set[Key] | None, count: int = 1) -> bool:
        """True when `count` more of `keys` (None: any pod) bind from now; False after a stall."""
        return await self._await(_Waiter(keys, count))

    async def _await(self, w: _Waiter) -> bool:
        if w.need <= 0:
            return True
        self._waiters.append(w)
        try:
            while True:
                seen = self.binds
                try:
                    await asyncio.wait_for(asyncio.shield(w.done), timeout=self.stall_seconds)
                    return True
                except TimeoutError:
                    if self.binds == seen:  # nothing bound for stall_seconds
                        return False
        finally:
            self._waiters.remove(w)

    def latencies_ms(self, keys: set[Key]) -> list[float]:
        return [(self.bound_at[k] - self.submitted_at[k]) * 1000 for k in keys
                if k in self.bound_at and k in self.submitted_at]

    def last_bound(self, keys: set[Key]) -> float | None:
        times = [self.bound_at[k] for k in keys if k in self.bound_at]
        return max(times) if times else None


class Counters:
    """The scheduler's counters over the measured phase: attempts, failed attempts and
    the assume-to-bound latencies of the binds in it (measured pods and any background
    pods alike)."""

    def __init__(self, attempts: int = 0, failed: int = 0, bind_seconds: "list[float] | tuple[float, ...]" = ()) -> None:
        self.attempts = attempts
        self.failed = failed
        self.bind_seconds = list(bind_seconds)

    @classmethod
    def between(cls, before: StatsSnapshot, after: StatsSnapshot) -> "Counters":
        """From two SchedulerStats (in process): the binds since `before` are the newest."""
        new = after.scheduled - before.scheduled
        binds = list(after.bind_latencies)[-new:] if new > 0 else []
        return cls(after.attempts - before.attempts, after.failed - before.failed, binds)

    def result(self, pods: int, rss_mb: float | None) -> dict[str, Any]:
        ms = [s * 1000 for s in self.bind_seconds]
        return {
            "attempts": self.attempts,
            "attempts_per_pod": round(self.attempts / pods, 2) if pods else 0.0,
            "failed_attempts": self.failed,
            "bind_p50_ms": round(percentile(ms, 0.50), 3),
            "bind_p99_ms": round(percentile(ms, 0.99), 3),
            "binds": len(ms),
            "peak_rss_mb": rss_mb,
            "rss_mb": rss_mb,
        }


@dataclass(frozen=True, slots=True)
class StatsSnapshot:
    """The in-process scheduler's counters at one moment, as its GetStats reply gives them."""

    attempts: int
    failed: int
    scheduled: int
    bind_latencies: tuple[float, ...]
    e2e_latencies: tuple[float, ...] = ()


async def stats_snapshot(p: "Pipeline") -> StatsSnapshot:
    """Asked of the scheduler (a GetStats message), as any client asks."""
    s = await p.scheduler_stats(latencies=True)
    return StatsSnapshot(s.attempts, s.failed, s.scheduled, s.bind_seconds, s.e2e_seconds)
