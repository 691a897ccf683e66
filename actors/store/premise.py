"""Early watchers and the premise of what they derive (one of the Store's duties).

The SQLite store tells its *early* watchers (the in-process scheduler: its cache and
queue, which acknowledge nothing to anyone) of a turn when the turn is handed to the
disk, not when it is durable; every other watcher and every caller hears only once
it is durable (actors/store/local_commit.py). So the scheduler's cycle for a
completion runs while the delete's fsync does.

What the scheduler derives from such a turn stays safe:

- after kill -9: a bind is a write the store applies only after the turn it was
  derived from was handed over, and at most one commit is in flight, so the bind's
  commit comes after its premise's (SQLite's commits are ordered): no bind is
  durable whose premise is not;
- after a commit that fails (the process lives on): the early watchers are told the
  turn's changes undone (`undoing`), each at a fresh resourceVersion, and the
  versions from the turn's first to the last undoing one form a lost view
  (`LostViews`). A Bind carries the newest resourceVersion its scheduling cycle had
  seen (`DERIVED_FROM`, set on the binding cycle's task by the scheduler); one whose
  premise lies in a lost view is refused (Conflict), so the scheduler forgets the
  pod and tries it again on its repaired view.

A turn holding a Bind is not told early: the scheduler learns of its own binds once
they are durable, as before (undoing a bind would move a pod off a node, which no
watcher of kube-apiserver ever sees).
"""
from __future__ import annotations

import contextvars
from typing import Iterable

from actors.store.messages import Conflict, WatchEvent

# The newest resourceVersion the view a write was derived from had seen (0: not derived
# from an early view: a client's write, or one made before any early event).
DERIVED_FROM: contextvars.ContextVar[int] = contextvars.ContextVar("ksched_derived_from", default=0)


def deriving_from(rv: int) -> contextvars.Context:
    """A context for a task whose writes are derived from a view that had seen `rv`."""
    ctx = contextvars.copy_context()
    ctx.run(DERIVED_FROM.set, rv)
    return ctx


def undoing(events: list[WatchEvent], first_rv: int) -> list[WatchEvent]:
    """The events that take an early watcher back from after `events` to before them:
    each undone in reverse order, at resourceVersions from `first_rv` up."""
    out: list[WatchEvent] = []
    for i, ev in enumerate(reversed(events)):
        rv = first_rv + i
        if ev.type == "ADDED":
            out.append(WatchEvent("DELETED", ev.kind, ev.obj, ev.obj, rv))
        elif ev.type == "DELETED":
            out.append(WatchEvent("ADDED", ev.kind, ev.obj, None, rv))
        else:
            assert ev.old is not None, "a MODIFIED event always carries the object before it"
            out.append(WatchEvent("MODIFIED", ev.kind, ev.old, ev.obj, rv))
    return out


class LostViews:
    """The resourceVersion ranges of views that held changes never stored: a view
    whose newest version lies in one had seen a failed turn and not all of its undoing."""

    def __init__(self) -> None:
        self._ranges: list[tuple[int, int]] = []

    def add(self, first: int, last: int) -> None:
        self._ranges.append((first, last))

    def holds(self, rv: int) -> bool:
        return rv > 0 and any(first <= rv <= last for first, last in self._ranges)

    def check(self, rv: int, what: str) -> None:
        """Refuse a write derived from a lost view."""
        if self.holds(rv):
            raise Conflict(f"Operation cannot be fulfilled on {what}: it was decided on a view at "
                           f"resourceVersion {rv} that held changes the store failed to commit; "
                           "decide again on the current state")

    @property
    def ranges(self) -> Iterable[tuple[int, int]]:
        return tuple(self._ranges)
