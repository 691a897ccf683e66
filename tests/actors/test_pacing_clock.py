"""Slicing a long piece of work reads time through the injected clock: on a fake
clock it depends on step counts alone, so a test's interleaving of actors is the
same on a quiet machine and on a loaded one."""
from __future__ import annotations

import time

from actors.clock import FakeClock, RealClock
from actors.pacing import Pacer


def slow_steps(n: int, pause_s: float):
    for _ in range(n):
        time.sleep(pause_s)  # real work taking real time: longer than the slice
        yield


async def test_on_a_fake_clock_work_is_sliced_by_steps_whatever_it_takes() -> None:
    pacer = Pacer(slice_seconds=0.001, max_steps=10, timer=FakeClock().work_time)
    await pacer.drive(slow_steps(25, 0.002))
    assert pacer.pauses == 2  # after steps 10 and 20, not after each 1 ms of work


async def test_on_the_real_clock_a_long_step_gives_the_loop_a_turn() -> None:
    pacer = Pacer(slice_seconds=0.001, max_steps=10, timer=RealClock().work_time)
    await pacer.drive(slow_steps(5, 0.002))
    assert pacer.pauses == 5
