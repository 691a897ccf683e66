"""What the runner's modules share (private to framework.runtime, but for
run_unsuspended, which the package exports): the Statuses they
word for every extension point (Success: one shared object where no caller changes
it, a new one where one may; the Error that names the plugin whose call failed; a
rejection names it too), the profile's settings they read, whether a plugin
offers a columnar form, and
run_unsuspended, which lets a synchronous door run a loop written once as a coroutine
(PostFilter here, schedulePod in framework.algorithm)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Coroutine, TypeVar

from framework.interface import Code, Status

T = TypeVar("T")

_OK = Status()
# The codes the runner's loops compare with, as module names (a member read off the
# Enum class costs about 0.2 µs a time in this Python).
_SUCCESS, _SKIP = Code.Success, Code.Skip


@dataclass(slots=True)
class ProfileSettings:
    """What a profile's parts read at every run besides their plugins: one object
    shared by the profile's Framework, its parts and its timed siblings, so a
    setting changed after start-up holds in all of them. `use_columnar` False forces
    the plugins' per-node calls (the equivalence tests compare both paths)."""

    profile_name: str
    score_weights: dict[str, int]
    percentage_of_nodes_to_score: int | None = None
    use_columnar: bool = True


def _ok() -> Status:
    return Status()


def _error(plugin: str, text: str) -> Status:
    return Status(Code.Error, text, plugin=plugin)


def _rejected_or_error(plugin: str, st: Status, context: str) -> Status:
    """A plugin's answer that is not Success, as its run returns it: a rejection names
    the plugin; any other code becomes an Error "`context`: its message"."""
    if st.is_rejected():
        return st.with_plugin(plugin)
    return _error(plugin, f"{context}: {st.message()}")


def has_columnar_form(obj: Any, method: str) -> bool:
    """Whether `obj` itself offers the columnar form `method`: on its class or set on
    the instance. A proxy that forwards unknown attributes to a plugin (per-call
    timing) does not count unless it sets the method itself, so it keeps getting
    the per-node calls it wraps."""
    return getattr(type(obj), method, None) is not None or method in getattr(obj, "__dict__", ())


def run_unsuspended(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (no awaited call actually waits) to its
    end, without an event loop. Suspending is a bug of the caller's: it raises."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("a coroutine run without a loop suspended")
