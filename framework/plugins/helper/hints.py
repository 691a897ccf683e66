"""What every queueing hint does first (upstream's schedutil.As): check that the
event's objects are of the kind the hint was registered for.

A hint given an object of another kind raises HintObjectError, one that cannot
parse what it needs raises HintError; the queue treats any exception from a hint
as Queue, as upstream treats a hint's error."""
from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


class HintError(Exception):
    """A queueing hint could not decide (upstream's hint returns an error): the
    queue treats it as Queue."""


class HintObjectError(HintError, TypeError):
    """An event object of the wrong kind reached a queueing hint."""


def as_objects(kind: type[T], old: Any, new: Any) -> tuple[T | None, T | None]:
    """(old, new) typed as `kind`; None stays None (an add has no old object, a
    delete no new one)."""
    for what, obj in (("old", old), ("new", new)):
        if obj is not None and not isinstance(obj, kind):
            raise HintObjectError(f"unexpected {what} object of type {type(obj).__name__}, "
                                  f"want {kind.__name__}")
    return old, new
