"""The queue actor's timers at wall-clock-sized readings (seconds since 1970).

A float there is ~240 ns coarse: a flush timer armed at ns / 1e9 could fire at an
instant the queue still sees as before the limit, find nothing to move and re-arm
at the same instant, so a FakeClock never moved past it (run_until_quiescent spun).
"""
from __future__ import annotations

import math
import random

import pytest

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.queue.scheduling_queue import NS, to_ns
from actors.queue.actor import clock_time_at
from tests.actors.helpers import node, pod

EPOCH_STARTS = [1767225600.0, 1767225600.123456, 1.7e9 + 0.1]


@pytest.mark.parametrize("ns", [1767225900 * NS, 1767225900 * NS + 1, 1767225600123456789, 1_700_000_300_100_000_001,
                                300 * NS + 1], ids=str)
def test_a_timer_time_is_the_first_float_the_queue_reads_as_that_instant_or_later(ns: int) -> None:
    t = clock_time_at(ns)
    assert to_ns(t) >= ns
    assert t == ns / NS or to_ns(math.nextafter(t, -math.inf)) < ns


@pytest.mark.parametrize("start", EPOCH_STARTS, ids=str)
async def test_an_unschedulable_pod_is_retried_when_its_five_minute_timer_fires(start: float) -> None:
    clock = FakeClock(start)
    async with Pipeline(None, clock=clock, rand=random.Random(1)) as p:
        await p.client.apply([node("n0", cpu="1")])
        await p.client.apply([pod("big", cpu="2")])
        await p.run_until_quiescent(max_seconds=60)
        assert "default/big" in p.queue.queue.unschedulable
        attempts = p.scheduler.stats.attempts
        due = clock.next_deadline()
        assert due is not None and 300 <= due - start < 301
        clock.advance_to(due)
        await p.settle()
        assert p.scheduler.stats.attempts == attempts + 1  # moved out of the pool, tried, rejected again
        after = clock.next_deadline()
        assert after is not None and after > due  # not re-armed at the same instant
        await p.run_until_quiescent(max_seconds=400)  # returned: the clock moved past each timer
        assert p.scheduler.stats.attempts > attempts + 1
