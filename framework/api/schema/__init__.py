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

from dataclasses import dataclass, field
from typing import Any

from framework.api.errors import ValidationError
from framework.api.groups import kind_key
from framework.api.schema.plain import NotFinite, plain_copy, too_deep, without_nulls
from framework.api.schema.registry import SCHEMAS, Unknown, schema_errors, schema_of
from framework.api.schema.types import Ctx


def validate_object(raw: Any, strict: bool = True, semantic: bool = True) -> list[ValidationError]:
    """Every error in `raw` by its kind's schema ([] for a kind without one: parsing
    refuses unknown kinds). strict=False keeps types, ranges, enums and quantities and
    skips name formats and strict-only required fields (the conformance driver's mode);
    semantic=False as well keeps only shapes (objects loaded from the backend; see
    framework.api.schema.types)."""
    if not isinstance(raw, dict):
        return [ValidationError("", "object must be a map")]
    deep = too_deep(raw, "")
    if deep is not None and not isinstance(deep, NotFinite):
        return [deep]
    return _with_not_finite(schema_errors(raw, kind_key(raw), strict, semantic), deep)


def _with_not_finite(errors: list[ValidationError], deep: ValidationError | None) -> list[ValidationError]:
    """A NaN or infinity is refused; the field's own rule names it in its words first
    when it has one (a quantity's syntax, an integer's type)."""
    return errors or ([deep] if deep is not None else [])


@dataclass(slots=True)
class SchemaVerdict:
    """One object admitted: `raw` is a copy without its null fields (and, when unknown
    fields were looked for, without those), its keys and short strings interned;
    `errors` what its kind's schema finds wrong with it; `unknown` the paths of the
    fields its kind's closed objects do not know, sorted (kube-apiserver's strict
    decoding names them in that order)."""

    raw: Any
    errors: list[ValidationError]
    unknown: list[str] = field(default_factory=list)


def admit(raw: Any, strict: bool = True, semantic: bool = True, unknown: bool = False) -> SchemaVerdict:
    """`raw` admitted (admit_as), its kind key read from it."""
    return admit_as(kind_key(raw), raw, strict, semantic, unknown)


def admit_as(key: str | None, raw: Any, strict: bool = True, semantic: bool = True,
             unknown: bool = False, proven: Any = None) -> SchemaVerdict:
    """`raw`, a manifest of kind key `key` (decided once by the caller: kind_key), admitted
    in one plain-JSON copy (framework.api.schema.plain: nulls dropped, nesting and JSON
    values checked, nothing after recurses into a value too deep) and one walk of its
    kind's schema (registry), which finds the errors and, with `unknown`, the unknown
    fields; those are dropped from the copy (a NaN only they held is then no error).
    `proven`: a top-level value of `raw` (by identity) already admitted in this mode,
    clean and without unknown fields (a pod's spec: actors/store/pod_specs.py): kept
    as it is, and passed unwalked by the Remembered rule it meets."""
    if not isinstance(raw, dict):
        return SchemaVerdict(raw, [ValidationError("", "object must be a map")])
    copy, deep = plain_copy(raw, proven)
    if deep is not None and not isinstance(deep, NotFinite):
        return SchemaVerdict(raw, [deep])
    found: Unknown | None = [] if unknown else None
    errors = schema_errors(copy, key, strict, semantic, found, proven)
    paths: list[str] = []
    if found:
        found.sort(key=lambda u: u[0])
        for path, holder, name in found:
            holder.pop(name, None)
            paths.append(path)
        if deep is not None:
            deep = too_deep(copy, "")
    return SchemaVerdict(copy, errors or ([deep] if deep is not None else []), paths)


def admitted(raw: Any, strict: bool = True, semantic: bool = True) -> tuple[Any, list[ValidationError]]:
    """`raw` without its null fields, and what its kind's schema finds wrong with that
    (admit without looking for unknown fields)."""
    a = admit(raw, strict, semantic)
    return a.raw, a.errors


def unknown_fields(raw: dict[str, Any]) -> Unknown:
    """Every field of `raw` its kind's closed objects do not know, in document order
    within each object: (path as kube-apiserver names it, the map holding it, key)."""
    schema = schema_of(kind_key(raw), raw.get("apiVersion"))
    if schema is None:
        return []
    ctx = Ctx(strict=False, semantic=False, unknown=[])
    schema.check(raw, "", ctx)
    return ctx.unknown or []


__all__ = ["SCHEMAS", "SchemaVerdict", "admit", "admit_as", "admitted", "unknown_fields", "validate_object",
           "without_nulls"]
