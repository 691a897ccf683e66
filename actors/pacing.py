"""Long work on the event loop in slices, so that one big request cannot stop
everyone else (decoding a 15 MiB frame, validating and storing 50,000 objects).

A `Pacer` is told of each step of such work (`await pacer.step()`); after
`slice_seconds` of work, or `max_steps` steps, it gives the loop one turn
(`asyncio.sleep(0)`): the other connections, the scheduler and the timers run,
and the work goes on where it was.
"""
from __future__ import annotations

import asyncio
import time
from typing import Callable, Generator, TypeVar

T = TypeVar("T")

SLICE_SECONDS = 0.005  # work between two turns of the loop
MAX_STEPS = 256  # steps between two turns, whatever their time (a turn costs a few microseconds)


class Pacer:
    __slots__ = ("slice_seconds", "max_steps", "pauses", "_steps", "_since", "_timer")

    def __init__(self, slice_seconds: float = SLICE_SECONDS, max_steps: int = MAX_STEPS,
                 timer: Callable[[], float] = time.perf_counter) -> None:
        self.slice_seconds = slice_seconds
        self.max_steps = max_steps
        self.pauses = 0  # turns given to the loop so far
        self._steps = 0
        self._timer = timer  # a Clock's work_time: a fake clock's makes slicing depend on steps alone
        self._since = timer()

    def due(self) -> bool:
        self._steps += 1
        return self._steps >= self.max_steps or self._timer() - self._since >= self.slice_seconds

    async def pause(self) -> None:
        self.pauses += 1
        await asyncio.sleep(0)
        self._steps = 0
        self._since = self._timer()

    async def step(self) -> None:
        if self.due():
            await self.pause()

    async def drive(self, work: Generator[None, None, T]) -> T:
        """Run a generator that yields between its steps; its return value."""
        while True:
            try:
                next(work)
            except StopIteration as done:
                return done.value
            await self.step()


def run_now(work: Generator[None, None, T]) -> T:
    """Run the same generator without pausing (small inputs, or no event loop)."""
    while True:
        try:
            next(work)
        except StopIteration as done:
            return done.value
