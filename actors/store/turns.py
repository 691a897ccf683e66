"""The Store's loop: one turn takes every message queued (group commit), applies
the writes in memory, commits them to the backend in one batch, and only then
answers the callers and tells the watchers. A message that raises has its own
changes undone and fails alone; a batch the backend fails to commit is rolled
back and every write in it fails. One turn takes at most
`client_writes_per_turn` objects of client writes; while the scheduler binds,
the store yields the event loop as long as its turn took.

TurnLoop is the one loop of both stores: SQLite (and the in-memory backend) and
etcd (actors/store/shared.py) differ only in the store's commit duty
(`store._commit`: LocalCommit in local_commit.py, EtcdCommit in etcd_commit.py): which messages a turn
applies (`before_turn`: etcd catches up first), where a group must end (`fits`:
etcd's transaction limits), how a group is finished (`finish_group`: one
backend batch, committed while the next turn is prepared; one fenced etcd
transaction, whose memory and events then come from etcd's feed) and whether a
commit is still in flight when the turns run out (`overlap`, `settle`). The per-message undo (`apply_message`) is the same
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
from actors.store.limits import FAIR_SHARE, fair_pause
from actors.store.messages import (
    Apply, Bind, BindWithUpdates, Create, Delete, EvictPods, MakePodClaims, Recreate, RecordEvent, StoreError, StoreMsg, SweepEvents, Update,
    UpdatePodStatus, WatchEvent,
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
    _watches: Any  # actors/store/watchers.py: early watchers are told at the hand-over
    lost_views: Any  # actors/store/premise.py
    _loop: Any  # the TurnLoop (apply_message)
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

    def overlap(self) -> float | None:
        """None when no commit is in flight after `finish_group`; else the seconds the
        loop may run before the next turn or `settle` joins it (LocalCommit)."""
        ...

    async def settle(self, pacer: Pacer) -> None:
        """Join the commit in flight, if any, and answer and publish it."""
        ...


log = logging.getLogger("ksched.store")

@dataclass(slots=True)
class TurnRecord:
    writes: list[Write] = field(default_factory=list)
    undo: list[tuple[str, str, KubeObject | None]] = field(default_factory=list)
    events: list[WatchEvent] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)  # each event's weight in the watch history
    replies: list[tuple[Any, Any]] = field(default_factory=list)  # (future, value or StoreError)
    hidden: int = 0  # undo entries already in the store's `_committing` view (a paced Apply)


_CLIENT_WRITES = (Create, Apply, Update, Delete, Recreate, MakePodClaims)  # (MakePodClaims: a controller's creates)
_SCHEDULER_WRITES = (Bind, BindWithUpdates, UpdatePodStatus, EvictPods)
_ALL_WRITES = _CLIENT_WRITES + _SCHEDULER_WRITES
_DELETES = (Delete, SweepEvents)
_EMPTY = (0, 0, 0, 0)  # the mark of a new group's start


class TurnLoop:
    """The loop (one of the Store actor's duties): its own queue of deferred
    messages; the store's handlers apply them and its commit duty (`store._commit`:
    LocalCommit in local_commit.py, EtcdCommit in etcd_commit.py) ends each group."""

    def __init__(self, store: TurnHost, work_time: Callable[[], float]) -> None:
        self._s = store  # the Store actor (actor.py): its handlers, undo log and commit duty
        self._work_time = work_time
        self._deferred: collections.deque[StoreMsg] = collections.deque()
        # Only waiting on the commit in flight (in `_overlap`): nothing applied on top of it,
        # no turn paused halfway, so LocalCommit may answer a commit that lands now.
        self.waiting = False

    async def take(self, msgs: list[StoreMsg]) -> None:
        """The store's inbox gave `msgs`: run turns until nothing waits and no commit
        is in flight. While one is (LocalCommit), the event loop runs for about the
        commit's time, and what came meanwhile is the next turn, prepared before the
        commit is joined; when nothing came, the commit is joined and answered."""
        self._deferred.extend(msgs)
        try:
            while True:
                await self._turns()
                if self._s._commit.overlap() is None:
                    return
                await self._overlap()
                self._deferred.extend(self._s.inbox.get_nowait_all())
                if not self._deferred or self._events_wait():
                    # Nothing to prepare (held events wait for a write, not for this commit):
                    # join the commit in flight, so its callers are answered.
                    await self._s._commit.settle(Pacer(timer=self._work_time))
                    self._deferred.extend(self._s.inbox.get_nowait_all())
        finally:
            if self._s._commit.overlap() is not None:  # cancelled while overlapping: still answer it
                await self._s._commit.settle(Pacer(timer=self._work_time))

    async def _overlap(self) -> None:
        """Let the event loop run while a commit is in flight, as long as the commit
        duty's `overlap()` says (the disk's time, whatever clock the store reads; it
        ends when the commit lands, whose writer nudges the inbox): a client's write
        cuts it short (it never waits for the scheduler's grouping)."""
        inbox = self._s.inbox
        seen = 0
        self.waiting = True
        try:
            await asyncio.sleep(0)  # one turn of the loop at least, however late the writer began
            while True:
                if inbox.closed or inbox.holds(_CLIENT_WRITES, seen):
                    return
                seen = len(inbox)
                left = self._s._commit.overlap()
                if left is None or left <= 0:
                    return
                await inbox.next_put(left)
        finally:
            self.waiting = False

    async def _turns(self) -> None:
        while self._deferred:
            if self._events_wait():
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

    def _events_wait(self) -> bool:
        """Whether everything deferred is RecordEvents held for the next write."""
        return not self._s.inbox.closed and self._s._event_hold.waits(self._deferred)

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
