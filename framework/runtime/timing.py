"""How a Framework times its whole extension points: a PointTimer given to it when
it is built. The runtime knows no metrics: the scheduler passes a timer that reports
to its metrics (actors/framework_timing.py); every other Framework runs with
NO_TIMING, which calls the part and nothing else. Each door says where its Status
is in what it returns (the `status_*` functions below), so a timer can name the
code it ended with."""
from __future__ import annotations

from typing import Any, Awaitable, Callable, Protocol, TypeVar

from framework.interface import Status

T = TypeVar("T")

StatusOf = Callable[[Any], "Status | None"]


class PointTimer(Protocol):
    """Runs one extension point's door. `run` and `run_async` must return what
    `fn(*args)` returns (for `run_async`, something to await for it); a timer may
    measure the call and read its Status with `status_of`. Called from the
    scheduler's loop only, never concurrently with itself."""

    def run(self, point: str, status_of: StatusOf, fn: Callable[..., T], *args: Any) -> T: ...

    def run_async(self, point: str, status_of: StatusOf, fn: Callable[..., Awaitable[T]],
                  *args: Any) -> Awaitable[T]: ...


class NoTiming:
    """The timer of a Framework nobody times: the part's call, as it is."""

    __slots__ = ()

    def run(self, point: str, status_of: StatusOf, fn: Callable[..., T], *args: Any) -> T:
        return fn(*args)

    def run_async(self, point: str, status_of: StatusOf, fn: Callable[..., Awaitable[T]],
                  *args: Any) -> Awaitable[T]:
        return fn(*args)


NO_TIMING = NoTiming()


def status_itself(r: Any) -> Status | None:
    return r


def status_first(r: Any) -> Status | None:
    return r[0] if r is not None else None


def status_second(r: Any) -> Status | None:
    return r[1] if r is not None else None


def status_of_run(r: Any) -> Status | None:
    """A PostFilterRun's folded Status."""
    return r.status if r is not None else None


def no_status(r: Any) -> Status | None:
    return None
