"""The Store actor: authoritative objects, resourceVersion, watch fan-out.

Every write goes through the inbox. One turn of the loop takes every message
queued (group commit), applies the writes in memory, commits them to the backend
in one batch, and only then answers the callers and tells the watchers. A batch
the backend fails to commit is rolled back and every write in it fails.

Create, Apply and Update do what kube-apiserver does on its write path, so every
client, in process or over the wire, gets the same objects:
- fill the fields the server owns (actors.store.fields: uid, creationTimestamp on
  the store's clock, generateName; kept on replacement with status and a pod's
  server-set spec fields);
- admit a new pod's priority from its PriorityClass (actors.store.admission) and
  keep one globalDefault PriorityClass;
- validate every object against its kind's schema (framework.api.schema: types,
  enums, ranges, quantities, names, labels, selectors, as kube-apiserver; name
  formats and a pod's containers are skipped with validate_names=False, for the
  conformance driver whose upstream cases use names such as
  "p_without_nominated_node"); a null field is a field left out;
- refuse pod spec changes an update may not make (ValidatePodUpdate).
An Apply is all or nothing, and each of its objects sees the ones before it: the
same object twice is created, then configured or unchanged.

What the store holds is bounded (actors.store.limits): an object's size, the watch
history (compacted by count and bytes; a resume from before it is Expired), and
Events (per object, in all, by age). Reads from other tasks (`read`, `read_list`)
are served from the committed state at once, never waiting behind a batch's
fsync: while a batch commits, the keys it changed read as they were before it.
One turn takes at most `client_writes_per_turn` objects of client writes (Create,
Apply, Update, Delete); the rest wait for the next turn while bindings and status
updates go on, and while the scheduler binds the store yields the event loop as
long as its turn took, so a burst of client writes cannot starve the scheduler.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, assert_never

from actors.base import Actor, MailboxClosed, reject, resolve
from actors.pacing import Pacer
from actors.store.backend import StoreBackend, Write
from actors.store.memory import InMemoryBackend
from actors.store.messages import (
    AlreadyExists,
    Conflict,
    EventRecord,
    Invalid,
    NotFound,
    StoreError,
    TooLarge,
    WatchEvent,
    Apply,
    Bind,
    Create,
    Delete,
    Get,
    GetEvents,
    ListObjects,
    RecordEvent,
    StoreMsg,
    Unwatch,
    Update,
    UpdatePodStatus,
    Watch,
)
from actors.store.admission import admit_pod, check_priority_class
from actors.store.history import DELETE_WEIGHT, EventLog, PastEvent, WatchHistory
from actors.store.limits import StoreLimits
from actors.store.paging import decode_continue, encode_continue, page
from actors.store.fields import for_new_object, for_replacement, name_of
from actors.store.select import Selectors
from actors.store.sharing import share_containers
from actors.store.raw import describe, encoded_size, section, set_condition, without_version
from framework.api.errors import ValidationError
from framework.api.schema import admitted
from framework.api.objects import KINDS, KubeObject, Pod, PriorityClass, parse_object
from framework.api.validation import validate_pod_update


@dataclass(slots=True)
class _Watcher:
    kinds: frozenset[str] | None
    sink: Callable[[WatchEvent], None]


@dataclass(slots=True)
class _Batch:
    writes: list[Write] = field(default_factory=list)
    undo: list[tuple[str, str, KubeObject | None]] = field(default_factory=list)
    events: list[WatchEvent] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)  # each event's weight in the watch history
    replies: list[tuple[Any, Any]] = field(default_factory=list)  # (future, value or StoreError)
    hidden: int = 0  # undo entries already in the store's `_committing` view (a paced Apply)


_CLIENT_WRITES = (Create, Apply, Update, Delete)
_SCHEDULER_WRITES = (Bind, UpdatePodStatus)
_ALL_WRITES = _CLIENT_WRITES + _SCHEDULER_WRITES

log = logging.getLogger("ksched.store")


def _key(kind: str, namespace: str, name: str) -> str:
    cls = KINDS.get(kind)
    if cls is not None and not cls.namespaced:
        return name
    return f"{namespace or 'default'}/{name}"


def _validate(raw: Mapping[str, Any], kind: str | None = None) -> KubeObject:
    if isinstance(raw, Mapping) and kind and "kind" not in raw:
        raw = {**raw, "kind": kind}
    try:
        return parse_object(raw)
    except ValidationError as e:
        raise Invalid(str(e), e.field) from None


def _checked(raw: Any, strict: bool, semantic: bool = True) -> Any:
    """The manifest as the API server would keep it (null fields dropped), or Invalid
    naming the first field its kind's schema (framework.api.schema) refuses."""
    raw, errors = admitted(raw, strict, semantic)
    _refuse(errors)
    return raw


def _refuse(errors: list[ValidationError]) -> None:
    """Raise Invalid for the first error (the field it names is the one to fix first)."""
    if errors:
        raise Invalid(str(errors[0]), errors[0].field)


class Store(Actor[StoreMsg]):
    name = "store"

    def __init__(self, backend: StoreBackend | None = None, clock: Callable[[], float] = lambda: 0.0,
                 rand: random.Random | None = None, *, validate_names: bool = True,
                 limits: StoreLimits | None = None) -> None:
        super().__init__()
        self.validate_names = validate_names
        self.backend: StoreBackend = backend if backend is not None else InMemoryBackend()
        self._clock = clock  # wall time for the real clock: creationTimestamp and event times
        self._rand = rand if rand is not None else random.Random()  # generateName suffixes
        self._objects: dict[str, dict[str, KubeObject]] = {k: {} for k in KINDS}
        self.limits = limits if limits is not None else StoreLimits()
        self._rv = 0
        self._committed_rv = 0
        self._history = WatchHistory(max_events=self.limits.history_events, max_bytes=self.limits.history_bytes)
        self._watchers: dict[int, _Watcher] = {}
        self._next_watch = 1
        self._events = EventLog(max_events=self.limits.max_events, ttl_seconds=self.limits.event_ttl_seconds)
        self._sorted_keys: dict[str, list[str]] = {}  # per kind, dropped when a key comes or goes
        self._committing: dict[tuple[str, str], KubeObject | None] | None = None  # keys of the batch in commit
        self._deferred: collections.deque[StoreMsg] = collections.deque()
        self.quarantined: dict[tuple[str, str], str] = {}  # (kind, key) -> why, from load()
        self.commits = 0

    # --- life cycle -------------------------------------------------------------------------

    async def load(self) -> None:
        """Read the backend's objects; call once before run()."""
        state = await self.backend.load_all(max_object_bytes=self.limits.max_object_bytes)
        objects: Any = state.objects
        for i, raw in enumerate(objects):
            if isinstance(objects, list):
                objects[i] = None  # the decoded dict goes once the store has its own copy
            try:
                # Shapes only: what an older version accepted stays served and counted.
                checked = _checked(raw, strict=False, semantic=False)
                if isinstance(checked, dict) and checked.get("kind") == "Pod":
                    share_containers(checked)  # as at creation (the backend's dicts are one per object)
                obj = parse_object(checked)
            except (Invalid, ValidationError) as e:
                self._quarantine(raw, e.message if isinstance(e, Invalid) else str(e))
                continue
            self._objects[obj.kind][obj.key] = obj
        for kind, key, why in state.unreadable:
            self._quarantine({"kind": kind}, why, key)
        self._rv = self._committed_rv = state.resource_version
        self._history.reset(self._rv)
        self._sorted_keys.clear()

    def _quarantine(self, raw: Any, why: str, key: str = "") -> None:
        """Leave a stored object that no longer validates out of the store (it stays in
        the backend until a write replaces it), with a log line and a Warning event."""
        kind = str(raw.get("kind")) if isinstance(raw, Mapping) else "?"
        named = name_of(raw)
        key = key or (_key(kind, *named) if named is not None else "?")
        self.quarantined[(kind, key)] = why
        log.warning("quarantined stored %s %s: %s", kind, key, why)
        self._events.record(kind, key, EventRecord(
            "Warning", "Quarantined", f"stored {kind} {key} is not valid and is not served: {why}", self._clock()))

    async def close(self) -> None:
        await self.backend.close()

    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def history(self) -> WatchHistory:
        return self._history

    @property
    def event_log(self) -> EventLog:
        return self._events

    # --- synchronous reads (the owner's view, for the same event loop) -------------------

    def peek(self, kind: str, namespace: str, name: str) -> KubeObject | None:
        return self._objects.get(kind, {}).get(_key(kind, namespace, name))

    def peek_all(self, kind: str) -> list[KubeObject]:
        return list(self._objects.get(kind, {}).values())

    def stored(self, raw: Any) -> KubeObject | None:
        """The stored object a manifest names, if any (a synchronous read, like peek;
        the manifest need not be valid)."""
        named = name_of(raw)
        kind = raw.get("kind") if isinstance(raw, Mapping) else None
        if named is None or not isinstance(kind, str) or kind not in self._objects:
            return None
        return self.peek(kind, *named)

    def events_for(self, kind: str, key: str) -> list[EventRecord]:
        return self._events.for_object(kind, key)

    # --- committed reads (any task on the event loop; never wait for a commit) -----------

    def read(self, kind: str, namespace: str, name: str) -> KubeObject:
        """The object as last committed; NotFound if there is none."""
        key = _key(kind, namespace, name)
        committing = self._committing
        if committing is not None and (kind, key) in committing:
            obj = committing[(kind, key)]
        else:
            obj = self._objects.get(kind, {}).get(key)
        if obj is None:
            raise NotFound(f'{kind} "{key}" not found')
        return obj

    def read_list(self, kind: str, namespace: str = "", label_selector: str | Mapping[str, Any] | None = None,
                  field_selector: str | None = None, *, limit: int = 0, continue_token: str = "",
                  max_bytes: int = 0) -> tuple[list[KubeObject], int, str]:
        """A page of committed objects in key order: (objects, resourceVersion, continue).
        Every page of one list is read as of the first page's resourceVersion; a
        token older than the kept history raises Gone (Expired). With `max_bytes`
        the page also ends before its objects' encodings pass it (one object at least)."""
        if kind not in self._objects:
            raise Invalid(f"unsupported kind {kind!r}", "kind")
        try:
            sel = Selectors(label_selector, field_selector, kind)
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None
        rv, start = self._committed_rv, ""
        if continue_token:
            token = decode_continue(continue_token)
            self._history.check(token.resource_version, "continue token")
            if token.resource_version > rv:
                raise Invalid("continue: continue key is not valid (from the future)", "continue")
            rv, start = token.resource_version, token.start
        objs, last = page(self._keys(kind), self._objects[kind], self._older(kind, rv),
                          start=start, prefix=self._prefix(kind, namespace), limit=limit, keep=sel.matches,
                          max_bytes=max_bytes, size=lambda o: encoded_size(o.raw))
        return objs, rv, encode_continue(rv, last) if last is not None else ""

    def _keys(self, kind: str) -> list[str]:
        keys = self._sorted_keys.get(kind)
        if keys is None:
            keys = self._sorted_keys[kind] = sorted(self._objects[kind])
        return keys

    @staticmethod
    def _prefix(kind: str, namespace: str) -> str:
        cls = KINDS.get(kind)
        return f"{namespace}/" if namespace and (cls is None or cls.namespaced) else ""

    def _older(self, kind: str, rv: int) -> dict[str, KubeObject | None]:
        """For the keys of `kind` changed after `rv`, their state at `rv` (None: absent)."""
        older: dict[str, KubeObject | None] = {}
        for past in self._history.since(rv):
            if past.kind == kind and past.key not in older:
                older[past.key] = past.old()
        for (k, key), old in (self._committing or {}).items():
            if k == kind:
                older.setdefault(key, old)
        return older

    # --- the loop ---------------------------------------------------------------------------

    batched = True

    async def handle_batch(self, msgs: list[StoreMsg]) -> None:
        self._deferred.extend(msgs)
        while self._deferred:
            turn = self._take_turn()
            started = time.perf_counter()
            await self._turn(turn)
            if self._deferred and any(isinstance(m, _SCHEDULER_WRITES) for m in turn):
                # Client writes are waiting while the scheduler binds: give the event loop
                # (the scheduler's cycles) as long as this turn's work took, at most 50 ms,
                # so that a burst of applies gets at most half of it.
                await asyncio.sleep(min(time.perf_counter() - started, 0.05))
            self._deferred.extend(self.inbox.get_nowait_all())

    def _take_turn(self) -> list[StoreMsg]:
        """Everything waiting except client writes beyond the turn's budget (at
        least one client write is always taken, whatever its size)."""
        turn: list[StoreMsg] = []
        rest: collections.deque[StoreMsg] = collections.deque()
        budget = self.limits.client_writes_per_turn
        took_client_write = client_held = False
        # While the disk is full a turn holds deletes or other writes, not both: deletes can commit.
        full, deleting = getattr(self.backend, "disk_full", False), None
        for msg in self._deferred:
            held = False
            if full and isinstance(msg, _ALL_WRITES):
                deleting = isinstance(msg, Delete) if deleting is None else deleting
                held = isinstance(msg, Delete) != deleting
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
        batch = _Batch()
        pacer = Pacer()
        for msg in msgs:
            mark = self._mark(batch)
            try:
                if isinstance(msg, Apply) and len(msg.objects) > 1:
                    value = await self._apply_paced(msg, batch, pacer)
                else:
                    value = self._apply(msg, batch)
            except StoreError as e:
                value = e
            except Exception as e:  # noqa: BLE001 - one message's bug fails that message alone
                # Its half-made changes go, so memory holds only what this turn commits.
                self._undo_since(batch, mark)
                log.exception("store: %s failed; its changes were undone", type(msg).__name__)
                value = StoreError(f"internal error in {type(msg).__name__}: {e!r}")
            batch.replies.append((getattr(msg, "reply", None), value))
        self._committing = None
        if batch.writes:
            committing: dict[tuple[str, str], KubeObject | None] = {}
            for kind, key, old in batch.undo:
                committing.setdefault((kind, key), old)
            self._committing = committing
            try:
                await self.backend.commit(batch.writes)
                self.commits += 1
                self._committed_rv = self._rv
            except Exception as e:  # noqa: BLE001 - any backend failure fails the whole batch
                self._rollback(batch)
                err = e if isinstance(e, StoreError) else StoreError(f"store commit failed: {e}")
                batch.replies = [(r, err if not isinstance(v, StoreError) else v) for r, v in batch.replies]
                batch.events.clear()
            finally:
                self._committing = None
        for reply, value in batch.replies:
            if isinstance(value, StoreError):
                reject(reply, value)
            else:
                resolve(reply, value)
        for ev, size in zip(batch.events, batch.sizes):
            self._history.append(PastEvent.of(ev), size)
        for ev in batch.events:  # in slices: a watcher's sink encodes, queues, may wake its reader
            self._fan_out(ev)
            await pacer.step()

    async def _apply_paced(self, msg: Apply, batch: _Batch, pacer: Pacer) -> Any:
        """An Apply of many objects, giving the event loop a turn between slices of
        it (all or nothing still: a refused object undoes the ones before it). While
        the loop has its turn, committed reads see the keys written so far as they
        were before this turn (the same `_committing` view as during a commit)."""
        mark = (len(batch.undo), len(batch.writes), len(batch.events), self._rv)
        done: list[tuple[KubeObject, str]] = []
        hidden = self._committing if self._committing is not None else {}
        try:
            for i, raw in enumerate(msg.objects):
                done.append(self._apply_one(i, raw, batch))
                if pacer.due():
                    for kind, key, old in batch.undo[batch.hidden:]:
                        hidden.setdefault((kind, key), old)
                    batch.hidden = len(batch.undo)
                    self._committing = hidden
                    await pacer.pause()
        except StoreError:
            self._undo_since(batch, mark)
            raise
        items = [obj.raw for obj, _ in done]
        return (items, [action for _, action in done]) if msg.with_actions else items

    def _rollback(self, batch: _Batch) -> None:
        if batch.writes:
            self._undo_since(batch, (0, 0, 0, batch.writes[0].resource_version - 1))

    def _undo_since(self, batch: _Batch, mark: tuple[int, int, int, int]) -> None:
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

    def _fan_out(self, ev: WatchEvent) -> None:
        for w in list(self._watchers.values()):
            if w.kinds is None or ev.kind in w.kinds:
                try:
                    w.sink(ev)
                except MailboxClosed:
                    pass

    # --- handlers: each returns the reply value or raises StoreError ---------------------------

    def _apply(self, msg: StoreMsg, batch: _Batch) -> Any:
        match msg:
            case Create(obj=raw):
                return self._create(raw, batch).raw
            case Apply(objects=raws, with_actions=with_actions):
                done = self._atomically(batch, lambda: [self._apply_one(i, r, batch) for i, r in enumerate(raws)])
                items = [obj.raw for obj, _ in done]
                return (items, [action for _, action in done]) if with_actions else items
            case Update(obj=raw):
                current = self.stored(raw)
                if current is None:
                    obj = _validate(raw)
                    raise NotFound(f'{obj.kind} "{obj.key}" not found')
                return self._replace(raw, current, batch)[0].raw
            case Delete(kind=kind, namespace=ns, name=name):
                key = _key(kind, ns, name)
                current = self._objects.get(kind, {}).get(key)
                if current is None:
                    raise NotFound(f'{kind} "{key}" not found')
                self._remove(kind, key, current, batch)
                return current.raw
            case Get(kind=kind, namespace=ns, name=name):
                obj = self.peek(kind, ns, name)
                if obj is None:
                    raise NotFound(f'{kind} "{_key(kind, ns, name)}" not found')
                return obj.raw
            case ListObjects(kind=kind, namespace=ns, label_selector=ls, field_selector=fs):
                if kind not in self._objects:
                    raise Invalid(f"unsupported kind {kind!r}", "kind")
                try:
                    sel = Selectors(ls, fs, kind)
                except ValidationError as e:
                    raise Invalid(str(e), e.field) from None
                items = [o.raw for o in self._objects[kind].values() if (not ns or o.namespace == ns) and sel.matches(o)]
                return items, self._rv
            case Bind(namespace=ns, name=name, node_name=node, uid=uid):
                return self._bind(ns, name, node, uid, batch).raw
            case UpdatePodStatus():
                return self._update_pod_status(msg, batch).raw
            case RecordEvent(kind=kind, key=key, type=etype, reason=reason, message=text):
                self._events.record(kind, key, EventRecord(etype, reason, text, self._clock()))
                return None
            case GetEvents(kind=kind, key=key):
                self._events.expire(self._clock())
                return self.events_for(kind, key)
            case Watch(kinds=kinds, from_rv=from_rv, sink=sink):
                return self._watch(kinds, from_rv, sink)
            case Unwatch(watch_id=wid):
                self._watchers.pop(wid, None)
                return None
            case _:
                assert_never(msg)

    # --- the write path: create, replace, apply ------------------------------------------------

    def _create(self, raw: Any, batch: _Batch) -> KubeObject:
        # The schema's pass (without_nulls) makes `raw` the store's own copy, and
        # admission copies what it changes: nothing is copied again, and the object
        # is parsed once (a pod after its admission).
        raw = _checked(for_new_object(raw, self._clock(), self._rand, as_given=not self.validate_names),
                       self.validate_names)
        if isinstance(raw, Mapping) and raw.get("kind") == "Pod":
            raw = self._admit_new(raw, None)  # a copy with its own spec
            share_containers(raw)
            obj = _validate(raw)
        else:
            obj = _validate(raw)
            raw = self._admit_new(raw, obj)
        if obj.key in self._objects[obj.kind]:
            raise AlreadyExists(f'{obj.kind} "{obj.key}" already exists')
        return self._write(obj.kind, obj.key, raw, batch, client=True, make=obj.as_stored)

    def _replace(self, raw: Any, current: KubeObject, batch: _Batch,
                 keep_unchanged: bool = False) -> tuple[KubeObject, str]:
        """Replace `current`; with keep_unchanged an identical object is not written
        again (apply's "unchanged")."""
        raw = for_replacement(_checked(raw, self.validate_names), current.raw, as_given=not self.validate_names)
        obj = _validate(raw)
        self._check_rv(obj, current, required=False)
        try:
            if isinstance(obj, PriorityClass) and isinstance(current, PriorityClass):
                check_priority_class(obj, current, self._priority_classes())
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None
        if obj.kind == "Pod":
            _refuse(validate_pod_update(raw, current.raw))
        if keep_unchanged and without_version(raw) == without_version(current.raw):
            return current, "unchanged"
        return self._write(obj.kind, obj.key, raw, batch, client=True, make=obj.as_stored), "configured"

    def _apply_one(self, index: int, raw: Any, batch: _Batch) -> tuple[KubeObject, str]:
        current = self.stored(raw)  # earlier objects of the same Apply are already in place
        try:
            if current is None:
                return self._create(raw, batch), "created"
            return self._replace(raw, current, batch, keep_unchanged=True)
        except Invalid as e:
            raise Invalid(f"{describe(raw, index)}: {e.message}", e.field) from None
        except TooLarge as e:
            raise TooLarge(f"{describe(raw, index)}: {e.message}") from None

    def _admit_new(self, raw: Any, obj: KubeObject | None) -> Any:
        """Priority admission and create-time validation; a pod (obj None: not parsed
        yet) comes back with its priority set."""
        try:
            if obj is None:
                raw = admit_pod(raw, self._priority_classes())
            elif isinstance(obj, PriorityClass):
                check_priority_class(obj, None, self._priority_classes())
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None
        return raw

    def _priority_classes(self) -> dict[str, PriorityClass]:
        return {pc.name: pc for pc in self._objects["PriorityClass"].values() if isinstance(pc, PriorityClass)}

    def _mark(self, batch: _Batch) -> tuple[int, int, int, int]:
        """Where the batch stands now, for _undo_since."""
        return len(batch.undo), len(batch.writes), len(batch.events), self._rv

    def _atomically(self, batch: _Batch, writes: Callable[[], Any]) -> Any:
        """Run `writes`; when one of them is refused, undo the ones already made."""
        mark = self._mark(batch)
        try:
            return writes()
        except StoreError:
            self._undo_since(batch, mark)
            raise

    @staticmethod
    def _check_rv(obj: KubeObject, current: KubeObject | None, required: bool) -> None:
        want = obj.meta.resource_version
        if not want and not required:
            return
        have = current.meta.resource_version if current is not None else ""
        if want != have:
            raise Conflict(f'Operation cannot be fulfilled on {obj.kind} "{obj.key}": '
                           "the object has been modified; please apply your changes to the latest version and try again")

    def _write(self, kind: str, key: str, raw: dict[str, Any], batch: _Batch, *, client: bool = False,
               make: Callable[[dict[str, Any]], KubeObject] = parse_object) -> KubeObject:
        """Store one object; a client's object above the size limit is TooLarge
        (the server's own updates of an admitted object are not refused). `raw` is
        the store's own (no one else holds it); `make` gives the parsed object for it
        once its resourceVersion is set (by default, parsing it)."""
        size = encoded_size(raw)
        if client and size > self.limits.max_object_bytes:
            raise TooLarge(f'{kind} "{key}": object is {size} bytes, above the limit of '
                           f"{self.limits.max_object_bytes} bytes")
        self._rv += 1
        meta = dict(raw.get("metadata") or {})
        meta["resourceVersion"] = str(self._rv)
        raw["metadata"] = meta
        raw.setdefault("kind", kind)
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

    def _remove(self, kind: str, key: str, current: KubeObject, batch: _Batch) -> None:
        self._rv += 1
        del self._objects[kind][key]
        self._sorted_keys.pop(kind, None)
        batch.undo.append((kind, key, current))
        batch.writes.append(Write(kind=kind, key=key, raw=None, resource_version=self._rv))
        batch.events.append(WatchEvent("DELETED", kind, current, current, self._rv))
        batch.sizes.append(DELETE_WEIGHT)

    def _pod(self, ns: str, name: str, uid: str = "") -> Pod:
        pod = self._objects["Pod"].get(_key("Pod", ns, name))
        if pod is None or (uid and pod.uid != uid):
            raise NotFound(f'Pod "{_key("Pod", ns, name)}" not found')
        assert isinstance(pod, Pod)
        return pod

    def _bind(self, ns: str, name: str, node: str, uid: str, batch: _Batch) -> KubeObject:
        pod = self._pod(ns, name, uid)
        if pod.node_name:
            raise Conflict(f'pod {pod.key} is already assigned to node "{pod.node_name}"')
        # Stored objects are never changed in place, so the new one shares every part
        # but the few dicts written here (a deep copy cost more than the scheduling).
        raw = dict(pod.raw)
        raw["spec"] = {**section(raw.get("spec")), "nodeName": node}
        status = raw["status"] = section(raw.get("status"))
        set_condition(status, {"type": "PodScheduled", "status": "True"})
        # The API server clears the nomination at binding (ClearingNominatedNodeNameAfterBinding).
        status.pop("nominatedNodeName", None)
        return self._write("Pod", pod.key, raw, batch, make=pod.with_server_fields)

    def _update_pod_status(self, msg: UpdatePodStatus, batch: _Batch) -> KubeObject:
        pod = self._pod(msg.namespace, msg.name, msg.uid)
        # As in _bind: only the status (and its new conditions list) is written.
        raw = dict(pod.raw)
        status = raw["status"] = section(raw.get("status"))
        if msg.condition is not None:
            set_condition(status, dict(msg.condition))
        if msg.nominated_node_name is not None:
            if msg.nominated_node_name:
                status["nominatedNodeName"] = msg.nominated_node_name
            else:
                status.pop("nominatedNodeName", None)
        if msg.phase is not None:
            status["phase"] = msg.phase
        return self._write("Pod", pod.key, raw, batch, make=pod.with_server_fields)

    def _watch(self, kinds: frozenset[str] | None, from_rv: int, sink: Callable[[WatchEvent], None]) -> tuple[int, int]:
        """Register `sink`; replay what happened after `from_rv` (0: the current
        objects as ADDED). Returns (watch id, resourceVersion now)."""
        if from_rv == 0:
            for kind, objs in self._objects.items():
                if kinds is None or kind in kinds:
                    for obj in objs.values():
                        sink(WatchEvent("ADDED", kind, obj, None, int(obj.meta.resource_version or 0)))
        elif from_rv < self._rv:
            self._history.check(from_rv)
            for past in self._history.since(from_rv):
                if kinds is None or past.kind in kinds:
                    sink(past.event())
        wid = self._next_watch
        self._next_watch += 1
        self._watchers[wid] = _Watcher(kinds, sink)
        return wid, self._rv
