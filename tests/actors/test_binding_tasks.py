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


def _handles_scheduled(loop: asyncio.AbstractEventLoop) -> list[int]:
    """Counts every call_soon (a loop turn's handle) made on `loop`."""
    made: list[int] = []
    call_soon = loop.call_soon

    def counted(*args, **kw):
        made.append(1)
        return call_soon(*args, **kw)
    loop.call_soon = counted  # type: ignore[method-assign]
    return made


def test_a_started_cycle_makes_no_done_callback_handle() -> None:
    """start() schedules the cycle's first step and nothing else: when its run ends no
    done callback (the TaskGroup's `_on_task_done`) takes a loop turn."""
    import contextvars

    async def main() -> None:
        host = Host()
        cycles = Cycles(host)
        cycles.open()
        loop = asyncio.get_running_loop()
        made = _handles_scheduled(loop)
        cycles.start("a", contextvars.copy_context())  # type: ignore[arg-type]
        assert len(made) == 1  # its first step
        (task,) = cycles.tasks.values()
        await asyncio.sleep(0)  # the first step runs the whole cycle (nothing awaited)
        assert task.done() and not cycles.tasks and host.done == [("a", "Success")]
        assert len(made) == 2  # the sleep's own wake-up only: no callback for the task
        await cycles.close(None)

    asyncio.run(main())


class FailingHost(Host):
    def binding_done(self, a: object, status: Status) -> None:
        if a == "bad":
            raise ValueError("report failed")
        super().binding_done(a, status)


def test_close_waits_for_the_cycles_left_and_a_failed_report_stops_the_host_as_a_task_group() -> None:
    """As an asyncio.TaskGroup: leaving waits for the running cycles; a cycle whose
    report raises cancels the others and the host's loop, which then raises the
    error in a BaseExceptionGroup."""
    import contextvars

    async def host_loop(cycles: Cycles, gate: asyncio.Future) -> None:
        cycles.open()
        try:
            cycles.start("slow", contextvars.copy_context())  # type: ignore[arg-type]
            cycles.start("bad", contextvars.copy_context())  # type: ignore[arg-type]
            await asyncio.get_running_loop().create_future()  # the host's loop runs until cancelled
        except BaseException as exc:
            await cycles.close(exc)
            raise
        await cycles.close(None)

    async def main() -> None:
        host = FailingHost()
        cycles = Cycles(host)
        gate = asyncio.get_running_loop().create_future()
        cycles.gate = gate  # "slow" and "bad" both wait on it
        task = asyncio.get_running_loop().create_task(host_loop(cycles, gate))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        gate.set_result(None)
        try:
            await task
        except BaseExceptionGroup as eg:
            assert [type(e) for e in eg.exceptions] == [ValueError]
        else:
            raise AssertionError("the host's loop should raise the cycle's error")
        assert not cycles.tasks and host.done == [("slow", "Success")]

    asyncio.run(main())


def test_close_after_a_normal_end_waits_for_running_cycles() -> None:
    import contextvars

    async def main() -> None:
        cycles = Cycles(Host())
        cycles.gate = asyncio.get_running_loop().create_future()
        cycles.open()
        cycles.start("a", contextvars.copy_context())  # type: ignore[arg-type]
        await asyncio.sleep(0)  # parked on the gate, which opens only after close() began
        asyncio.get_running_loop().call_soon(cycles.gate.set_result, None)
        await cycles.close(None)
        assert not cycles.tasks and cycles.host.done == [("a", "Success")]  # type: ignore[attr-defined]

    asyncio.run(main())


def test_a_started_cycle_s_task_is_made_without_the_loop_s_create_task_unless_a_factory_is_set() -> None:
    """start() makes the Task itself (the loop's create_task frames skipped) in the given
    context; a loop with a task factory gets its factory's task, as create_task gave."""
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="outside")
    seen: list[str] = []

    class Reading(Cycles):
        async def _bind(self, a: object) -> Status:  # type: ignore[override]
            seen.append(var.get())
            return Status()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        cycles = Reading(Host())
        cycles.open()

        def refused(*args: object, **kw: object) -> None:
            raise AssertionError("create_task called")

        loop.create_task = refused  # type: ignore[method-assign]
        ctx = contextvars.copy_context()
        ctx.run(var.set, "inside")
        cycles.start("a", ctx)  # type: ignore[arg-type]
        del loop.create_task  # the class's own again
        made: list[asyncio.Task] = []

        def factory(lp: asyncio.AbstractEventLoop, coro: object, **kw: object) -> asyncio.Task:
            task = asyncio.Task(coro, loop=lp, **kw)  # type: ignore[arg-type]
            made.append(task)
            return task

        loop.set_task_factory(factory)
        cycles.start("b", contextvars.copy_context())  # type: ignore[arg-type]
        loop.set_task_factory(None)
        assert [id(t) for t in made] == [id(cycles.tasks[id("b")])]
        await cycles.close(None)
        assert seen == ["inside", "outside"]

    asyncio.run(main())
