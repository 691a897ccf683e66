"""What the runner's modules share (private to framework.runtime, but for
run_unsuspended, which the package exports): the Statuses they
word for every extension point (Success, and Bind's Skip: one shared object each,
which nothing can change; the Error that names the plugin whose call failed; a
rejection names it too), the profile's settings they read, whether a plugin
offers a columnar form, and
run_unsuspended, which lets a synchronous door run a loop written once as a coroutine
(PostFilter here, schedulePod in framework.algorithm)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Coroutine, TypeVar

from framework.interface import Code, Status

T = TypeVar("T")



class _SharedReasons(list):  # type: ignore[type-arg]
    """The reasons of a shared Status: a list (equal to any list of the same reasons)
    whose every change raises."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("the reasons of a shared Status are never changed")

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse


class _SharedStatus(Status):
    """A Status the runtime hands every caller alike (one object per code, no reasons,
    no plugin): setting an attribute or changing its reasons raises, so no caller can
    change what the next one is handed. Copies and pickles are the object itself."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a shared Status is never changed (set {name})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a shared Status is never changed (deleted {name})")

    def __reduce__(self) -> tuple[Any, tuple[Code]]:
        return shared_status, (self.code,)


def _new_shared(code: Code) -> Status:
    st = _SharedStatus.__new__(_SharedStatus)
    for name, value in (("code", code), ("reasons", _SharedReasons()), ("plugin", ""), ("error", None)):
        object.__setattr__(st, name, value)
    return st


_SHARED = {code: _new_shared(code) for code in (Code.Success, Code.Skip)}


def shared_status(code: Code) -> Status:
    """The shared Status of `code` (Success or Skip)."""
    return _SHARED[code]


_OK = _SHARED[Code.Success]
_SKIPPED = _SHARED[Code.Skip]  # a Bind whose every plugin skipped
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
