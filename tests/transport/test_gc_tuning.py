"""The daemon's collector after start-up (transport.daemon.gc_tuning): what start-up
made is frozen out of the collector's walks, young collections come less often, and
what the daemon keeps afterwards is frozen as it grows, with cyclic garbage still
collected by a full pass once the heap has grown by FULL_GROWTH."""
from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import pytest

from transport.daemon import gc_tuning
from transport.daemon.gc_tuning import GEN0_THRESHOLD, GrowthFreezer, tune_after_start, untune


class Node:
    """A tracked object that can be put in a cycle and weakly referenced."""

    def __init__(self) -> None:
        self.other: Any = None


def test_start_up_objects_are_frozen_and_the_first_threshold_is_raised() -> None:
    made_at_start = [{"kind": "Pod", "n": i} for i in range(1000)]
    before = gc.get_threshold()
    try:
        assert tune_after_start() == before
        assert gc.get_threshold() == (GEN0_THRESHOLD, before[1], before[2])
        assert gc.get_freeze_count() >= len(made_at_start)
        assert not any(gc.is_tracked(o) and o in gc.get_objects(generation=2) for o in made_at_start[:1])
    finally:
        untune(before)


def test_what_the_daemon_keeps_after_start_up_is_frozen_before_a_young_collection_walks_it(monkeypatch) -> None:
    monkeypatch.setattr(gc_tuning, "FULL_MIN", 10**9)  # no full pass here
    before = gc.get_threshold()
    try:
        tune_after_start()
        freezer = GrowthFreezer()
        kept = [Node() for _ in range(gc_tuning.FREEZE_AT + 100)]
        frozen = gc.get_freeze_count()
        freezer.check()
        assert gc.get_count()[0] < 100 and gc.get_freeze_count() >= frozen + len(kept)
        assert freezer.freezes == 1 and freezer.full_passes == 0
        few = [Node() for _ in range(100)]
        freezer.check()  # fewer than FREEZE_AT new objects: left young
        assert freezer.freezes == 1 and len(few) == 100
    finally:
        untune(before)


def test_garbage_in_cycles_made_after_start_up_goes_in_the_full_pass_once_the_heap_has_grown(monkeypatch) -> None:
    monkeypatch.setattr(gc_tuning, "FREEZE_AT", 1_000)
    monkeypatch.setattr(gc_tuning, "FULL_MIN", 0)
    before = gc.get_threshold()
    try:
        tune_after_start()
        freezer = GrowthFreezer()
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle, frozen with the rest below, then dropped
        dead = weakref.ref(a)
        kept: list[Node] = []
        kept += [Node() for _ in range(2_000)]
        freezer.check()
        del a, b
        gc.collect()  # a collection does not see frozen objects: the cycle stays
        assert dead() is not None and freezer.full_passes == 0
        while freezer.full_passes == 0:  # the heap grows until the frozen growth reaches FULL_GROWTH of it
            kept += [Node() for _ in range(2_000)]
            freezer.check()
            assert gc.get_freeze_count() - freezer.heap <= gc_tuning.FULL_GROWTH * freezer.heap + 2 * 2_000 + 100
        assert dead() is None and freezer.collected >= 2
        assert freezer.grown == 0 and freezer.heap == gc.get_freeze_count()  # everything kept is frozen again
    finally:
        untune(before)


def test_the_freezer_runs_on_the_loop_from_start_up_and_untune_gives_the_collector_back() -> None:
    before = gc.get_threshold()
    seen: list[Any] = []

    async def run() -> None:
        tune_after_start()
        freezer = gc_tuning.freezer()
        assert freezer is not None
        timer = freezer._timer  # armed on this loop, CHECK_SECONDS from now
        seen.append(timer is not None and not timer.cancelled())
        untune(before)
        seen.append((gc_tuning.freezer(), timer is not None and timer.cancelled()))

    asyncio.run(run())
    assert seen == [True, (None, True)]
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


@pytest.fixture(autouse=True)
def _collector_given_back() -> Any:
    yield
    assert gc_tuning.freezer() is None
