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
"""
from __future__ import annotations

import collections
import copy
import logging
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, assert_never

from actors.base import Actor, MailboxClosed, reject, resolve
from actors.store.backend import StoreBackend, Write
from actors.store.memory import InMemoryBackend
from actors.store.messages import (
    AlreadyExists,
    Conflict,
    EventRecord,
    Gone,
    Invalid,
    NotFound,
    StoreError,
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
from actors.store.fields import for_new_object, for_replacement, name_of
from actors.store.select import Selectors
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
    replies: list[tuple[Any, Any]] = field(default_factory=list)  # (future, value or StoreError)


log = logging.getLogger("ksched.store")
HISTORY = 10_000  # watch events kept for watches that start from an older resourceVersion


@dataclass(frozen=True, slots=True)
class _Past:
    """A watch event as the history keeps it: the objects' raw dicts only. The
    parsed objects (several KB a pod) are made again when a watch replays it, so
    an old pod version the history holds costs its raw dict, most of which is
    shared with the newer version (_bind and _update_pod_status copy only what
    they change)."""

    type: str
    kind: str
    raw: Mapping[str, Any]
    old_raw: Mapping[str, Any] | None
    resource_version: int

    @classmethod
    def of(cls, ev: WatchEvent) -> "_Past":
        return cls(ev.type, ev.kind, ev.obj.raw, None if ev.old is None else ev.old.raw, ev.resource_version)

    def event(self) -> WatchEvent:
        old = None if self.old_raw is None else parse_object(self.old_raw)
        return WatchEvent(self.type, self.kind, parse_object(self.raw), old, self.resource_version)


MAX_EVENTS_PER_OBJECT = 50


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


def describe(raw: Any, index: int) -> str:
    """`objects[3] (Pod default/web-3)`: which object of a batch an error is about."""
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    name = "/".join(str(x) for x in (meta.get("namespace"), meta.get("name")) if x)
    kind = raw.get("kind") if isinstance(raw, Mapping) else None
    return f"objects[{index}] ({kind} {name})" if name else f"objects[{index}]"


def _without_version(raw: Mapping[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (raw.get("metadata") or {}).items() if k != "resourceVersion"}
    return {**raw, "metadata": meta}


class Store(Actor[StoreMsg]):
    name = "store"

    def __init__(self, backend: StoreBackend | None = None, clock: Callable[[], float] = lambda: 0.0,
                 rand: random.Random | None = None, *, validate_names: bool = True) -> None:
        super().__init__()
        self.validate_names = validate_names
        self.backend: StoreBackend = backend if backend is not None else InMemoryBackend()
        self._clock = clock  # wall time for the real clock: creationTimestamp and event times
        self._rand = rand if rand is not None else random.Random()  # generateName suffixes
        self._objects: dict[str, dict[str, KubeObject]] = {k: {} for k in KINDS}
        self._rv = 0
        self._history: collections.deque[_Past] = collections.deque(maxlen=HISTORY)
        self._watchers: dict[int, _Watcher] = {}
        self._next_watch = 1
        self._events: dict[tuple[str, str], list[EventRecord]] = {}
        self.quarantined: dict[tuple[str, str], str] = {}  # (kind, key) -> why, from load()
        self.commits = 0

    # --- life cycle -------------------------------------------------------------------------

    async def load(self) -> None:
        """Read the backend's objects; call once before run()."""
        state = await self.backend.load_all()
        for raw in state.objects:
            try:
                # Shapes only: what an older version accepted stays served and counted.
                obj = parse_object(_checked(raw, strict=False, semantic=False))
            except (Invalid, ValidationError) as e:
                self._quarantine(raw, e.message if isinstance(e, Invalid) else str(e))
                continue
            self._objects[obj.kind][obj.key] = obj
        for kind, key, why in state.unreadable:
            self._quarantine({"kind": kind}, why, key)
        self._rv = state.resource_version

    def _quarantine(self, raw: Any, why: str, key: str = "") -> None:
        """Leave a stored object that no longer validates out of the store (it stays in
        the backend until a write replaces it), with a log line and a Warning event."""
        kind = str(raw.get("kind")) if isinstance(raw, Mapping) else "?"
        named = name_of(raw)
        key = key or (_key(kind, *named) if named is not None else "?")
        self.quarantined[(kind, key)] = why
        log.warning("quarantined stored %s %s: %s", kind, key, why)
        self._events.setdefault((kind, key), []).append(
            EventRecord("Warning", "Quarantined", f"stored {kind} {key} is not valid and is not served: {why}",
                        self._clock()))

    async def close(self) -> None:
        await self.backend.close()

    @property
    def resource_version(self) -> int:
        return self._rv

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
        return list(self._events.get((kind, key), ()))

    # --- the loop ---------------------------------------------------------------------------

    batched = True

    async def handle_batch(self, msgs: list[StoreMsg]) -> None:
        batch = _Batch()
        for msg in msgs:
            try:
                value = self._apply(msg, batch)
            except StoreError as e:
                value = e
            batch.replies.append((getattr(msg, "reply", None), value))
        if batch.writes:
            try:
                await self.backend.commit(batch.writes)
                self.commits += 1
            except Exception as e:  # noqa: BLE001 - any backend failure fails the whole batch
                self._rollback(batch)
                err = StoreError(f"store commit failed: {e}")
                batch.replies = [(r, err if not isinstance(v, StoreError) else v) for r, v in batch.replies]
                batch.events.clear()
        for reply, value in batch.replies:
            if isinstance(value, StoreError):
                reject(reply, value)
            else:
                resolve(reply, value)
        for ev in batch.events:
            self._history.append(_Past.of(ev))
            self._fan_out(ev)

    def _rollback(self, batch: _Batch) -> None:
        if batch.writes:
            self._undo_since(batch, (0, 0, 0, batch.writes[0].resource_version - 1))

    def _undo_since(self, batch: _Batch, mark: tuple[int, int, int, int]) -> None:
        undo_at, writes_at, events_at, rv = mark
        for kind, key, old in reversed(batch.undo[undo_at:]):
            if old is None:
                self._objects[kind].pop(key, None)
            else:
                self._objects[kind][key] = old
        del batch.undo[undo_at:], batch.writes[writes_at:], batch.events[events_at:]
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
                lst = self._events.setdefault((kind, key), [])
                lst.append(EventRecord(etype, reason, text, self._clock()))
                del lst[:-MAX_EVENTS_PER_OBJECT]
                return None
            case GetEvents(kind=kind, key=key):
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
        raw = _checked(for_new_object(raw, self._clock(), self._rand), self.validate_names)
        obj = _validate(raw)
        raw = self._admit_new(raw, obj)
        if obj.key in self._objects[obj.kind]:
            raise AlreadyExists(f'{obj.kind} "{obj.key}" already exists')
        return self._write(obj.kind, obj.key, copy.deepcopy(dict(raw)), batch)

    def _replace(self, raw: Any, current: KubeObject, batch: _Batch,
                 keep_unchanged: bool = False) -> tuple[KubeObject, str]:
        """Replace `current`; with keep_unchanged an identical object is not written
        again (apply's "unchanged")."""
        raw = for_replacement(_checked(raw, self.validate_names), current.raw)
        obj = _validate(raw)
        self._check_rv(obj, current, required=False)
        try:
            if isinstance(obj, PriorityClass) and isinstance(current, PriorityClass):
                check_priority_class(obj, current, self._priority_classes())
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None
        if obj.kind == "Pod":
            _refuse(validate_pod_update(raw, current.raw))
        if keep_unchanged and _without_version(raw) == _without_version(current.raw):
            return current, "unchanged"
        return self._write(obj.kind, obj.key, copy.deepcopy(dict(raw)), batch), "configured"

    def _apply_one(self, index: int, raw: Any, batch: _Batch) -> tuple[KubeObject, str]:
        current = self.stored(raw)  # earlier objects of the same Apply are already in place
        try:
            if current is None:
                return self._create(raw, batch), "created"
            return self._replace(raw, current, batch, keep_unchanged=True)
        except Invalid as e:
            raise Invalid(f"{describe(raw, index)}: {e.message}", e.field) from None

    def _admit_new(self, raw: Any, obj: KubeObject) -> Any:
        """Priority admission and create-time validation; a pod comes back with its priority set."""
        try:
            if isinstance(obj, Pod):
                raw = admit_pod(raw, self._priority_classes())
            elif isinstance(obj, PriorityClass):
                check_priority_class(obj, None, self._priority_classes())
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None
        return raw

    def _priority_classes(self) -> dict[str, PriorityClass]:
        return {pc.name: pc for pc in self._objects["PriorityClass"].values() if isinstance(pc, PriorityClass)}

    def _atomically(self, batch: _Batch, writes: Callable[[], Any]) -> Any:
        """Run `writes`; when one of them is refused, undo the ones already made."""
        mark = (len(batch.undo), len(batch.writes), len(batch.events), self._rv)
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

    def _write(self, kind: str, key: str, raw: dict[str, Any], batch: _Batch) -> KubeObject:
        self._rv += 1
        meta = dict(raw.get("metadata") or {})
        meta["resourceVersion"] = str(self._rv)
        raw["metadata"] = meta
        raw.setdefault("kind", kind)
        obj = parse_object(raw)
        old = self._objects[kind].get(key)
        self._objects[kind][key] = obj
        batch.undo.append((kind, key, old))
        batch.writes.append(Write(kind=kind, key=key, raw=raw, resource_version=self._rv))
        batch.events.append(WatchEvent("ADDED" if old is None else "MODIFIED", kind, obj, old, self._rv))
        return obj

    def _remove(self, kind: str, key: str, current: KubeObject, batch: _Batch) -> None:
        self._rv += 1
        del self._objects[kind][key]
        batch.undo.append((kind, key, current))
        batch.writes.append(Write(kind=kind, key=key, raw=None, resource_version=self._rv))
        batch.events.append(WatchEvent("DELETED", kind, current, current, self._rv))

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
        raw["spec"] = {**_dict(raw.get("spec")), "nodeName": node}
        status = raw["status"] = _dict(raw.get("status"))
        _set_condition(status, {"type": "PodScheduled", "status": "True"})
        # The API server clears the nomination at binding (ClearingNominatedNodeNameAfterBinding).
        status.pop("nominatedNodeName", None)
        return self._write("Pod", pod.key, raw, batch)

    def _update_pod_status(self, msg: UpdatePodStatus, batch: _Batch) -> KubeObject:
        pod = self._pod(msg.namespace, msg.name, msg.uid)
        # As in _bind: only the status (and its new conditions list) is written.
        raw = dict(pod.raw)
        status = raw["status"] = _dict(raw.get("status"))
        if msg.condition is not None:
            _set_condition(status, dict(msg.condition))
        if msg.nominated_node_name is not None:
            if msg.nominated_node_name:
                status["nominatedNodeName"] = msg.nominated_node_name
            else:
                status.pop("nominatedNodeName", None)
        if msg.phase is not None:
            status["phase"] = msg.phase
        return self._write("Pod", pod.key, raw, batch)

    def _watch(self, kinds: frozenset[str] | None, from_rv: int, sink: Callable[[WatchEvent], None]) -> tuple[int, int]:
        """Register `sink`; replay what happened after `from_rv` (0: the current
        objects as ADDED). Returns (watch id, resourceVersion now)."""
        if from_rv == 0:
            for kind, objs in self._objects.items():
                if kinds is None or kind in kinds:
                    for obj in objs.values():
                        sink(WatchEvent("ADDED", kind, obj, None, int(obj.meta.resource_version or 0)))
        elif from_rv < self._rv:
            oldest = self._history[0].resource_version if self._history else self._rv + 1
            if from_rv + 1 < oldest:
                raise Gone(f"too old resource version: {from_rv} ({oldest - 1})")
            for past in self._history:
                if past.resource_version > from_rv and (kinds is None or past.kind in kinds):
                    sink(past.event())
        wid = self._next_watch
        self._next_watch += 1
        self._watchers[wid] = _Watcher(kinds, sink)
        return wid, self._rv


def _dict(value: Any) -> dict[str, Any]:
    """A stored object's section as a dict to write into (one an older version let in
    as null or a non-object is replaced, so a status write never fails on it)."""
    return dict(value) if isinstance(value, Mapping) else {}


def _set_condition(status: dict[str, Any], cond: dict[str, Any]) -> None:
    have = status.get("conditions")
    conds = [c for c in (have if isinstance(have, list) else [])
             if isinstance(c, Mapping) and c.get("type") != cond["type"]]
    conds.append(cond)
    status["conditions"] = conds
