"""The Store actor: authoritative objects, resourceVersion, watch fan-out.

Every write goes through the inbox. One turn of the loop takes every message
queued (group commit), applies the writes in memory, commits them to the backend
in one batch, and only then answers the callers and tells the watchers. A batch
the backend fails to commit is rolled back and every write in it fails (the
loop: actors/store/turns.py; the handlers and the write path: here).

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
the stored Events (per object, in all, by age: actors.store.event_writes). Reads from other tasks (`read`, `read_list`)
are served from the committed state at once, never waiting behind a batch's
fsync: while a batch commits, the keys it changed read as they were before it.
One turn takes at most `client_writes_per_turn` objects of client writes (Create,
Apply, Update, Delete); the rest wait for the next turn while bindings and status
updates go on, and while the scheduler binds the store yields the event loop as
long as its turn took, so a burst of client writes cannot starve the scheduler.
"""
from __future__ import annotations

import collections
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
    Create,
    Delete,
    Recreate,
    Get,
    GetEvents,
    ListObjects,
    RecordEvent,
    SweepEvents,
    StoreMsg,
    Unwatch,
    Update,
    UpdatePodStatus,
    Watch,
)
from actors.store.admission import admit_pod, check_priority_class
from framework.kueue.pods import kueue_pod_defaults
from actors.store.history import DELETE_WEIGHT, WatchHistory
from actors.store.event_writes import EventWrites
from actors.clock import Clock
from actors.store.limits import StoreLimits
from actors.store.reads import CommittedReads, key_of as _key
from actors.store.pod_writes import PodWrites
from actors.store.loading import Loading
from actors.store.watchers import Watchers, Watcher as _Watcher
from actors.store.turns import TurnRecord, Turns
from actors.store.finalizers import check_no_new_finalizers, deleting, finalizers, marked_for_deletion
from actors.store.front_door import (
    IMMORTAL_NAMESPACES, admission, created_pod_status, defaulted, gated_condition,
)
from actors.store.fields import for_new_object, for_replacement, name_of
from actors.store.sharing import share_containers
from actors.store.raw import describe, encoded_size, without_version
from actors.store.gates import gated
from framework.api.errors import ValidationError
from framework.api.groups import kind_key
from framework.api.workload_api import update_errors
from framework.features import FeatureGates
from framework.api.objects import KINDS, KubeObject, PriorityClass, parse_object
from framework.api.schema import Admission
from framework.api.timeutil import format_time
from framework.api.schema.dra_update import validate_dra_update
from framework.api.validation import validate_pod_update




def _check_preconditions(raw: Mapping[str, Any], uid: str, resource_version: str) -> None:
    """A delete's preconditions against the stored object, in kube-apiserver's words."""
    meta = raw.get("metadata") or {}
    if uid and uid != meta.get("uid", ""):
        raise Conflict(f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid', '')}")
    if resource_version and resource_version != meta.get("resourceVersion", ""):
        raise Conflict(f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
                       f"ResourceVersion in object meta: {meta.get('resourceVersion', '')}")


def _validate(raw: Mapping[str, Any], kind: str | None = None) -> KubeObject:
    if isinstance(raw, Mapping) and kind and "kind" not in raw:
        raw = {**raw, "kind": kind}
    try:
        return parse_object(raw)
    except ValidationError as e:
        raise Invalid(str(e), e.field) from None


def _refuse(errors: list[ValidationError]) -> None:
    """Raise Invalid for the first error (the field it names is the one to fix first)."""
    if errors:
        raise Invalid(str(errors[0]), errors[0].field, tuple((e.field, e.detail) for e in errors))


class Store(EventWrites, Turns, Loading, CommittedReads, PodWrites, Watchers, Actor[StoreMsg]):
    name = "store"

    def __init__(self, backend: StoreBackend | None = None, clock: Callable[[], float] = lambda: 0.0,
                 rand: random.Random | None = None, *, validate_names: bool = True,
                 limits: StoreLimits | None = None, work_time: Callable[[], float] = time.perf_counter,
                 timers: Clock | None = None) -> None:
        super().__init__()
        self._work_time = work_time  # how long a turn's work took (a Clock's work_time)
        # Told True / False around a turn storing a bulk apply whose scheduler share is 0
        # (the Pipeline holds the queue's pops: HoldPops).
        self.hold_scheduling: Callable[[bool], None] | None = None
        self.validate_names = validate_names
        self.features = FeatureGates()  # the daemon's gates (actors.store.gates); the Pipeline sets them
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
        self._init_events(timers)  # `timers` arms the Events' expiry (actors.store.event_writes)
        self._sorted_keys: dict[str, list[str]] = {}  # per kind, dropped when a key comes or goes
        self._committing: dict[tuple[str, str], KubeObject | None] | None = None  # keys of the batch in commit
        self._deferred: collections.deque[StoreMsg] = collections.deque()
        self.quarantined: dict[tuple[str, str], str] = {}  # (kind, key) -> why, from load()
        self.commits = 0
        self.fair_pause_seconds = 0.0  # seconds the store yielded the loop to bindings (turns.py)

    # --- life cycle -------------------------------------------------------------------------

    async def close(self) -> None:
        self._cancel_expiry()
        await self.backend.close()

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
            case Create(obj=raw, field_validation=fv, warnings=said):
                return self._create(raw, batch, fv, said).raw
            case Apply(objects=raws, with_actions=with_actions, field_validation=fv, warnings=said):
                done = self._atomically(batch, lambda: [self._apply_one(i, r, batch, fv, said)
                                                        for i, r in enumerate(raws)])
                items = [obj.raw for obj, _ in done]
                return (items, [action for _, action in done]) if with_actions else items
            case Update(obj=raw, field_validation=fv, warnings=said):
                current = self.stored(raw)
                if current is None:
                    obj = _validate(self._admission(raw, fv, said).raw)
                    raise NotFound(f'{obj.kind} "{obj.key}" not found')
                return self._replace(raw, current, batch, fv, said)[0].raw
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
                return self.list_now(kind, ns, ls, fs), self._rv
            case Bind(namespace=ns, name=name, node_name=node, uid=uid):
                return self._bind(ns, name, node, uid, batch).raw
            case UpdatePodStatus():
                return self._update_pod_status(msg, batch).raw
            case RecordEvent():
                return self._record_event(msg, batch)
            case SweepEvents():
                return self._sweep_events(batch)
            case GetEvents(kind=kind, key=key):
                return self._this_life(kind, key)
            case Watch(kinds=kinds, from_rv=from_rv, sink=sink):
                return self._watch(kinds, from_rv, sink)
            case Unwatch(watch_id=wid):
                self._watchers.pop(wid, None)
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

    def _create(self, raw: Any, batch: TurnRecord, fv: str | None = None, warnings: list[str] | None = None) -> KubeObject:
        # The one admission (front_door.admission) makes `raw` the store's own copy, and
        # priority admission copies what it changes: nothing is copied again, and the
        # object is parsed once (a pod after its priority admission).
        raw = for_new_object(raw, self._clock(), self._rand, as_given=not self.validate_names)
        raw = self._admitted(gated(raw, None, self.features), fv, warnings)
        if isinstance(raw, Mapping) and raw.get("kind") == "Pod":
            raw = self._admit_new(raw, None)  # a copy with its own spec
            if self.validate_names:  # (the conformance driver's pods stay as its cases wrote them)
                raw = gated_condition(created_pod_status(raw))
            share_containers(raw)
            obj = _validate(raw)
        else:
            raw = defaulted(raw)
            obj = _validate(raw)
            raw = self._admit_new(raw, obj)
        if obj.key in self._objects[obj.kind]:
            raise AlreadyExists(f'{obj.kind} "{obj.key}" already exists')
        return self._write(obj.kind, obj.key, raw, batch, client=True, make=obj.as_stored)

    def _replace(self, raw: Any, current: KubeObject, batch: TurnRecord, fv: str | None = None,
                 warnings: list[str] | None = None, keep_unchanged: bool = False) -> tuple[KubeObject, str]:
        """Replace `current`; with keep_unchanged an identical object is not written
        again (apply's "unchanged")."""
        raw = defaulted(for_replacement(self._admitted(gated(raw, current.raw, self.features), fv, warnings), current.raw,
                                        as_given=not self.validate_names))
        obj = _validate(raw)
        self._check_rv(obj, current, required=False)
        try:
            if isinstance(obj, PriorityClass) and isinstance(current, PriorityClass):
                check_priority_class(obj, current, self._priority_classes())
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None
        if obj.kind == "Pod":
            _refuse(validate_pod_update(raw, current.raw))
        _refuse(validate_dra_update(raw, current.raw) + update_errors(raw, current.raw))
        check_no_new_finalizers(raw, current.raw)
        if keep_unchanged and without_version(raw) == without_version(current.raw):
            return current, "unchanged"
        written = self._write(obj.kind, obj.key, raw, batch, client=True, make=obj.as_stored)
        if deleting(raw) and not finalizers(raw):  # the last finalizer removed: the object goes
            self._remove(obj.kind, obj.key, written, batch)
        return written, "configured"

    def _apply_one(self, index: int, raw: Any, batch: TurnRecord, fv: str | None = None,
                   warnings: list[str] | None = None) -> tuple[KubeObject, str]:
        current = self.stored(raw)  # earlier objects of the same Apply are already in place
        try:
            if current is None:
                return self._create(raw, batch, fv, warnings), "created"
            return self._replace(raw, current, batch, fv, warnings, keep_unchanged=True)
        except BadRequest as e:
            raise BadRequest(f"{describe(raw, index)}: {e.message}") from None
        except Invalid as e:
            raise Invalid(f"{describe(raw, index)}: {e.message}", e.field, e.causes) from None
        except TooLarge as e:
            raise TooLarge(f"{describe(raw, index)}: {e.message}") from None

    def _admission(self, raw: Any, fv: str | None, warnings: list[str] | None) -> Admission:
        """The object's one admission (actors.store.front_door.admission: decoded
        under fieldValidation `fv` for a client's manifest, as given for in-process
        writers when fv is None)."""
        return admission(raw, fv, self.validate_names, lambda ns: ns in self._objects["Namespace"], warnings)

    def _admitted(self, raw: Any, fv: str | None, warnings: list[str] | None) -> Any:
        """The manifest as the API server would keep it (null fields dropped), or Invalid
        naming the first field its kind's schema (framework.api.schema) refuses."""
        checked = self._admission(raw, fv, warnings)
        _refuse(checked.errors)
        return checked.raw

    def _remove_contents(self, namespace: str, batch: TurnRecord) -> None:
        """Deleting a namespace deletes what it holds (upstream's namespace controller
        does it after the namespace is marked Terminating; here, in the same commit)."""
        prefix = f"{namespace}/"
        for kind, cls in KINDS.items():
            if cls.namespaced:
                for key in [k for k in self._objects[kind] if k.startswith(prefix)]:
                    self._remove(kind, key, self._objects[kind][key], batch)

    def _admit_new(self, raw: Any, obj: KubeObject | None) -> Any:
        """Priority admission and create-time validation; a pod (obj None: not parsed
        yet) comes back with its priority set."""
        try:
            if obj is None:
                raw = kueue_pod_defaults(admit_pod(raw, self._priority_classes()), self._objects["PodGroup"])
            elif isinstance(obj, PriorityClass):
                check_priority_class(obj, None, self._priority_classes())
        except ValidationError as e:
            raise Invalid(str(e), e.field) from None
        return raw

    def _priority_classes(self) -> dict[str, PriorityClass]:
        return {pc.name: pc for pc in self._objects["PriorityClass"].values() if isinstance(pc, PriorityClass)}

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

    @staticmethod
    def _check_rv(obj: KubeObject, current: KubeObject | None, required: bool) -> None:
        want = obj.meta.resource_version
        if not want and not required:
            return
        have = current.meta.resource_version if current is not None else ""
        if want != have:
            raise Conflict(f'Operation cannot be fulfilled on {obj.kind} "{obj.key}": '
                           "the object has been modified; please apply your changes to the latest version and try again")

    def _write(self, kind: str, key: str, raw: dict[str, Any], batch: TurnRecord, *, client: bool = False,
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

    def _remove(self, kind: str, key: str, current: KubeObject, batch: TurnRecord) -> None:
        self._rv += 1
        del self._objects[kind][key]
        self._sorted_keys.pop(kind, None)
        batch.undo.append((kind, key, current))
        batch.writes.append(Write(kind=kind, key=key, raw=None, resource_version=self._rv))
        batch.events.append(WatchEvent("DELETED", kind, current, current, self._rv))
        batch.sizes.append(DELETE_WEIGHT)
