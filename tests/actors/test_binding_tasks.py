"""BindingCycles keeps each cycle's task until the cycle's `run` ends, and takes it
out itself (no done callback: no loop turn a pod for it); cancel_all cancels the
ones still running and drops any that ended without running (cancelled before
their first step)."""
from __future__ import annotations

import asyncio

from actors.binding import BindingCycles
from framework.interface import Code, Status


class Host:
    def __init__(self) -> None:
        self.done: list[tuple[object, str]] = []

    def binding_done(self, a: object, status: Status) -> None:
        self.done.append((a, status.code.name))

    def binding_cancelled(self, a: object) -> None:
        raise AssertionError("not this loop's cancellation")


class Cycles(BindingCycles):
    """The cycle's work: wait for `gate`, then Success (no framework needed)."""

    def __init__(self, host: Host) -> None:
        super().__init__(host)
        self.gate: asyncio.Future[None] | None = None

    async def _bind(self, a: object) -> Status:  # type: ignore[override]
        if self.gate is not None:
            await self.gate
        return Status()


def test_a_cycle_s_task_leaves_the_tracked_set_as_its_run_ends() -> None:
    async def main() -> None:
        host = Host()
        cycles = Cycles(host)
        task = asyncio.get_running_loop().create_task(cycles.run("a"))
        cycles.track("a", task)
        assert list(cycles.tasks.values()) == [task]
        while not task.done():
            await asyncio.sleep(0)
        # Out when the task ends: no callback's turn in between.
        assert not cycles.tasks and host.done == [("a", "Success")]
        assert cycles.running == 0

    asyncio.run(main())


def test_cancel_all_cancels_the_running_cycles_and_drops_the_ones_that_never_ran() -> None:
    async def main() -> None:
        host = Host()
        cycles = Cycles(host)
        loop = asyncio.get_running_loop()
        cycles.gate = loop.create_future()
        running = loop.create_task(cycles.run("running"))
        cycles.track("running", running)
        await asyncio.sleep(0)  # its first step: parked on the gate
        never = loop.create_task(cycles.run("never"))
        cycles.track("never", never)
        never.cancel()  # before its first step: its run never starts
        await asyncio.sleep(0)
        assert never.cancelled() and list(cycles.tasks.values()) == [running, never]
        cycles.cancel_all()
        assert list(cycles.tasks.values()) == [running]
        await running
        assert not cycles.tasks
        assert host.done == [("running", Code.Error.name)]

    asyncio.run(main())
