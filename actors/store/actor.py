"""The Store actor: authoritative objects, resourceVersion, watch fan-out.

Every write goes through the inbox. One turn of the loop takes every message
queued (group commit), applies the writes in memory, commits them to the backend
in one batch, and only then answers the callers and tells the watchers. A batch
the backend fails to commit is rolled back and every write in it fails (the
loop: actors/store/turns.py; the handlers and the write path: here).

Create, Apply and Update go through the write chain (actors/store/write_chain.py),
kube-apiserver's, so every client, in process or over the wire, gets the same
objects: prepare (server-owned fields), decode (fieldValidation, the kind's schema),
default, mutating admission (a pod's priority), validate (with the per-kind update
rules of actors/store/strategies.py), validating admission (PriorityClass), then
the store here (AlreadyExists, the size limit, resourceVersion, watch events).
The chain's knobs are WriteRules (the conformance driver's store: AS_WRITTEN).
An Apply is all or nothing, and each of its objects sees the ones before it: the
same object twice is created, then configured or unchanged.

What the store holds is bounded (actors.store.limits): an object's size, the watch
history (compacted by count and bytes; a resume from before it is Expired), and
the stored Events (per object, in all, by age: actors.store.event_recorder). Reads from other tasks (`read`, `read_list`)
are served from the committed state at once, never waiting behind a batch's
fsync: while a batch commits, the keys it changed read as they were before it.
One turn takes at most `client_writes_per_turn` objects of client writes (Create,
Apply, Update, Delete); the rest wait for the next turn while bindings and status
updates go on, and while the scheduler binds the store yields the event loop as
long as its turn took, so a burst of client writes cannot starve the scheduler.
"""
from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Any, Callable, Mapping, assert_never

from actors.base import Actor
from actors.store.backend import StoreBackend, Write
from actors.store.memory import InMemoryBackend
from actors.store.messages import (
    AlreadyExists,
    BadRequest,
    Forbidden,
    Conflict,
    Invalid,
    NotFound,
    StoreError,
    TooLarge,
    WatchEvent,
    Apply,
    Bind,
    BindWithUpdates,
    Create,
    Delete,
    EvictPods,
    Recreate,
    Get,
    GetEvents,
    ListObjects,
    MakePodClaims,
    RecordEvent,
    SweepEvents,
    FlushEvents,
    StoreMsg,
    Unwatch,
    Update,
    UpdatePodStatus,
    Watch,
    applied,
    said_too,
    scheduled_message,
)
from actors.store.history import DELETE_WEIGHT, WatchHistory
from actors.store.event_recorder import EventRecorder
from actors.store.event_hold import EventHold
from actors.store.messages import EventRecord
from actors.clock import Clock
from actors.store.limits import StoreLimits
from actors.store.reads import CommittedReads, StoreReader, key_of as _key
from actors.store.pod_writes import PodWrites
from actors.store.status_writes import status_written
from framework.bind_writes import StatusWrite
from actors.store.loading import load_objects, quarantine_event
from actors.store.watchers import WatchHub
from actors.store.premise import LostViews
from actors.store.local_commit import LocalCommit
from actors.store.turns import GroupCommit, TurnLoop, TurnRecord

from actors.store.finalizers import deleting, finalizers, marked_for_deletion
from actors.store.front_door import IMMORTAL_NAMESPACES
from actors.store.fields import name_of
from actors.store.write_chain import STRICT, WriteChain, WriteRules
from actors.store.raw import describe, encoded_size, without_version
from actors.store.weights import PodLengths, weight
from framework.api.groups import kind_key
from framework.features import FeatureGates
from framework.api.objects import KINDS, KubeObject, parse_object
from framework.api.timeutil import format_time


log = logging.getLogger("ksched.store")


def _check_preconditions(raw: Mapping[str, Any], uid: str, resource_version: str) -> None:
    """A delete's preconditions against the stored object, in kube-apiserver's words."""
    meta = raw.get("metadata") or {}
    if uid and uid != meta.get("uid", ""):
        raise Conflict(f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid', '')}")
    if resource_version and resource_version != meta.get("resourceVersion", ""):
        raise Conflict(f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
                       f"ResourceVersion in object meta: {meta.get('resourceVersion', '')}")


def _record_scheduled(store: "Store", ns: str, name: str, node: str, uid: str, batch: TurnRecord) -> None:
    """The Scheduled event a scheduler's Bind carries, written right after its binding
    (messages.Bind): best effort, as a RecordEvent (not while the disk is full)."""
    if getattr(store.backend, "disk_full", False):
        store.events_dropped += 1
        return
    mark = store._mark(batch)
    try:
        store._events.record(RecordEvent(kind="Pod", key=_key("Pod", ns, name), type="Normal", reason="Scheduled",
                                         message=scheduled_message(ns, name, node), uid=uid), batch)
    except Exception:  # noqa: BLE001 - an event is best effort: its bug never fails the binding
        store._undo_since(batch, mark)
        log.exception("store: the Scheduled event of pod %s/%s was not written", ns, name)


class Store(Actor[StoreMsg]):
    name = "store"

    def __init__(self, backend: StoreBackend | None = None, clock: Callable[[], float] = lambda: 0.0,
                 rand: random.Random | None = None, *, rules: WriteRules = STRICT,
                 limits: StoreLimits | None = None, work_time: Callable[[], float] = time.perf_counter,
                 timers: Clock | None = None, event_hold_seconds: float = 0.0) -> None:
        super().__init__()
        # Told True / False around a turn storing a bulk apply whose scheduler share is 0
        # (the Pipeline holds the queue's pops: HoldPops).
        self.hold_scheduling: Callable[[bool], None] | None = None
        self.backend: StoreBackend = backend if backend is not None else InMemoryBackend()
        self._clock = clock  # wall time for the real clock: creationTimestamp and event times
        self._rand = rand if rand is not None else random.Random()  # generateName suffixes
        self._objects: dict[str, dict[str, KubeObject]] = {k: {} for k in KINDS}
        self.write_chain = WriteChain(self._objects, clock, self._rand, rules)  # decode .. validating admission
        self.limits = limits if limits is not None else StoreLimits()
        self._rv = 0
        self._committed_rv = 0
        self._history = WatchHistory(max_events=self.limits.history_events, max_bytes=self.limits.history_bytes)
        self._watches = WatchHub()  # the watchers (actors.store.watchers)
        self.lost_views = LostViews()  # views early watchers had that no commit kept (actors.store.premise)
        # Stored Events (actors.store.event_recorder); `timers` arms their expiry.
        self._events = EventRecorder(self._objects, self.limits, clock, timers, self.tell, self._write, self._remove)
        self.events_dropped = 0  # RecordEvents not written (the disk was full)
        # Events-only turns wait up to `event_hold_seconds` for a write to ride with (event_hold.py; 0: never).
        free = getattr(self.backend, "free_commits", False)  # nothing to save on the in-memory backend
        self._event_hold = EventHold(timers, self.tell, 0.0 if free else event_hold_seconds)
        self._sorted_keys: dict[str, list[str]] = {}  # per kind, dropped when a key comes or goes
        self._committing: dict[tuple[str, str], KubeObject | None] | None = None  # keys of the batch in commit
        self.in_commit = False  # a backend commit is being awaited (turns.py)
        self._commit_waiters: list[asyncio.Future[None]] = []  # commit_done's futures
        self._lengths = PodLengths()  # pods not bound yet with their lengths, for their bindings (weights.py)
        self._pods = PodWrites(self._objects, self._write, self._lengths)  # binding, pod status (pod_writes.py)
        # reads of the committed state (actors.store.reads), handed what they read
        self._reads = CommittedReads(self._objects, self._history, self._sorted_keys, self)
        self._loop = TurnLoop(self, work_time)  # the turn loop (actors.store.turns)
        self._commit: GroupCommit = LocalCommit(self)  # how a group of writes is committed (SharedStore: EtcdCommit)
        self.quarantined: dict[tuple[str, str], str] = {}  # (kind, key) -> why, from load()
        self.commits = 0
        self.fair_pause_seconds = 0.0  # seconds the store yielded the loop to bindings (turns.py)

    # --- life cycle -------------------------------------------------------------------------

    async def load(self) -> None:
        """Read the backend's objects (actors.store.loading); call once before run()."""
        loaded = await load_objects(self.backend, self.limits.max_object_bytes, self._objects)
        for kind, key, why in loaded.quarantined:
            self.quarantined[(kind, key)] = why
            self.tell(quarantine_event(kind, key, why))
        self._rv = self._committed_rv = loaded.resource_version
        self._history.reset(self._rv)
        self._sorted_keys.clear()
        self._events.loaded()

    async def close(self) -> None:
        self._events.cancel_expiry()
        # Events still waiting for a write (a store stopped without Pipeline.stop's release)
        # are committed before the end; a shared store's turn needs its etcd feed, gone by now.
        if self._event_hold.held and isinstance(self._commit, LocalCommit):
            await self._loop.take([FlushEvents()])
        await self.backend.close()

    def idle(self) -> bool:
        return super().idle() and not self._event_hold.held

    def release_events(self) -> None:
        """Commit the events that wait for a write now (a driver that waits for idleness)."""
        self._event_hold.release()

    def _fan_out(self, ev: WatchEvent, early_told: bool = False) -> None:
        """A committed change: the Events' index first, then every watcher of its kind
        (`early_told`: the early watchers heard it at the hand-over: premise.py)."""
        self._events.observe(ev)
        self._watches.tell(ev, early_told=early_told)

    def commit_done(self) -> "asyncio.Future[None] | None":
        """None when no backend commit is being awaited; else a future resolved when it
        ends, so a driver (Pipeline.settle) waits for SQLite's thread instead of
        spinning. Nothing is made on a turn nobody waits for."""
        if not self.in_commit:
            return None
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._commit_waiters.append(done)
        return done

    def commit_ended(self) -> None:
        self.in_commit = False
        waiters, self._commit_waiters = self._commit_waiters, []
        for done in waiters:
            if not done.done():
                done.set_result(None)

    def reader(self) -> StoreReader:
        """The read-only interface to hand to others (actors.store.reads)."""
        return StoreReader(self._reads)

    def events_for(self, kind: str, key: str) -> list[EventRecord]:
        """Every stored event about `key`, whichever life of the object (a synchronous
        read, like peek), oldest write first."""
        return self._events.about(kind, key)

    @property
    def events_expire_at(self) -> float | None:
        """When the Events' expiry timer is due (None: none armed)."""
        return self._events.expire_at

    @property
    def features(self) -> FeatureGates:
        """The daemon's gates (actors.store.gates); the Pipeline sets them."""
        return self.write_chain.features

    @features.setter
    def features(self, gates: FeatureGates) -> None:
        self.write_chain.features = gates

    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def history(self) -> WatchHistory:
        return self._history

    # --- synchronous reads (the owner's view, for the same event loop) -------------------

    def peek(self, kind: str, namespace: str, name: str) -> KubeObject | None:
        return self._objects.get(kind, {}).get(_key(kind, namespace, name))

    def peek_all(self, kind: str) -> list[KubeObject]:
        return list(self._objects.get(kind, {}).values())

    def stored(self, raw: Any) -> KubeObject | None:
        """The stored object a manifest names, if any (a synchronous read, like peek;
        the manifest need not be valid)."""
        named = name_of(raw)
        kind = kind_key(raw)
        if named is None or kind is None or kind not in self._objects:
            return None
        return self.peek(kind, *named)

    # --- handlers: each returns the reply value or raises StoreError ---------------------------

    def _apply(self, msg: StoreMsg, batch: TurnRecord) -> Any:
        match msg:
            case Create(obj=raw, field_validation=fv, with_warnings=told, template=template):
                said: list[str] = []
                return said_too(self._create(raw, batch, fv, said, template).raw, said, told)
            case Apply(objects=raws, field_validation=fv):
                said = []
                done = self._atomically(batch, lambda: [self._apply_one(i, r, batch, fv, said)
                                                        for i, r in enumerate(raws)])
                return applied(msg, done, said)
            case Update(obj=raw, status_only=True, field_validation=fv, with_warnings=told):
                said = []
                return said_too(self._update(StatusWrite(obj=raw), batch, fv, said).raw, said, told)
            case Update(obj=raw, field_validation=fv, with_warnings=told):
                said = []
                return said_too(self._update(raw, batch, fv, said).raw, said, told)
            case Delete(kind=kind, namespace=ns, name=name, uid=uid, resource_version=rv):
                return self._delete(kind, ns, name, uid, rv, batch)
            case Recreate(kind=kind, namespace=ns, name=name, uid=uid, resource_version=rv, obj=raw):
                return self._atomically(batch, lambda: self._recreate(kind, ns, name, uid, rv, raw, batch))
            case Get(kind=kind, namespace=ns, name=name):
                obj = self.peek(kind, ns, name)
                if obj is None:
                    raise NotFound(f'{kind} "{_key(kind, ns, name)}" not found')
                return obj.raw
            case ListObjects(kind=kind, namespace=ns, label_selector=ls, field_selector=fs):
                return self._reads.list_now(kind, ns, ls, fs), self._rv
            case Bind(namespace=ns, name=name, node_name=node, uid=uid, derived_from=premise):
                self.lost_views.check(premise, f'pods/binding "{name}"')
                bound = self._bind(ns, name, node, uid, batch).raw
                if msg.scheduled_event:
                    _record_scheduled(self, ns, name, node, uid, batch)
                return bound
            case BindWithUpdates(updates=raws, namespace=ns, name=name, node_name=node, uid=uid, derived_from=premise):
                self.lost_views.check(premise, f'pods/binding "{name}"')
                done = self._atomically(batch, lambda: ([self._update(raw, batch).raw for raw in raws],
                                                        self._bind(ns, name, node, uid, batch).raw))
                if msg.scheduled_event:
                    _record_scheduled(self, ns, name, node, uid, batch)
                return done
            case UpdatePodStatus():
                return self._pods.update_status(msg, batch).raw
            case MakePodClaims():
                return self._atomically(batch, lambda: self._pods.make_claims(msg, batch, self._create))
            case EvictPods():
                return self._atomically(batch, lambda: self._pods.evict(msg, batch, self._delete, self._events.record))
            case RecordEvent():
                return self._events.record(msg, batch)
            case SweepEvents():
                return self._events.sweep(batch)
            case FlushEvents():
                return None  # its turn commits the events that waited (event_hold.py)
            case GetEvents(kind=kind, key=key):
                return self._events.this_life(kind, key)
            case Watch(kinds=kinds, from_rv=from_rv, sink=sink, early=early):
                return self._watches.watch(kinds, from_rv, sink, self._objects, self._history, self._rv, early)
            case Unwatch(watch_id=wid):
                self._watches.unwatch(wid)
                return None
            case _:
                assert_never(msg)

    # --- the write path: create, replace, apply ------------------------------------------------

    def _delete(self, kind: str, ns: str, name: str, uid: str, rv: str, batch: TurnRecord) -> Any:
        key = _key(kind, ns, name)
        current = self._objects.get(kind, {}).get(key)
        if current is None:
            raise NotFound(f'{kind} "{key}" not found')
        _check_preconditions(current.raw, uid, rv)
        if finalizers(current.raw):  # kept, marked, until the last finalizer goes
            if deleting(current.raw):
                return current.raw
            marked = marked_for_deletion(current.raw, format_time(int(self._clock()) * 1_000_000_000))
            return self._write(kind, key, marked, batch).raw
        if kind == "Namespace":
            if key in IMMORTAL_NAMESPACES:
                raise Forbidden(f'namespaces "{key}" is forbidden: this namespace may not be deleted')
            self._remove_contents(key, batch)
        self._remove(kind, key, current, batch)
        return current.raw

    def _recreate(self, kind: str, ns: str, name: str, uid: str, rv: str, raw: Any, batch: TurnRecord) -> Any:
        """Delete, then create the replacement; a finalizer that keeps the old object
        makes the create fail (AlreadyExists) and the caller's _atomically undoes both."""
        named = name_of(raw)
        if not isinstance(raw, Mapping) or kind_key(raw) != kind or named is None or named[1] != name:
            raise BadRequest(f'the replacement must be the {kind} "{name}" it replaces')
        self._delete(kind, ns, name, uid, rv, batch)
        return self._create(raw, batch).raw

    def _create(self, raw: Any, batch: TurnRecord, fv: str | None = None, said: list[str] | None = None,
                template: str = "") -> KubeObject:
        """The write chain's create (write_chain.py), then the store: AlreadyExists, or written."""
        new = self.write_chain.create(raw, fv, template)
        if said is not None:
            said.extend(new.warnings)
        if new.obj.key in self._objects[new.obj.kind]:
            raise AlreadyExists(f'{new.obj.kind} "{new.obj.key}" already exists')
        return self._write(new.obj.kind, new.obj.key, new.raw, batch, client=True, make=new.obj.as_stored)

    def _update(self, raw: Any, batch: TurnRecord, fv: str | None = None, said: list[str] | None = None) -> KubeObject:
        """An Update: NotFound when nothing is stored under the name, else _replace; a
        StatusWrite (BindWithUpdates' claim, Update's status_only) goes through the
        status subresource's write (status_writes.py) instead."""
        if isinstance(raw, StatusWrite):
            new = status_written(raw, self.stored(raw.obj), self.write_chain, fv)
            if said is not None:
                said.extend(new.warnings)
            return self._write(new.obj.kind, new.obj.key, new.raw, batch, client=True, make=new.obj.as_stored)
        current = self.stored(raw)
        if current is None:
            obj = self.write_chain.missing(raw, fv)
            raise NotFound(f'{obj.kind} "{obj.key}" not found')
        return self._replace(raw, current, batch, fv, said)[0]

    def _replace(self, raw: Any, current: KubeObject, batch: TurnRecord, fv: str | None = None,
                 said: list[str] | None = None, keep_unchanged: bool = False) -> tuple[KubeObject, str]:
        """The write chain's update, then the store: with keep_unchanged an identical
        object is not written again (apply's "unchanged")."""
        new = self.write_chain.update(raw, current, fv)
        if said is not None:
            said.extend(new.warnings)
        if keep_unchanged and without_version(new.raw) == without_version(current.raw):
            return current, "unchanged"
        written = self._write(new.obj.kind, new.obj.key, new.raw, batch, client=True, make=new.obj.as_stored)
        if deleting(new.raw) and not finalizers(new.raw):  # the last finalizer removed: the object goes
            self._remove(new.obj.kind, new.obj.key, written, batch)
        return written, "configured"

    def _apply_one(self, index: int, raw: Any, batch: TurnRecord, fv: str | None = None,
                   said: list[str] | None = None) -> tuple[KubeObject, str]:
        current = self.stored(raw)  # earlier objects of the same Apply are already in place
        try:
            if current is None:
                return self._create(raw, batch, fv, said), "created"
            return self._replace(raw, current, batch, fv, said, keep_unchanged=True)
        except BadRequest as e:
            raise BadRequest(f"{describe(raw, index)}: {e.message}") from None
        except Invalid as e:
            raise Invalid(f"{describe(raw, index)}: {e.message}", e.field, e.causes) from None
        except TooLarge as e:
            raise TooLarge(f"{describe(raw, index)}: {e.message}") from None

    def _remove_contents(self, namespace: str, batch: TurnRecord) -> None:
        """Deleting a namespace deletes what it holds (upstream's namespace controller
        does it after the namespace is marked Terminating; here, in the same commit)."""
        prefix = f"{namespace}/"
        for kind, cls in KINDS.items():
            if cls.namespaced:
                for key in [k for k in self._objects[kind] if k.startswith(prefix)]:
                    self._remove(kind, key, self._objects[kind][key], batch)

    def _bind(self, ns: str, name: str, node: str, uid: str, batch: TurnRecord) -> KubeObject:
        """A binding (SharedStore fences it on the leader's election key first)."""
        return self._pods.bind(ns, name, node, uid, batch)

    batched = True

    async def handle_turn(self, msgs: list[StoreMsg]) -> None:
        await self._loop.take(msgs)

    # --- the undo log: a batch's changes to memory, undone ----------------------------------------

    def _rollback(self, batch: TurnRecord) -> None:
        if batch.writes:
            self._undo_since(batch, (0, 0, 0, batch.writes[0].resource_version - 1))

    def _undo_since(self, batch: TurnRecord, mark: tuple[int, int, int, int]) -> None:
        undo_at, writes_at, events_at, rv = mark
        for kind, key, old in reversed(batch.undo[undo_at:]):
            if old is None:
                self._objects[kind].pop(key, None)
                self._sorted_keys.pop(kind, None)
            else:
                if key not in self._objects[kind]:
                    self._sorted_keys.pop(kind, None)
                self._objects[kind][key] = old
        del batch.undo[undo_at:], batch.writes[writes_at:], batch.events[events_at:], batch.sizes[events_at:]
        batch.hidden = min(batch.hidden, undo_at)
        self._rv = rv

    def _mark(self, batch: TurnRecord) -> tuple[int, int, int, int]:
        """Where the batch stands now, for _undo_since."""
        return len(batch.undo), len(batch.writes), len(batch.events), self._rv

    def _atomically(self, batch: TurnRecord, writes: Callable[[], Any]) -> Any:
        """Run `writes`; when one of them is refused, undo the ones already made."""
        mark = self._mark(batch)
        try:
            return writes()
        except StoreError:
            self._undo_since(batch, mark)
            raise

    def _write(self, kind: str, key: str, raw: dict[str, Any], batch: TurnRecord, *, client: bool = False,
               make: Callable[[dict[str, Any]], KubeObject] = parse_object, size: int | None = None) -> KubeObject:
        """Store one object; a client's object above the size limit is TooLarge
        (the server's own updates of an admitted object are not refused). `raw` is
        the store's own (no one else holds it); `make` gives the parsed object for it
        once its resourceVersion is set (by default, parsing it); `size`, when the
        writer knows it, is encoded_size(raw)'s."""
        size = weight(raw) if size is None else size  # encoded_size's (weights.py)
        if client and size > self.limits.max_object_bytes:
            raise TooLarge(f'{kind} "{key}": object is {size} bytes, above the limit of '
                           f"{self.limits.max_object_bytes} bytes")
        self._rv += 1
        self._lengths.stamped(raw, kind, key, self._rv, size)  # resourceVersion, kind; a pending pod's length
        obj = make(raw)
        old = self._objects[kind].get(key)
        self._objects[kind][key] = obj
        if old is None:
            self._sorted_keys.pop(kind, None)
        batch.undo.append((kind, key, old))
        batch.writes.append(Write(kind=kind, key=key, raw=raw, resource_version=self._rv))
        batch.events.append(WatchEvent("ADDED" if old is None else "MODIFIED", kind, obj, old, self._rv))
        batch.sizes.append(size)
        return obj

    def _remove(self, kind: str, key: str, current: KubeObject, batch: TurnRecord) -> None:
        self._rv += 1
        del self._objects[kind][key]
        if kind == "Pod":
            self._lengths.drop(key)  # a pending pod deleted: its kept length goes with it (weights.py)
        self._sorted_keys.pop(kind, None)
        batch.undo.append((kind, key, current))
        batch.writes.append(Write(kind=kind, key=key, raw=None, resource_version=self._rv))
        batch.events.append(WatchEvent("DELETED", kind, current, current, self._rv))
        batch.sizes.append(DELETE_WEIGHT)
