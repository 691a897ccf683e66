"""What every typed object shares: ObjectMeta, the KubeObject base, and the field
readers the object modules (objects.py, pod.py, storage.py) parse with, each naming
the field it rejects (underscored: they are private to those modules)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Callable

from framework.api.errors import ValidationError
from framework.api.timeutil import parse_time

DEFAULT_NAMESPACE = "default"

_NONE: tuple[Any, ...] = ()  # every empty sequence of a parsed object
_NO_MAP: Mapping[str, Any] = MappingProxyType({})  # and every empty map read only


def _map(raw: Mapping[str, Any], key: str, field: str) -> Mapping[str, Any]:
    v = raw.get(key)
    if type(v) is dict:  # the usual case: no ABC check
        return v
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise ValidationError(f"{field}{key}" if not field else f"{field}.{key}", "must be an object")
    return v


def _list(raw: Mapping[str, Any], key: str, field: str) -> Sequence[Any]:
    v = raw.get(key)
    if v is None:
        return _NONE
    if not isinstance(v, list):
        raise ValidationError(f"{field}.{key}" if field else key, "must be a list")
    return v


def _str_map(raw: Mapping[str, Any], key: str, field: str) -> dict[str, str]:
    """The map itself, checked: raw dicts are never changed, so it is not copied."""
    v = _map(raw, key, field)
    if not v:
        return _NO_MAP  # type: ignore[return-value]
    for k, val in v.items():
        if not isinstance(k, str) or not isinstance(val, str):
            raise ValidationError(f"{field}.{key}", "must be a map of strings to strings")
    return v if isinstance(v, dict) else dict(v)


def _opt_int(raw: Mapping[str, Any], key: str, field: str) -> int | None:
    v = raw.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValidationError(f"{field}.{key}", "must be an integer")
    return v


def _str(raw: Mapping[str, Any], key: str, field: str, default: str = "") -> str:
    v = raw.get(key)
    if v is None:
        return default
    if not isinstance(v, str):
        raise ValidationError(f"{field}.{key}", "must be a string")
    return v


class ObjectMeta:
    __slots__ = ("name", "namespace", "uid", "labels", "annotations", "creation_timestamp",
                 "deletion_timestamp", "resource_version", "owner_references", "generate_name")

    def __init__(self, raw: Mapping[str, Any], namespaced: bool, require_name: bool = True) -> None:
        # Each field read inline when it has its usual type (an exact str, dict, list or
        # nothing); anything else goes through the reader, which gives the same value or
        # the same error: the same fields, in the same order, as reading each by its reader.
        meta = raw.get("metadata")
        if type(meta) is not dict:
            meta = _map(raw, "metadata", "")
        get = meta.get
        v = get("name")
        self.name = v if type(v) is str else _str(meta, "name", "metadata")
        if require_name and not self.name:
            raise ValidationError("metadata.name", "is required")
        v = get("generateName")
        self.generate_name = v if type(v) is str else _str(meta, "generateName", "metadata")
        if namespaced:
            v = get("namespace")
            self.namespace = (v if type(v) is str else _str(meta, "namespace", "metadata", DEFAULT_NAMESPACE)) \
                or DEFAULT_NAMESPACE
        else:
            self.namespace = ""
        v = get("uid")
        self.uid = v if type(v) is str else _str(meta, "uid", "metadata")
        v = get("labels")
        self.labels = _NO_MAP if v is None or (type(v) is dict and not v) \
            else _str_map(meta, "labels", "metadata")  # type: ignore[assignment]
        v = get("annotations")
        self.annotations = _NO_MAP if v is None or (type(v) is dict and not v) \
            else _str_map(meta, "annotations", "metadata")  # type: ignore[assignment]
        ts = get("creationTimestamp")
        self.creation_timestamp = parse_time(ts, "metadata.creationTimestamp") if ts is not None else 0
        dts = get("deletionTimestamp")
        self.deletion_timestamp = parse_time(dts, "metadata.deletionTimestamp") if dts is not None else None
        rv = get("resourceVersion")
        self.resource_version = str(rv) if rv is not None else ""
        v = get("ownerReferences")
        self.owner_references = _NONE if v is None else v if type(v) is list else _list(meta, "ownerReferences", "metadata")

    @classmethod
    def made(cls, *, name: str, namespace: str, uid: str, creation_timestamp: int) -> "ObjectMeta":
        """The metadata parsing `{name, namespace, uid, creationTimestamp}` gives (no labels,
        annotations, owners, generateName nor deletion; no resourceVersion yet), for an
        object the server makes itself and knows the fields of."""
        meta = object.__new__(cls)
        meta.name, meta.generate_name, meta.namespace, meta.uid = name, "", namespace, uid
        meta.labels = meta.annotations = _NO_MAP  # type: ignore[assignment]
        meta.creation_timestamp, meta.deletion_timestamp = creation_timestamp, None
        meta.resource_version, meta.owner_references = "", _NONE
        return meta

    def with_resource_version(self, rv: Any) -> "ObjectMeta":
        """A copy of this metadata with another metadata.resourceVersion (the rest parsed once)."""
        copy = object.__new__(ObjectMeta)
        (copy.name, copy.namespace, copy.uid, copy.labels, copy.annotations, copy.creation_timestamp,
         copy.deletion_timestamp, copy.owner_references, copy.generate_name) = (
            self.name, self.namespace, self.uid, self.labels, self.annotations, self.creation_timestamp,
            self.deletion_timestamp, self.owner_references, self.generate_name)
        copy.resource_version = str(rv) if rv is not None else ""
        return copy


def slot_copier(cls: type, slots: Sequence[str]) -> Callable[[Any], Any]:
    """A function making a new `cls` with every one of `slots` taken from the given
    object: one assignment per slot, compiled once (a getattr/setattr loop over a
    Pod's 38 slots costs several times as much, and pods are copied at every assume
    and bind)."""
    lines = "".join(f"    c.{slot} = o.{slot}\n" for slot in slots)
    scope: dict[str, Any] = {"new": object.__new__, "cls": cls}
    exec(f"def copy(o):\n    c = new(cls)\n{lines}    return c\n", scope)  # noqa: S102 - names are slots
    return scope["copy"]


def slot_filler(slots: Sequence[str]) -> Callable[[Any, Any], None]:
    """A function setting each of `slots` on its first argument from its second (as
    slot_copier, on an object already made)."""
    lines = "".join(f"    c.{slot} = o.{slot}\n" for slot in slots)
    scope: dict[str, Any] = {}
    exec(f"def fill(c, o):\n{lines}", scope)  # noqa: S102 - names are slots
    return scope["fill"]


class KubeObject:
    """Base of the typed objects: `raw` is the JSON dict, `meta` the parsed metadata."""

    __slots__ = ("raw", "meta", "name", "namespace", "labels", "key", "uid")
    kind = ""
    namespaced = True

    def __init__(self, raw: Mapping[str, Any]) -> None:
        if type(raw) is not dict and not isinstance(raw, Mapping):
            raise ValidationError("", "object must be a map")
        self.raw: Mapping[str, Any] = raw
        meta = self.meta = ObjectMeta(raw, self.namespaced)
        # Plain attributes, not properties: the scheduler reads these per node per plugin.
        self.name: str = meta.name
        self.namespace: str = meta.namespace
        self.labels: dict[str, str] = meta.labels
        self.key: str = f"{meta.namespace}/{meta.name}" if self.namespaced else meta.name
        self.uid: str = meta.uid or self.key

    def as_stored(self, raw: Mapping[str, Any]) -> "KubeObject":
        """This object, just parsed from `raw` less its resourceVersion, as the store
        keeps it: `raw` is the same object with metadata.resourceVersion set (the one
        parsed field that depends on it). Only for an object no one else holds yet."""
        self.raw = raw
        rv = (raw.get("metadata") or {}).get("resourceVersion")
        self.meta.resource_version = str(rv) if rv is not None else ""
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key})"
