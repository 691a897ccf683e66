"""The daemon's collector after start-up (transport.daemon.gc_tuning): what start-up
made is frozen out of the collector's walks and young collections come less often."""
from __future__ import annotations

import gc

from transport.daemon.gc_tuning import GEN0_THRESHOLD, tune_after_start


def test_start_up_objects_are_frozen_and_the_first_threshold_is_raised() -> None:
    made_at_start = [{"kind": "Pod", "n": i} for i in range(1000)]
    before = gc.get_threshold()
    try:
        assert tune_after_start() == before
        assert gc.get_threshold() == (GEN0_THRESHOLD, before[1], before[2])
        assert gc.get_freeze_count() >= len(made_at_start)
        assert not any(gc.is_tracked(o) and o in gc.get_objects(generation=2) for o in made_at_start[:1])
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
