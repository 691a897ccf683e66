"""Binding cycles: one task per assumed pod, many at once.

A binding cycle waits for Permit, then runs PreBind and Bind, and reports its
outcome (a Status) to the scheduler as a message; the scheduler's loop then runs
PostBind, or `undo_assume` (Unreserve in reverse order, forget the assumed pod)
and its failure handler (requeue with backoff, event, pod status). A cycle never
touches the scheduler's cache itself. Every outcome is a Status; one pod's
failure never touches another pod's cycle. A pod that waited at Permit has its wait recorded
(scheduler_permit_wait_duration_seconds, by the decision's code) as upstream's
WaitOnPermit does.
"""
from __future__ import annotations

import asyncio
import contextvars
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from actors.clock import Clock
from actors.metrics_sink import NO_METRICS, MetricsSink, code_name
from framework.api.objects import Pod
from framework.bind_writes import offer
from framework.cache import Cache
from framework.extender import Extender, extenders_binding
from framework.interface import Code, CycleState, QueuedPodInfo, Status
from framework.runtime import Framework

_SUCCESS, _SKIP = Code.Success, Code.Skip


@dataclass(slots=True, kw_only=True)
class AssumedPod:
    """Everything a binding cycle needs about one pod the scheduling cycle assumed."""

    fwk: Framework
    state: CycleState
    qpi: QueuedPodInfo
    pod: Pod  # the assumed copy, spec.nodeName set
    node_name: str
    permit: asyncio.Future[Status] | None  # None when Permit allowed at once
    started: float = 0.0  # when the scheduling cycle began (clock seconds), for the attempt's duration
    assumed_at: float = 0.0  # when the cache assumed the pod (clock seconds): assume-to-bound latency


def undo_assume(a: AssumedPod, cache: Cache, record: Callable[[str], None] | None = None) -> None:
    """The one place that rolls back an assumed pod: Unreserve (reverse order)
    then forget it in the cache."""
    a.fwk.run_unreserve(a.state, a.pod, a.node_name)
    cache.forget_pod(a.pod)
    if record is not None:
        record("forget")


class BindingHost(Protocol):
    """What a binding cycle reports to (the Scheduler actor)."""

    def binding_done(self, a: AssumedPod, status: Status) -> None:
        """Post the cycle's outcome to the host's inbox (never handled in place)."""
        ...

    def binding_cancelled(self, a: AssumedPod) -> None:
        """The host's own loop is being cancelled: undo without a message."""
        ...


class BindingCycles:
    """Counts the cycles that are doing work (not parked at Permit), so the
    pipeline can tell when nothing is left to do. `total` (all cycles whose
    outcome the host has not handled yet) is kept by the host.

    The cycles are the host loop's children as an asyncio.TaskGroup's would be
    (`open`, `start`, `close` around the loop), without the group's done callback
    and its loop turn a pod: a cycle's `run` takes its task out itself, and an
    exception escaping it (its report to the host raised) is the group's child
    error: the other cycles are cancelled and so is the host's loop, which then
    raises them in a BaseExceptionGroup, as leaving the group did."""

    def __init__(self, host: BindingHost, record: Callable[[str], None] | None = None, *,
                 metrics: MetricsSink = NO_METRICS, clock: Clock | None = None,
                 extenders: Sequence[Extender] = ()) -> None:
        self.host = host
        self.extenders = extenders
        self.record = record
        self.metrics = metrics
        self.clock = clock
        self.running = 0  # cycles not waiting at Permit
        self.total = 0  # all live cycles, counted by the host from start to its handling of BindingDone
        self.tasks: dict[int, asyncio.Task] = {}  # the live cycles' tasks by id() of their pod's AssumedPod
        self.cancelled_by_host = False  # cancel_all ran: a cancelled cycle reports by message
        self.undone_in_place = 0  # cycles cancelled with the host's loop (no message could be read)
        # What the TaskGroup kept: the host's task, its errors, whether it is cancelling the cycles.
        self._parent: asyncio.Task | None = None
        self._parent_cancel_requested = False
        self._aborting = False
        self.errors: list[BaseException] = []

    def open(self) -> None:
        """The host's loop begins (TaskGroup.__aenter__): cycles started from now on are its children."""
        self._parent = asyncio.current_task()

    def start(self, a: AssumedPod, context: contextvars.Context) -> None:
        """`run(a)` as a task of its own in `context`, scheduled as TaskGroup.create_task's (its
        first step in the loop's next turn), tracked until the run ends (no done callback)."""
        if self._aborting:
            raise RuntimeError("binding cycles are shutting down")
        loop = asyncio.get_running_loop()
        if loop.get_task_factory() is None:  # the loop's create_task's own path, without its frames
            self.tasks[id(a)] = asyncio.Task(self.run(a), loop=loop, context=context)
        else:
            self.tasks[id(a)] = loop.create_task(self.run(a), context=context)

    def track(self, a: AssumedPod, task: asyncio.Task) -> None:
        """The task running `run(a)` (the host creates it), kept until that run ends: the
        run takes it out itself, so no done callback (and no loop turn's handle a pod) for
        it. A task cancelled before its first step never runs: cancel_all drops it."""
        self.tasks[id(a)] = task

    def cancel_all(self) -> None:
        """Stop's grace period ran out while the host's loop still runs: cancel every
        cycle; each reports "binding cycle cancelled" as its outcome, by message."""
        self.cancelled_by_host = True
        for key, task in list(self.tasks.items()):
            if task.done():
                del self.tasks[key]
            else:
                task.cancel()

    async def run(self, a: AssumedPod) -> None:
        try:
            self.running += 1
            try:
                status = await self._bind(a)
            except asyncio.CancelledError:
                # Cancelled mid-flight (grace period over): leave the pod unbound and queued.
                if not self.cancelled_by_host:  # the host's loop is being cancelled too: no message can be read
                    self.undone_in_place += 1
                    self.host.binding_cancelled(a)
                    raise
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()  # the host asked for it and hears the outcome below
                status = Status(Code.Error, "binding cycle cancelled")
            except Exception as e:  # noqa: BLE001 - a bug in a cycle must not reach its siblings
                status = Status.error_of(e)
            finally:
                self.running -= 1
            self.host.binding_done(a, status)
        except Exception as e:  # noqa: BLE001 - the report itself raised: a TaskGroup child's error
            self._child_failed(e)
        finally:
            self.tasks.pop(id(a), None)  # (track's; a is alive until then, so its id is its own)

    def _child_failed(self, e: Exception) -> None:
        """TaskGroup._on_task_done for a child that raised: kept, and the first one
        cancels every other cycle and the host's loop."""
        self.errors.append(e)
        if not self._aborting and not self._parent_cancel_requested and self._parent is not None \
                and not self._parent.done():
            self._abort()
            self._parent_cancel_requested = True
            self._parent.cancel()

    def _abort(self) -> None:
        self._aborting = True
        for task in list(self.tasks.values()):
            if not task.done():
                task.cancel()

    async def close(self, exc: BaseException | None) -> None:
        """The host's loop ended (`exc`: what it raised, if anything): TaskGroup.__aexit__'s
        work. The cycles left are awaited (cancelled first when the loop raised); then the
        loop's CancelledError is raised on, or the cycles' errors (and the loop's own) in a
        BaseExceptionGroup."""
        propagate = exc if isinstance(exc, asyncio.CancelledError) else None
        if self._parent_cancel_requested and self._parent is not None and self._parent.uncancel() == 0:
            propagate = None
        if exc is not None and not self._aborting:
            self._abort()
        while live := [task for task in self.tasks.values() if not task.done()]:
            try:
                await asyncio.wait(live)
            except asyncio.CancelledError as ex:
                if not self._aborting:
                    propagate = ex
                    self._abort()
        self._aborting = True  # (the group is finished: no cycle starts after it)
        if isinstance(exc, (SystemExit, KeyboardInterrupt)):
            raise exc
        if propagate is not None and not self.errors:
            raise propagate
        errors = [*self.errors, *([exc] if exc is not None and not isinstance(exc, asyncio.CancelledError) else [])]
        if errors:
            raise BaseExceptionGroup("unhandled errors in a TaskGroup", errors) from None

    async def _bind(self, a: AssumedPod) -> Status:
        if a.permit is not None:
            self.running -= 1
            waited_from = self.clock.now() if self.clock is not None else 0.0
            try:
                status = await a.permit
            finally:
                self.running += 1
            if self.clock is not None:
                self.metrics.permit_wait(code_name(status), max(0.0, self.clock.now() - waited_from))
            if not status.is_success():
                return status
        extenders = self.extenders  # (none: no extender's check, no extenders' binding to await)
        if a.fwk.binder_carries_writes() and not (extenders and any(e.config.is_binder() and e.is_interested(a.pod)
                                                                    for e in extenders)):
            offer(a.state)  # PreBind's updates go in the binding's own store write
        status = await a.fwk.run_pre_bind(a.state, a.pod, a.node_name)
        if status.code != _SUCCESS:  # (is_success and is_skip read in place: every pod's cycle)
            return status
        if extenders:
            # Extenders bind first (upstream's extendersBinding), then the Bind plugins.
            bound, status = await extenders_binding(extenders, a.pod, a.node_name)
            if bound:
                return status
        status = await a.fwk.run_bind(a.state, a.pod, a.node_name)
        if status.code == _SKIP:
            return Status(Code.Error, "no bind plugin bound the pod")
        return status
