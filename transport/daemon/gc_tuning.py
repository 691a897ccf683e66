"""The daemon's garbage collector, once it has started (the one place it is tuned).

A daemon allocates in bursts: a big apply makes a dozen dicts per object, and with
CPython's default first threshold (700 net allocations) the collector runs every
few dozen objects, each time walking the young objects, and from time to time
everything the store holds. `tune_after_start`:
- moves what start-up made (modules, configuration, the objects loaded from the
  backend) out of the collector's sight (gc.freeze): they live as long as the
  daemon, and full collections stop walking them;
- raises the first threshold to GEN0_THRESHOLD: young collections come a hundred
  times less often. Memory freed by reference counting (nearly all of it) is not
  affected; only garbage in reference cycles waits a little longer;
- with an event loop running, starts the growth freezer (`GrowthFreezer`) on it.

The store grows: nearly everything a scheduled pod leaves (its objects, its event,
the watch history's entries: ~23 tracked objects) lives as long as the pod, and a
young collection walks it once, then every older one again, to free nothing (the
young collections of a 2,000-pod burst collected no object). So every CHECK_SECONDS
the freezer moves what was made since its last look out of sight too (gc.freeze,
a constant-time splice of the collector's lists), before a young collection comes
for it. Garbage in cycles still goes: once the objects frozen since the last full
pass are as many as the heap held at that pass (FULL_GROWTH), everything is put
back (gc.unfreeze), collected in one full pass and frozen again. Leaked cycles are
bounded by the heap's own size, and a full pass walks each live object about twice
over the heap's doubling, where young and middle collections walked each pod's
objects twice within a few thousand pods and every short-lived object caught
alive at a young collection as well. Measured in docs/decisions.md ("The
collector of a daemon whose store grows").
"""
from __future__ import annotations

import asyncio
import gc

GEN0_THRESHOLD = 50_000
CHECK_SECONDS = 0.05  # how often the freezer looks at what was made since its last look
FREEZE_AT = 10_000  # net young objects from which a look freezes them (fewer: left for the next)
FULL_GROWTH = 1.0  # a full pass once the frozen growth reaches this share of the heap at the last one
FULL_MIN = 200_000  # and at least this many objects (a small daemon's start-up heap)


class GrowthFreezer:
    """Freezes what the daemon keeps, and collects everything in one full pass when the
    frozen growth reaches FULL_GROWTH of the heap at the last one (`check`, every
    CHECK_SECONDS on the loop it was started on)."""

    def __init__(self) -> None:
        self.heap = gc.get_freeze_count()  # objects out of sight after the last full pass
        self.grown = 0  # net objects frozen since then (young counts at each freeze; counted again when due)
        self.freezes = 0
        self.full_passes = 0
        self.collected = 0  # unreachable objects the full passes found
        self._timer: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = loop.call_later(CHECK_SECONDS, self._tick, loop)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        self.check()
        self._timer = loop.call_later(CHECK_SECONDS, self._tick, loop)

    def check(self) -> None:
        """Freeze the young objects if there are FREEZE_AT of them; a full pass when due."""
        young = gc.get_count()[0]
        if young >= FREEZE_AT:
            gc.freeze()
            self.grown += young
            self.freezes += 1
        due = max(FULL_MIN, FULL_GROWTH * self.heap)
        if self.grown >= due:
            # The young counts overstate the growth (objects frozen alive die later): count it.
            self.grown = gc.get_freeze_count() - self.heap
            if self.grown >= due:
                self.full_pass()

    def full_pass(self) -> None:
        """Everything back in sight, one full collection, everything frozen again."""
        gc.unfreeze()
        self.collected += gc.collect()
        gc.freeze()
        self.heap = gc.get_freeze_count()
        self.grown = 0
        self.full_passes += 1


_freezer: GrowthFreezer | None = None


def tune_after_start() -> tuple[int, int, int]:
    """Freeze what start-up made, raise the first threshold and, with an event loop
    running, start the growth freezer on it; the thresholds before."""
    global _freezer
    before = gc.get_threshold()
    gc.collect()  # what start-up left as garbage goes, rather than being frozen
    gc.freeze()
    gc.set_threshold(GEN0_THRESHOLD, before[1], before[2])
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop (a test of the thresholds alone): nothing to run the freezer
        return before
    if _freezer is not None:
        _freezer.stop()
    _freezer = GrowthFreezer()
    _freezer.start(loop)
    return before


def freezer() -> GrowthFreezer | None:
    """The growth freezer running since `tune_after_start`, if any."""
    return _freezer


def untune(before: tuple[int, int, int]) -> None:
    """The collector as it was before `tune_after_start` (an in-process bench gives its
    caller's back): the freezer stopped, nothing frozen, the thresholds `before`."""
    global _freezer
    if _freezer is not None:
        _freezer.stop()
        _freezer = None
    gc.unfreeze()
    gc.set_threshold(*before)
