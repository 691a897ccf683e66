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
  affected; only garbage in reference cycles waits a little longer.
Measured in docs/decisions.md (about a fifth of the daemon's CPU for admitting and
parsing a 20,000-pod apply).
"""
from __future__ import annotations

import gc

GEN0_THRESHOLD = 50_000


def tune_after_start() -> tuple[int, int, int]:
    """Freeze what start-up made and raise the first threshold; the thresholds before."""
    before = gc.get_threshold()
    gc.collect()  # what start-up left as garbage goes, rather than being frozen
    gc.freeze()
    gc.set_threshold(GEN0_THRESHOLD, before[1], before[2])
    return before
