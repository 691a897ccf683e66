"""The Store's loop: one turn takes every message queued (group commit), applies
the writes in memory, commits them to the backend in one batch, and only then
answers the callers and tells the watchers. A message that raises has its own
changes undone and fails alone; a batch the backend fails to commit is rolled
back and every write in it fails. One turn takes at most
`client_writes_per_turn` objects of client writes; while the scheduler binds,
the store yields the event loop as long as its turn took.

TurnLoop is the one loop of both stores: SQLite (and the in-memory backend) and
etcd (actors/store/shared.py) differ only in the store's commit duty
(`store._commit`: LocalCommit here, EtcdCommit there): which messages a turn
applies (`before_turn`: etcd catches up first), where a group must end (`fits`:
etcd's transaction limits) and how a group is finished (`finish_group`: one
backend batch here; one fenced etcd transaction there, whose memory and events
then come from etcd's feed). The per-message undo (`apply_message`) is the same
code in both. The handlers (`_apply`, `_apply_one`) and the undo log (`_mark`,
`_undo_since`, `_rollback`) are the Store's (actor.py).
"""
from __future__ import annotations

import asyncio
import collections
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from actors.base import reject, resolve
from actors.pacing import Pacer
from actors.store.backend import Write
from actors.store.history import PastEvent
from actors.store.limits import FAIR_SHARE, fair_pause
from actors.store.messages import (
    Apply, Bind, Create, Delete, Recreate, RecordEvent, StoreError, StoreMsg, SweepEvents, Update, UpdatePodStatus, WatchEvent,
    applied,
)
from framework.api.objects import KubeObject



class TurnHost(Protocol):
    """What the turn loop and LocalCommit use of the Store actor (actor.py) that holds
    them: its inbox, in-memory state and undo log, and its write handlers."""

    inbox: Any
    backend: Any
    limits: Any
    commits: int
    events_dropped: int
    fair_pause_seconds: float
    hold_scheduling: Any
    in_commit: bool
    commit_ended: Callable[[], None]
    _commit: "GroupCommit"
    _committed_rv: int
    _committing: Any
    _events: Any
    _event_hold: Any  # actors/store/event_hold.py
    _history: Any
    _rv: int
    _apply: Callable[..., Any]
    _apply_one: Callable[..., Any]
    _fan_out: Callable[..., Any]
    _mark: Callable[..., Any]
    _rollback: Callable[..., Any]
    _undo_since: Callable[..., Any]


class GroupCommit(Protocol):
    """How a group of writes is committed: LocalCommit (SQLite or memory, below) or
    EtcdCommit (etcd_commit.py, the shared store's)."""

    async def before_turn(self, msgs: list[Any]) -> list[Any]: ...

    def new_group(self) -> "TurnRecord": ...

    def fits(self, batch: "TurnRecord", mark: tuple[int, int, int, int]) -> bool: ...

    async def finish_group(self, group: list[Any], batch: "TurnRecord", pacer: Pacer) -> None: ...


log = logging.getLogger("ksched.store")

@dataclass(slots=True)
class TurnRecord:
    writes: list[Write] = field(default_factory=list)
    undo: list[tuple[str, str, KubeObject | None]] = field(default_factory=list)
    events: list[WatchEvent] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)  # each event's weight in the watch history
    replies: list[tuple[Any, Any]] = field(default_factory=list)  # (future, value or StoreError)
    hidden: int = 0  # undo entries already in the store's `_committing` view (a paced Apply)


_CLIENT_WRITES = (Create, Apply, Update, Delete, Recreate)
_SCHEDULER_WRITES = (Bind, UpdatePodStatus)
_ALL_WRITES = _CLIENT_WRITES + _SCHEDULER_WRITES
_DELETES = (Delete, SweepEvents)
_EMPTY = (0, 0, 0, 0)  # the mark of a new group's start


class TurnLoop:
    """The loop (one of the Store actor's duties): its own queue of deferred
    messages; the store's handlers apply them and its commit duty (`store._commit`:
    LocalCommit here, EtcdCommit in shared.py) ends each group."""

    def __init__(self, store: TurnHost, work_time: Callable[[], float]) -> None:
        self._s = store  # the Store actor (actor.py): its handlers, undo log and commit duty
        self._work_time = work_time
        self._deferred: collections.deque[StoreMsg] = collections.deque()

    async def take(self, msgs: list[StoreMsg]) -> None:
        """The store's inbox gave `msgs`: run turns until nothing waits."""
        self._deferred.extend(msgs)
        while self._deferred:
            if not self._s.inbox.closed and self._s._event_hold.waits(self._deferred):
                return  # only RecordEvents: they ride with the next write (actors/store/event_hold.py)
            self._s._event_hold.taken()
            turn = self._take_turn()
            started = self._work_time()
            share = self._scheduler_share(turn)
            hold = share == 0.0 and self._s.hold_scheduling is not None
            if hold:
                # A bulk apply with no share for the scheduler: pods are not handed out
                # to it until this turn is stored (kube-apiserver stores a big apply
                # in its own process while the scheduler runs in another; here they
                # share one interpreter, and scheduling while storing slows both).
                self._s.hold_scheduling(True)
            try:
                await self._turn(turn)
            finally:
                if hold:
                    self._s.hold_scheduling(False)
            if self._deferred and any(isinstance(m, _SCHEDULER_WRITES) for m in turn):
                # Client writes are waiting while the scheduler binds: give the event loop
                # (the scheduler's cycles) its share of this turn's work, at most 50 ms.
                pause = fair_pause(self._work_time() - started, share)
                self._s.fair_pause_seconds += pause
                await asyncio.sleep(pause)
            self._deferred.extend(self._s.inbox.get_nowait_all())

    def _scheduler_share(self, turn: list[StoreMsg]) -> float:
        """Half of the loop; less after a turn that stored a bulk apply (StoreLimits)."""
        bulk = self._s.limits.bulk_apply_objects
        if any(isinstance(m, Apply) and len(m.objects) >= bulk for m in turn):
            return self._s.limits.bulk_apply_scheduler_share
        return FAIR_SHARE

    def _take_turn(self) -> list[StoreMsg]:
        """Everything waiting except client writes beyond the turn's budget (at
        least one client write is always taken, whatever its size)."""
        turn: list[StoreMsg] = []
        rest: collections.deque[StoreMsg] = collections.deque()
        budget = self._s.limits.client_writes_per_turn
        took_client_write = client_held = False
        # While the disk is full a turn holds deletes or other writes, not both: deletes can commit.
        full, deleting = getattr(self._s.backend, "disk_full", False), None
        for msg in self._deferred:
            held = False
            if full and isinstance(msg, RecordEvent):
                self._s.events_dropped += 1  # best effort, as upstream's recorder: not while the disk is full
                continue
            if full and isinstance(msg, _ALL_WRITES + (SweepEvents,)):
                deleting = isinstance(msg, _DELETES) if deleting is None else deleting
                held = isinstance(msg, _DELETES) != deleting
            if isinstance(msg, _CLIENT_WRITES):
                cost = len(msg.objects) if isinstance(msg, Apply) else 1
                if held or client_held or (took_client_write and cost > budget):
                    rest.append(msg)
                    client_held = True  # keep the order of client writes: none passes a deferred one
                    continue
                budget -= cost
                took_client_write = True
            elif held:
                rest.append(msg)
                continue
            turn.append(msg)
        self._deferred = rest
        return turn

    async def _turn(self, msgs: list[StoreMsg]) -> None:
        """Apply the turn's messages in groups and finish each group (commit, answer,
        publish). A group ends where the backend says the next request would not fit
        in one commit (`_fits`), only at request boundaries; SQLite's turn is one group."""
        msgs = await self._s._commit.before_turn(msgs)
        pacer = Pacer(timer=self._work_time)
        batch, group = self._s._commit.new_group(), []
        for msg in msgs:
            mark = self._s._mark(batch)
            value = await self.apply_message(msg, batch, pacer)
            if not self._s._commit.fits(batch, mark) and group:
                # This request goes into the next group, on top of the ones before it.
                self._s._undo_since(batch, mark)
                await self._s._commit.finish_group(group, batch, pacer)
                batch, group = self._s._commit.new_group(), []
                value = await self.apply_message(msg, batch, pacer)
                self._s._commit.fits(batch, _EMPTY)
            group.append(msg)
            batch.replies.append((getattr(msg, "reply", None), value))
        await self._s._commit.finish_group(group, batch, pacer)

    async def apply_message(self, msg: StoreMsg, batch: TurnRecord, pacer: Pacer | None) -> Any:
        """One message applied in memory: its reply value, or the StoreError to answer.
        A message that raises anything else has its own changes undone and fails alone."""
        mark = self._s._mark(batch)
        try:
            if pacer is not None and isinstance(msg, Apply) and len(msg.objects) > 1:
                return await self._apply_paced(msg, batch, pacer)
            return self._s._apply(msg, batch)
        except StoreError as e:
            return e
        except Exception as e:  # noqa: BLE001 - one message's bug fails that message alone
            # Its half-made changes go, so memory holds only what this group commits.
            self._s._undo_since(batch, mark)
            log.exception("store: %s failed; its changes were undone", type(msg).__name__)
            return StoreError(f"internal error in {type(msg).__name__}: {e!r}")

    async def _apply_paced(self, msg: Apply, batch: TurnRecord, pacer: Pacer) -> Any:
        """An Apply of many objects, giving the event loop a turn between slices of
        it (all or nothing still: a refused object undoes the ones before it). While
        the loop has its turn, committed reads see the keys written so far as they
        were before this turn (the same `_committing` view as during a commit)."""
        mark = self._s._mark(batch)
        done: list[tuple[KubeObject, str]] = []
        said: list[str] = []
        hidden = self._s._committing if self._s._committing is not None else {}
        try:
            for i, raw in enumerate(msg.objects):
                done.append(self._s._apply_one(i, raw, batch, msg.field_validation, said))
                if pacer.due():
                    for kind, key, old in batch.undo[batch.hidden:]:
                        hidden.setdefault((kind, key), old)
                    batch.hidden = len(batch.undo)
                    self._s._committing = hidden
                    await pacer.pause()
        except StoreError:
            self._s._undo_since(batch, mark)
            raise
        return applied(msg, done, said)


class LocalCommit:
    """The SQLite (and in-memory) backend's part of the loop: a turn is one group,
    committed as one backend batch; then the callers are answered and the watchers told."""

    def __init__(self, store: TurnHost) -> None:
        self._s = store

    async def before_turn(self, msgs: list[StoreMsg]) -> list[StoreMsg]:
        """The messages to apply this turn."""
        return msgs

    def new_group(self) -> TurnRecord:
        self._s._events.take_recorded()
        return TurnRecord()

    def fits(self, batch: TurnRecord, mark: tuple[int, int, int, int]) -> bool:
        """Whether the writes made since `mark` still fit in the group's commit."""
        return True

    async def finish_group(self, group: list[StoreMsg], batch: TurnRecord, pacer: Pacer) -> None:
        """Commit the group's writes in one backend batch, then answer and publish."""
        self._s._committing = None
        if batch.writes:
            self._s._committing = before_batch(batch)
            self._s.in_commit = True  # a driver waiting for the store may await its end (commit_done)
            try:
                await self._s.backend.commit(batch.writes)
                self._s.commits += 1
                self._s._committed_rv = self._s._rv
            except Exception as e:  # noqa: BLE001 - any backend failure fails the whole batch
                self._s._rollback(batch)
                batch.replies = failed_all(batch.replies, e if isinstance(e, StoreError)
                                        else StoreError(f"store commit failed: {e}"))
                batch.events.clear()
            finally:
                self._s._committing = None
                self._s.commit_ended()
        answer(batch.replies)
        for ev, size in zip(batch.events, batch.sizes):
            self._s._history.append(PastEvent.of(ev), size)
        for ev in batch.events:  # in slices: a watcher's sink encodes, queues, may wake its reader
            self._s._fan_out(ev)
            await pacer.step()


def before_batch(batch: TurnRecord) -> dict[tuple[str, str], KubeObject | None]:
    """Each key the batch changed, as it was before: what committed reads see while it commits."""
    before: dict[tuple[str, str], KubeObject | None] = {}
    for kind, key, old in batch.undo:
        before.setdefault((kind, key), old)
    return before


def failed_all(replies: list[tuple[Any, Any]], err: StoreError) -> list[tuple[Any, Any]]:
    """Every reply that was going to succeed fails with `err` (refusals keep their own error)."""
    return [(r, v if isinstance(v, StoreError) else err) for r, v in replies]


def answer(replies: list[tuple[Any, Any]]) -> None:
    for reply, value in replies:
        if isinstance(value, StoreError):
            reject(reply, value)
        else:
            resolve(reply, value)
