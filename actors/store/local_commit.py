"""LocalCommit: the SQLite (and in-memory) backend's part of the turn loop, with the
commit of one turn overlapped with the preparation of the next.

A turn is one group, committed as one backend batch. With SQLite the batch is handed
to the writer thread (`start_commit`) and the turn loop goes on: it lets the event
loop run for about as long as commits take lately (`overlap`), then applies whatever
came meanwhile as the next turn, and only then joins the commit (`settle`), answers
its callers and tells the watchers. So nothing is acknowledged or published before
it is durable, a bind that arrives while a bulk apply commits waits only for the rest
of that commit, not for a turn of its own behind it, and the commits group themselves
by the disk's speed.

At most one commit is in flight: the next turn is applied in memory on top of it but
handed to the backend only after it is durable. If it fails, the turn prepared on top
of it is undone first, the failed turn is rolled back (as one failed batch always
was), and the next turn's messages are applied again on the state without it, so
they are answered as if the failed batch had never been.

Early watchers (the in-process scheduler, actors/store/premise.py) are told of a turn
when it is handed to the writer, not when it is durable, unless the turn holds a Bind;
everyone else hears at `settle`. When such a turn's commit fails, the early watchers
are told its changes undone and the views that held them are lost: a Bind derived
from one is refused.

A commit that lands while the turn loop only waits (overlapping it, nothing applied on
top) is answered and published at once, from the writer's own wake-up (`_landed`, a
callback the writer hands the event loop), not on the store's next turn: a burst's binds
are acknowledged as soon as their commit is durable, and the burst's next commit still
starts only when its grouping window ends (`_open_burst`).

A backend without `start_commit` (the in-memory one, tests' gated backends) is
awaited in place, as before: there is nothing to overlap, and nothing is told early.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from actors.pacing import Pacer
from actors.store.history import PastEvent
from actors.store.premise import undoing
from actors.store.messages import (Bind, BindWithUpdates, EvictPods, RecordEvent, StoreError, StoreMsg, UpdatePodStatus,
                                  WatchEvent)
from actors.store.turns import TurnHost, TurnRecord, answer, before_batch, failed_all


class StartedCommit(Protocol):
    """A batch the backend is committing (actors.store.sqlite_writer.PendingCommit)."""

    expected_seconds: float
    started_at: float
    landed: bool  # it has ended: finish() will not block

    def finish(self) -> None: ...


@dataclass(slots=True)
class _Awaited:
    """A commit already awaited in place: nothing left to wait for."""

    error: Exception | None = None
    expected_seconds: float = 0.0
    started_at: float = 0.0
    landed: bool = True

    def finish(self) -> None:
        if self.error is not None:
            raise self.error


# A turn of only the scheduler's writes (binds, pod status, evictions, events) prepared while
# another such turn was committing (a burst of binds) waits this long for the next
# one before its commit is joined: the burst's binds then share a commit every 20 ms
# instead of taking one or two each (the scheduler does not wait for them). A
# client's write, or a bind after the store was idle or after a client's write
# (Churn's one completion at a time: its delete, then its bind), is joined as soon
# as the disk is done; a message that arrives meanwhile joins it at once anyway.
SCHEDULER_GROUP_SECONDS = 0.02
# A landed commit with more events than this is published by the store's task, in slices
# (a callback cannot give the loop a turn between them): a bulk apply's, not a burst's binds.
LANDED_EVENTS_MAX = 256
_SCHEDULER_WRITES = (Bind, BindWithUpdates, UpdatePodStatus, EvictPods, RecordEvent)


@dataclass(slots=True)
class _InFlight:
    batch: TurnRecord
    commit: Any  # StartedCommit
    top: int  # the store's resourceVersion once this batch is durable
    window: float  # how long after its start the turn loop joins it
    scheduler_only: bool  # only the scheduler's writes
    grouping: bool = False  # a burst's binds: the window is SCHEDULER_GROUP_SECONDS, not the disk's
    early: bool = False  # its events were told to the early watchers at the hand-over


class LocalCommit:
    """The SQLite (and in-memory) backend's part of the loop: a turn is one group,
    committed as one backend batch; then the callers are answered and the watchers told."""

    def __init__(self, store: TurnHost) -> None:
        self._s = store
        self._in_flight: _InFlight | None = None
        # A burst's commit answered at its landing (`_landed`) whose grouping window still
        # decides when the next one starts: the burst goes on until a turn finds nothing to take.
        self._open_burst: _InFlight | None = None

    async def before_turn(self, msgs: list[StoreMsg]) -> list[StoreMsg]:
        """The messages to apply this turn."""
        return msgs

    def new_group(self) -> TurnRecord:
        if self._in_flight is None:  # else the committing turn's recorded events are still to be found
            self._s._events.take_recorded()
        return TurnRecord()

    def fits(self, batch: TurnRecord, mark: tuple[int, int, int, int]) -> bool:
        """Whether the writes made since `mark` still fit in the group's commit."""
        return True

    def overlap(self) -> float | None:
        """None when no commit is in flight (nor a burst's window open); else how long
        the turn loop may let the event loop run before it joins it (commits' recent
        time, less what has passed). Asked by the turn loop while it waits, a commit
        that has landed is answered first (`_answer_landed`)."""
        if self._s._loop.waiting:
            self._answer_landed()
        flight = self._in_flight if self._in_flight is not None else self._open_burst
        if flight is None:
            return None
        if not flight.grouping and flight.commit.landed:
            return 0.0  # the disk is done: only a burst's binds wait for their group
        return max(0.0, flight.window - (time.perf_counter() - flight.commit.started_at))

    async def finish_group(self, group: list[StoreMsg], batch: TurnRecord, pacer: Pacer) -> None:
        """Join the commit in flight (this turn was prepared on top of it), then hand
        this turn's writes to the backend; a turn without writes is answered at once."""
        burst = self._open_burst is not None or (self._in_flight is not None and self._in_flight.scheduler_only)
        if await self.settle(pacer, on_top=batch):
            batch = self.new_group()  # it was undone with the failed commit it sat on: again, without it
            for msg in group:
                batch.replies.append((getattr(msg, "reply", None), await self._s._loop.apply_message(msg, batch, pacer)))
        if not batch.writes:
            answer(batch.replies)
            return
        self._s._committing = before_batch(batch)
        self._s.in_commit = True  # a driver waiting for the store may await its end (commit_done)
        commit = await self._start(batch)
        scheduler_only = all(isinstance(m, _SCHEDULER_WRITES) for m in group)
        if commit.expected_seconds <= 0.0:  # awaited already (the in-memory backend)
            self._in_flight = _InFlight(batch, commit, self._s._rv, 0.0, scheduler_only)
            await self.settle(pacer)
            return
        grouping = burst and scheduler_only
        window = max(commit.expected_seconds, SCHEDULER_GROUP_SECONDS if grouping else 0.0)
        early = self._s._watches.has_early and not any(isinstance(m, (Bind, BindWithUpdates)) for m in group)
        self._in_flight = _InFlight(batch, commit, self._s._rv, window, scheduler_only, grouping, early)
        if early:  # while the disk works: the scheduler's cycle overlaps this commit's fsync
            for ev in batch.events:
                self._s._watches.tell_early(ev)
                await pacer.step()

    async def _start(self, batch: TurnRecord) -> Any:
        start = getattr(self._s.backend, "start_commit", None)
        if start is not None:
            return start(batch.writes, on_landed=self._waker())
        try:
            await self._s.backend.commit(batch.writes)
        except Exception as e:  # noqa: BLE001 - any backend failure fails the whole batch
            return _Awaited(e)
        return _Awaited()

    def _waker(self) -> Callable[[], None]:
        """For the writer thread: once the commit has landed, have the event loop call
        `_landed` (answer it now, or wake the turn loop's overlap)."""
        loop = asyncio.get_running_loop()

        def landed() -> None:
            try:
                loop.call_soon_threadsafe(self._landed)
            except RuntimeError:  # the loop closed meanwhile: nobody overlaps anything
                pass
        return landed

    def _landed(self) -> None:
        """On the event loop, as soon as a commit has landed: answer it now if the turn
        loop is only waiting on it, then wake the overlap (which goes on for the rest
        of a burst's grouping window, or ends)."""
        if self._s._loop.waiting:
            self._answer_landed()
        self._s.inbox.nudge()

    def _answer_landed(self) -> None:
        """The commit in flight, if it has landed, answered and told to the watchers now.
        Only while the turn loop waits on it (`TurnLoop.waiting`: nothing applied on top,
        no turn paused halfway) and when its events are few enough to tell in one go."""
        flight = self._in_flight
        if flight is None or not flight.commit.landed or len(flight.batch.events) > LANDED_EVENTS_MAX:
            return
        self._in_flight = None
        self._open_burst = flight if flight.scheduler_only else None
        batch = self._join(flight, None)[0]
        for ev in batch.events:
            self._s._fan_out(ev, flight.early)

    async def settle(self, pacer: Pacer, on_top: TurnRecord | None = None) -> bool:
        """Join the commit in flight, then answer its callers and tell the watchers.
        `on_top` is a turn applied on top of it, not yet handed over: when the commit
        fails it is undone first (True: the caller applies it again)."""
        flight, self._in_flight = self._in_flight, None
        self._open_burst = None  # a turn found nothing to take, or is handed over now
        if flight is None:
            return False
        batch, failed = self._join(flight, on_top)
        for ev in batch.events:  # in slices: a watcher's sink encodes, queues, may wake its reader
            self._s._fan_out(ev, flight.early)
            await pacer.step()
        return failed

    def _join(self, flight: _InFlight, on_top: TurnRecord | None) -> tuple[TurnRecord, bool]:
        """The commit's end (`finish`: blocks until it has landed), its callers answered
        and its events in the watch history, to be told to the watchers; whether `on_top`
        was undone with it (the commit failed)."""
        batch, failed = flight.batch, False
        try:
            flight.commit.finish()
            self._s.commits += 1
            self._s._committed_rv = flight.top
        except Exception as e:  # noqa: BLE001 - any backend failure fails the whole batch
            err = e if isinstance(e, StoreError) else StoreError(f"store commit failed: {e}")
            failed = on_top is not None
            undone = undoing(batch.events, flight.top + 1) if flight.early else []
            first = batch.writes[0].resource_version
            if on_top is not None:
                self._s._rollback(on_top)
            self._s._rollback(batch)
            if undone:
                self._undo_early(undone, first)
            batch.replies = failed_all(batch.replies, err)
            batch.events.clear()
        finally:
            self._s._committing = before_batch(on_top) if on_top is not None and not failed and on_top.writes else None
            self._s.commit_ended()
        answer(batch.replies)
        for ev, size in zip(batch.events, batch.sizes):
            self._s._history.append(PastEvent.of(ev), size)
        return batch, failed

    def _undo_early(self, undone: list[WatchEvent], first: int) -> None:
        """A turn the early watchers were told of (from resourceVersion `first`) failed:
        tell them its changes `undone`, whose versions are never reused, and lose every
        view from `first` to the last but one of them (the last one is the repaired view)."""
        self._s._rv = undone[-1].resource_version
        self._s.lost_views.add(first, self._s._rv - 1)
        for ev in undone:
            self._s._watches.tell_early(ev)
