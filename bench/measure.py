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

Key = tuple[str, str]  # (namespace, name)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


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


@dataclass
class BindTracker:
    """Counts first bindings of the pods it is told about, from watch events.

    `wait(keys, count)` returns once `count` of `keys` are bound, or when no new
    binding arrived for `stall_seconds` (whatever could bind has bound)."""

    stall_seconds: float = 60.0
    bound_at: dict[Key, float] = field(default_factory=dict)
    submitted_at: dict[Key, float] = field(default_factory=dict)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def submitted(self, keys: list[Key]) -> None:
        now = time.perf_counter()
        for k in keys:
            self.submitted_at.setdefault(k, now)

    def observe(self, key: Key, node_name: str | None) -> None:
        if node_name and key not in self.bound_at:
            self.bound_at[key] = time.perf_counter()
            self._changed.set()

    def bound(self, keys: set[Key]) -> int:
        return sum(1 for k in keys if k in self.bound_at)

    async def wait(self, keys: set[Key], count: int) -> bool:
        """True when `count` of `keys` are bound; False after a stall."""
        while self.bound(keys) < count:
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=self.stall_seconds)
            except TimeoutError:
                return False
        return True

    def latencies_ms(self, keys: set[Key]) -> list[float]:
        return [(self.bound_at[k] - self.submitted_at[k]) * 1000 for k in keys
                if k in self.bound_at and k in self.submitted_at]

    def last_bound(self, keys: set[Key]) -> float | None:
        times = [self.bound_at[k] for k in keys if k in self.bound_at]
        return max(times) if times else None
