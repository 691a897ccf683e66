"""What kube-apiserver checks of each kind ksched stores, as one declarative schema
per kind (framework.api.schema.pod, .kinds; the rules in .types).

`validate_object(raw)` returns every error in field.ErrorList form. `admit(raw)` is
the one admission of an object, on every write path (the store's, for every front
door) and in `explain`: in one copy and one walk of the schema, the object as the
API server's decode and encode leave it (a null field is a field left out; with
`unknown`, the fields its kind does not have are found and dropped, for the
decode stage's fieldValidation), with its errors. The store refuses an object with
any (Invalid, naming the first) before it parses or stores it, and quarantines a
stored object with any when it loads. `admitted(raw)` is admit's copy and errors.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from math import isfinite
from sys import intern
from typing import Any

from framework.api.errors import ValidationError
from framework.api.schema import kinds
from framework.api.schema.common import TYPE_META
from framework.api.schema.dra_claim import RESOURCE_CLAIM, RESOURCE_CLAIM_TEMPLATE
from framework.api.schema.dra_devices import DEVICE_CLASS, RESOURCE_SLICE
from framework.api.schema.event import EVENT
from framework.api.schema.kueue import kueue_schema
from framework.api.schema.pod import POD
from framework.api.schema import workload
from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY, kind_key
from framework.api.schema.types import MAX_DEPTH, Ctx, NotFinite, Obj, too_deep, type_error

_SCHEMAS: dict[str, Obj] = {
    "Pod": POD,
    "Node": kinds.NODE,
    "PodGroup": kinds.POD_GROUP,
    "PriorityClass": kinds.PRIORITY_CLASS,
    "Namespace": kinds.NAMESPACE,
    "Service": kinds.SERVICE,
    "ReplicationController": kinds.REPLICATION_CONTROLLER,
    "ReplicaSet": kinds.REPLICA_SET,
    "StatefulSet": kinds.STATEFUL_SET,
    "PodDisruptionBudget": kinds.POD_DISRUPTION_BUDGET,
    "PersistentVolume": kinds.PERSISTENT_VOLUME,
    "PersistentVolumeClaim": kinds.PERSISTENT_VOLUME_CLAIM,
    "StorageClass": kinds.STORAGE_CLASS,
    "CSINode": kinds.CSI_NODE,
    "CSIDriver": kinds.CSI_DRIVER,
    "VolumeAttachment": kinds.VOLUME_ATTACHMENT,
    "Event": EVENT,
    # DRA (resource.k8s.io/v1)
    "DeviceClass": DEVICE_CLASS,
    "ResourceSlice": RESOURCE_SLICE,
    "ResourceClaim": RESOURCE_CLAIM,
    "ResourceClaimTemplate": RESOURCE_CLAIM_TEMPLATE,
    WORKLOAD_KEY: workload.WORKLOAD,
    POD_GROUP_KEY: workload.POD_GROUP,
}
# Kinds whose schema lists every top-level field upstream's type has (metadata, spec,
# status; a PriorityClass's value...): their top level is closed, so a misspelled
# `spec` or `metdata` is an unknown field. StorageClass keeps an open top level.
_CLOSED_TOP = frozenset(_SCHEMAS) - {"StorageClass"}
SCHEMAS: dict[str, Obj] = {
    kind: replace(obj, more=(obj.more or frozenset()) | TYPE_META) if kind in _CLOSED_TOP else obj
    for kind, obj in _SCHEMAS.items()
}


def validate_object(raw: Any, strict: bool = True, semantic: bool = True) -> list[ValidationError]:
    """Every error in `raw` by its kind's schema ([] for a kind without one: parsing
    refuses unknown kinds). strict=False keeps types, ranges, enums and quantities and
    skips name formats and strict-only required fields (the conformance driver's mode);
    semantic=False as well keeps only shapes (objects loaded from the backend; see
    framework.api.schema.types)."""
    if not isinstance(raw, dict):
        return [ValidationError("", "object must be a map")]
    return _shapes_then_schema(raw, strict, semantic)


def _shapes_then_schema(raw: dict[str, Any], strict: bool, semantic: bool) -> list[ValidationError]:
    deep = too_deep(raw, "")
    if deep is not None and not isinstance(deep, NotFinite):
        return [deep]
    return _with_not_finite(_by_schema(raw, strict, semantic), deep)


def _with_not_finite(errors: list[ValidationError], deep: ValidationError | None) -> list[ValidationError]:
    """A NaN or infinity is refused; the field's own rule names it in its words first
    when it has one (a quantity's syntax, an integer's type)."""
    return errors or ([deep] if deep is not None else [])


def _type_meta(raw: dict[str, Any]) -> list[ValidationError]:
    """apiVersion and kind, when given, are strings (TypeMeta), whatever the kind."""
    return [type_error(f, raw[f], "string") for f in ("apiVersion", "kind")
            if raw.get(f) is not None and not isinstance(raw[f], str)]


def _by_schema(raw: dict[str, Any], strict: bool, semantic: bool = True,
               unknown: list[tuple[str, dict[str, Any], str]] | None = None) -> list[ValidationError]:
    wrong = _type_meta(raw)
    if wrong:
        return wrong
    schema = _schema_of(raw)
    if schema is None:
        return []
    ctx = Ctx(strict=strict, semantic=semantic, unknown=unknown)
    schema.check(raw, "", ctx)
    return ctx.errors


def _schema_of(raw: dict[str, Any]) -> Obj | None:
    """The schema of `raw`'s kind (Kueue's: of the version it is written in)."""
    kind = kind_key(raw)
    if kind is None:
        return None
    return SCHEMAS.get(kind) or kueue_schema(kind, raw.get("apiVersion"))


@dataclass(slots=True)
class Admission:
    """One object admitted: `raw` is a copy without its null fields (and, when unknown
    fields were looked for, without those), its keys and short strings interned;
    `errors` what its kind's schema finds wrong with it; `unknown` the paths of the
    fields its kind's closed objects do not know, sorted (kube-apiserver's strict
    decoding names them in that order)."""

    raw: Any
    errors: list[ValidationError]
    unknown: list[str] = field(default_factory=list)


def admit(raw: Any, strict: bool = True, semantic: bool = True, unknown: bool = False) -> Admission:
    """`raw` admitted in one copy and one walk of its kind's schema. The copy checks
    nesting and JSON values as it goes (nothing after recurses into a value too
    deep); the walk finds the errors and, with `unknown`, the unknown fields, which
    are dropped from the copy (a NaN only they held is then no error)."""
    if not isinstance(raw, dict):
        return Admission(raw, validate_object(raw, strict, semantic))
    deep: ValidationError | None = None
    try:
        copy = _json_copy(raw, 0)
    except _NotPlainJson:  # too deep, not JSON, a NaN: name it as too_deep does
        deep = too_deep(raw, "")
        if deep is not None and not isinstance(deep, NotFinite):
            return Admission(raw, [deep])
        copy = without_nulls(raw)
    found: list[tuple[str, dict[str, Any], str]] | None = [] if unknown else None
    errors = _by_schema(copy, strict, semantic, found)
    paths: list[str] = []
    if found:
        found.sort(key=lambda u: u[0])
        for path, holder, key in found:
            holder.pop(key, None)
            paths.append(path)
        if deep is not None:
            deep = too_deep(copy, "")
    return Admission(copy, _with_not_finite(errors, deep), paths)


def admitted(raw: Any, strict: bool = True, semantic: bool = True) -> tuple[Any, list[ValidationError]]:
    """`raw` without its null fields, and what its kind's schema finds wrong with that
    (admit without looking for unknown fields)."""
    a = admit(raw, strict, semantic)
    return a.raw, a.errors


def unknown_fields(raw: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    """Every field of `raw` its kind's closed objects do not know, in document order
    within each object: (path as kube-apiserver names it, the map holding it, key)."""
    schema = _schema_of(raw)
    if schema is None:
        return []
    ctx = Ctx(strict=False, semantic=False, unknown=[])
    schema.check(raw, "", ctx)
    return ctx.unknown or []


class _NotPlainJson(Exception):
    """_json_copy met something its fast path does not take (too_deep says what)."""


def _json_copy(value: dict[str, Any], depth: int) -> dict[str, Any]:
    """without_nulls for a map of plain JSON (exact str, int, bool, finite float,
    dict, list) nested at most MAX_DEPTH deep; _NotPlainJson for anything else."""
    if depth >= MAX_DEPTH and value:
        raise _NotPlainJson
    out: dict[str, Any] = {}
    for k, v in value.items():
        if type(k) is not str:
            raise _NotPlainJson
        t = type(v)
        if t is str:
            out[intern(k)] = intern(v) if len(v) <= _INTERN_MAX else v
        elif v is None:
            continue
        elif t is dict:
            out[intern(k)] = _json_copy(v, depth + 1)
        elif t is list:
            out[intern(k)] = _json_list(v, depth + 1)
        elif t is int or t is bool or (t is float and isfinite(v)):
            out[intern(k)] = v
        else:
            raise _NotPlainJson
    return out


def _json_list(value: list[Any], depth: int) -> list[Any]:
    if depth >= MAX_DEPTH and value:
        raise _NotPlainJson
    out: list[Any] = []
    for v in value:
        t = type(v)
        if t is str:
            out.append(intern(v) if len(v) <= _INTERN_MAX else v)
        elif t is dict:
            out.append(_json_copy(v, depth + 1))
        elif t is list:
            out.append(_json_list(v, depth + 1))
        elif v is None or t is int or t is bool or (t is float and isfinite(v)):
            out.append(v)  # a null item stays, as in without_nulls
        else:
            raise _NotPlainJson
    return out


def without_nulls(value: Any) -> Any:
    """`value` with every null-valued object field dropped, recursively (a null list
    item stays: the schema refuses it where it matters). Keys and short strings are
    interned: what a store keeps is this copy, and objects decoded one by one (a
    backend's JSON) would otherwise each hold their own "metadata", "default", ...
    strings."""
    if isinstance(value, dict):
        return {intern(k) if type(k) is str else k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    if type(value) is str and len(value) <= _INTERN_MAX:
        return intern(value)  # namespaces, kinds, enums, node names, timestamps: one copy each
    return value


_INTERN_MAX = 64


__all__ = ["SCHEMAS", "Admission", "admit", "admitted", "unknown_fields", "validate_object", "without_nulls"]
