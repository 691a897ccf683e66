"""Events ride with the next write: a store turn that would hold nothing but
RecordEvents waits instead of committing them on their own (one of the Store's
duties, used by its turn loop, actors/store/turns.py).

Events are fire and forget and best effort (upstream's event broadcaster hands them
to its sink asynchronously, and nothing waits for them), but each commit of the
durable store is an fsync. In the steady state of a batch cluster every completion
gave one: the woken class's follower fails after its sibling's bind, and its
FailedScheduling event was committed alone, between the bind and the next write.
Held, it is committed in the turn of the next write that comes (a client's delete,
a bind, a status), or after EVENT_HOLD_SECONDS when none does, whichever is first.
The sweep a commit asks for when it takes the stored events past their bound waits the
same way: past `max_events` every new event asks for one (docs/decisions.md, "Churn at
10,000 queued on SQLite").

- Order is kept: held events stay first in the loop's queue, so any message after
  them (a read of the events, a write) is handled after they are applied.
- Whoever assembles the store chooses: the Pipeline (the daemon, bench, conformance)
  holds for EVENT_HOLD_SECONDS; a Store made without `event_hold_seconds` or without
  a timer clock commits events at once, and so does one on the in-memory backend
  (`free_commits`: no fsync to save; holding would only move the events' work into
  the next write's turn, on a completion's path).
- A driver that waits for idleness (Pipeline.settle) releases them; so does
  Pipeline.stop before it closes the store's inbox (a closing inbox holds nothing), and
  a SQLite or memory store stopped otherwise commits them in Store.close.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from actors.base import MailboxClosed
from actors.clock import Clock, Timer
from actors.store.messages import FlushEvents, RecordEvent, SweepEvents

# The longest an event waits for a write to ride with (well below a human's notice;
# at a completion's pace of a few milliseconds, the next delete comes first).
EVENT_HOLD_SECONDS = 0.1
# What waits for a write: new events, and the sweep a commit asks for when it takes the
# stored events past `max_events` (in a steady state, every new event's: at 10,000 held
# events each completion's Scheduled event asked for a turn of its own, one more fsync).
_RIDERS = (RecordEvent, SweepEvents)


class EventHold:
    def __init__(self, timers: Clock | None, tell: Callable[[Any], None], seconds: float) -> None:
        self._timers = timers
        self._tell = tell  # the store's inbox: FlushEvents when the hold is due
        self.seconds = seconds
        self._timer: Timer | None = None
        self.held = False  # the loop's queue holds events that wait
        self._told = False  # FlushEvents is on its way
        self.turns_saved = 0  # events-only turns that waited (each one commit fewer, or merged with others)

    def waits(self, deferred: Iterable[Any]) -> bool:
        """Whether the loop's `deferred` messages wait (all RecordEvents, a timer
        clock, no FlushEvents among them); arms the deadline on the first wait."""
        if self._timers is None or self.seconds <= 0:
            return False
        if not all(isinstance(m, _RIDERS) for m in deferred):
            return False  # FlushEvents or anything else: the turn goes now, events first
        if not self.held:
            self.held = True
            self.turns_saved += 1
            self._timer = self._timers.call_at(self._timers.now() + self.seconds, self._due)
        return True

    def taken(self) -> None:
        """A turn takes the held events (with whatever came after them)."""
        self.held = self._told = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def release(self) -> None:
        """Commit the held events now (a driver waiting for idleness)."""
        if self.held:
            self._due()

    def _due(self) -> None:
        self._timer = None
        if self._told:
            return
        self._told = True
        try:
            self._tell(FlushEvents())
        except MailboxClosed:
            pass  # the stopping store commits them in close()
