"""The building blocks of the per-kind schemas: typed field rules that walk a JSON
value and collect field.Error-shaped ValidationErrors (no I/O, never raises).

A schema is a tree of rules (Str, Int, Bool, Quantity, Obj, ListOf, MapOf, ...);
`Obj` may carry cross-field rules (`checks`) for what upstream's validation.go checks
across fields (an operator and its values, requests against limits). Messages are
kube-apiserver's field.Error bodies:
`spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight:
Invalid value: "x": must be in the range 1-100`.

Three modes (`Ctx`): the API server's full rule set (strict, semantic) for client
writes; the conformance driver's (semantic only): upstream's test objects use names
such as "p_without_nominated_node" and pods without containers, so name and label
formats, `Obj.strict_required` fields and the checks that ask `ctx.strict` are
skipped; and shapes only (neither) for objects loaded from the backend: JSON types,
integer widths, quantities and nesting, what a stored object needs for the
scheduler to read it safely. Enums, ranges, required fields and cross-field rules
are not applied there, so an object an older version accepted keeps being served
(and its resources counted) even if its rules have since tightened.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any, Callable, Mapping, Protocol

import msgpack

from framework.api.errors import ValidationError
from framework.api.timeutil import parse_time
from framework.api.quantity import MAX_QUANTITY, QUANTITY_REGEX_MSG, parse_quantity_text
from framework.api.validation import duplicate, invalid, required, show

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
MAX_DEPTH = 64  # nesting below an object's root; deeper is refused before any other rule runs
# A quantity's scheduler value must fit int64: Value() for most resources (MAX_QUANTITY),
# MilliValue() for cpu.
MAX_MILLI_QUANTITY = MAX_QUANTITY / 1000


@dataclass(slots=True)
class Ctx:
    strict: bool = True  # names, label formats, strict_required fields
    semantic: bool = True  # enums, ranges, required fields, cross-field checks
    errors: list[ValidationError] = field(default_factory=list)
    # When a list, every field a closed Obj does not know: (path, the map holding it, its key).
    unknown: list[tuple[str, dict[str, Any], str]] | None = None
    # A value the caller proved clean in this mode (its write chain's memo of pod specs,
    # actors/store/pod_specs.py): the Remembered rule it meets passes it unwalked.
    proven: Any = None

    def add(self, err: ValidationError) -> None:
        self.errors.append(err)


class Rule(Protocol):
    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        """Append to ctx.errors what is wrong with `value` at `path` (value is not None)."""


def type_error(path: str, value: Any, type_name: str) -> ValidationError:
    return invalid(path, value, f"must be of type {type_name}")


def unsupported(path: str, value: Any, supported: tuple[str, ...]) -> ValidationError:
    """field.NotSupported."""
    listed = ", ".join(f'"{s}"' for s in supported)
    return ValidationError(path, f"Unsupported value: {show(value)}: supported values: {listed}")


NameCheck = Callable[[str], list[str]]


@dataclass(frozen=True, slots=True)
class Any_:
    """A value ksched keeps but does not read: any JSON."""

    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        return None


@dataclass(frozen=True, slots=True)
class Str:
    enum: tuple[str, ...] = ()
    fmt: NameCheck | None = None  # upstream's IsDNS1123Label etc.; strict only
    allow_empty_fmt: bool = True  # "" skips fmt (an optional name left empty)
    enum_msg: str = ""  # upstream's Invalid text for a value outside `enum` (else NotSupported)

    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        if not isinstance(value, str):
            ctx.add(type_error(path, value, "string"))
            return
        if self.enum and ctx.semantic and value not in self.enum:
            ctx.add(invalid(path, value, self.enum_msg) if self.enum_msg else unsupported(path, value, self.enum))
        if self.fmt is not None and ctx.strict and (value or not self.allow_empty_fmt):
            for msg in self.fmt(value):
                ctx.add(invalid(path, value, msg))


@dataclass(frozen=True, slots=True)
class Int:
    bits: int = 32
    lo: int | None = None
    hi: int | None = None
    range_msg: str = ""  # upstream's wording for lo/hi, e.g. "must be in the range 1-100"

    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        lo, hi = INT32 if self.bits == 32 else INT64
        if isinstance(value, bool) or not isinstance(value, int):
            # With a stated range, a value of the wrong type is answered with the range
            # ("weight: Invalid value: \"x\": must be in the range 1-100").
            ctx.add(invalid(path, value, self.range_msg) if self.range_msg else type_error(path, value, f"int{self.bits}"))
        elif not lo <= value <= hi:
            beyond_stated = ctx.semantic and ((value > hi and self.hi is not None) or (value < lo and self.lo is not None))
            ctx.add(invalid(path, value, self.range_msg or _range_msg(self.lo, self.hi)) if beyond_stated
                    else type_error(path, value, f"int{self.bits}"))
        elif ctx.semantic and ((self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi)):
            ctx.add(invalid(path, value, self.range_msg or _range_msg(self.lo, self.hi)))


def _range_msg(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"must be between {lo} and {hi}, inclusive"
    if lo is not None:
        return "must be greater than 0" if lo == 1 else f"must be greater than or equal to {lo}"
    return f"must be less than or equal to {hi}"


@dataclass(frozen=True, slots=True)
class Bool:
    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        if not isinstance(value, bool):
            ctx.add(type_error(path, value, "boolean"))


@dataclass(frozen=True, slots=True)
class Time:
    """An RFC 3339 timestamp (metav1.Time)."""

    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        if not isinstance(value, str):
            ctx.add(type_error(path, value, "string"))
            return
        try:
            parse_time(value, path)
        except (ValidationError, ValueError, OverflowError):
            ctx.add(invalid(path, value, "must be an RFC 3339 timestamp"))


@dataclass(frozen=True, slots=True)
class Quantity:
    """A resource.Quantity: a string in quantity syntax, or a JSON number decoded as
    Kubernetes decodes it (by its text). Its scheduler value must fit int64."""

    nonnegative: bool = True
    milli: bool = False  # cpu: MilliValue() must fit int64

    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        if type(value) is str or type(value) is int:  # the usual quantities: their verdict is cached
            for msg in _quantity_problems(value, self.nonnegative, self.milli):
                ctx.add(invalid(path, value, msg))
            return
        amount = quantity_value(value, path, ctx)
        if amount is not None:
            for msg in _amount_problems(amount, self.nonnegative, self.milli):
                ctx.add(invalid(path, value, msg))


@lru_cache(maxsize=4096)
def _quantity_problems(value: str | int, nonnegative: bool, milli: bool) -> tuple[str, ...]:
    """What is wrong with a quantity given as a string or an integer (Fraction
    arithmetic for every quantity of every pod cost more than the rest of its schema)."""
    try:
        amount = parse_quantity_text(value if isinstance(value, str) else repr(value))
    except ValueError:
        return (QUANTITY_REGEX_MSG,)
    return _amount_problems(amount, nonnegative, milli)


def _amount_problems(amount: Fraction, nonnegative: bool, milli: bool) -> tuple[str, ...]:
    problems = ["must be greater than or equal to 0"] if nonnegative and amount < 0 else []
    bound, shown = (MAX_MILLI_QUANTITY, f"{INT64[1]}m") if milli else (MAX_QUANTITY, str(INT64[1]))
    if abs(amount) > bound:
        problems.append(f"must be less than or equal to {shown}")
    return tuple(problems)


def quantity_value(value: Any, path: str, ctx: Ctx) -> Fraction | None:
    """The amount `value` stands for, or None after adding the error."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        ctx.add(type_error(path, value, "quantity"))
        return None
    if isinstance(value, float) and not math.isfinite(value):
        ctx.add(invalid(path, value, QUANTITY_REGEX_MSG))
        return None
    text = value if isinstance(value, str) else repr(value)
    try:
        return parse_quantity_text(text)
    except ValueError:
        ctx.add(invalid(path, value, QUANTITY_REGEX_MSG))
        return None


Check = Callable[[Mapping[str, Any], str, Ctx], None]


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


@dataclass(frozen=True, slots=True)
class Obj:
    """A JSON object with known fields. A null field is the field left out.

    `more` closes the object: the names of upstream's other fields of this type, which
    ksched keeps but does not read. A field of a closed object in neither `fields` nor
    `more` is unknown, collected when `ctx.unknown` is a list (kube-apiserver's strict
    decoding; the store then refuses, warns or drops it per fieldValidation). An open
    object (`more` None: types whose every upstream field is not listed here) keeps any
    extra field unread."""

    fields: Mapping[str, Rule]
    required: tuple[str, ...] = ()
    strict_required: tuple[str, ...] = ()  # required, except for the conformance driver
    checks: tuple[Check, ...] = ()
    required_detail: Mapping[str, str] = field(default_factory=dict)  # upstream's text after "Required value: "
    more: frozenset[str] | None = None
    _order: Mapping[str, int] = field(init=False, repr=False, compare=False)  # each field's place

    def __post_init__(self) -> None:
        missing = set(self.required + self.strict_required) - set(self.fields)
        assert not missing, f"required fields without a rule: {sorted(missing)}"
        object.__setattr__(self, "_order", {key: i for i, key in enumerate(self.fields)})

    def _to_visit(self, value: dict[str, Any], needed: tuple[str, ...]) -> list[str]:
        """The fields to check, in the schema's order: those `value` has and those it
        needs. An object usually sets few of its type's fields (a pod's spec, a
        container): this is cheaper than looking up every field it could have."""
        order = self._order
        keys = [k for k in value if k in order]
        for k in needed:
            if k not in value and k not in keys:
                keys.append(k)
        if len(keys) > 1:
            keys.sort(key=order.__getitem__)
        return keys

    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        if not isinstance(value, dict):
            ctx.add(type_error(path, value, "object"))
            return
        needed = (self.required if ctx.semantic else ()) + (self.strict_required if ctx.strict else ())
        fields = self.fields
        for key in self._to_visit(value, needed):  # in the schema's order, as upstream reports them
            rule = fields[key]
            v = value.get(key)
            if key in needed and _absent(v):
                ctx.add(required(join(path, key), self.required_detail.get(key, "")))
            elif v is not None:
                rule.check(v, join(path, key), ctx)
        if ctx.semantic:
            for extra in self.checks:
                extra(value, path, ctx)
        if ctx.unknown is not None and self.more is not None:
            for key in value:
                if key not in self.fields and key not in self.more:
                    ctx.unknown.append((join(path, str(key)), value, key))


def _absent(v: Any) -> bool:
    return v is None or v == "" or v == [] or v == {}


@dataclass(frozen=True, slots=True)
class ListOf:
    item: Rule
    unique_key: str = ""  # items must differ in this field (Duplicate value)
    max_items: int | None = None

    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        if not isinstance(value, list):
            ctx.add(type_error(path, value, "array"))
            return
        if self.max_items is not None and len(value) > self.max_items:
            ctx.add(ValidationError(path, f"Too many: {len(value)}: must have at most {self.max_items} items"))
        seen: set[Any] = set()
        for i, v in enumerate(value):
            at = f"{path}[{i}]"
            if v is None:
                ctx.add(type_error(at, v, _type_name(self.item)))
                continue
            self.item.check(v, at, ctx)
            if self.unique_key and ctx.semantic and isinstance(v, dict):
                k = v.get(self.unique_key)
                if isinstance(k, str) and k:
                    if k in seen:
                        ctx.add(duplicate(f"{at}.{self.unique_key}", k))
                    seen.add(k)


def _type_name(rule: Rule) -> str:
    return {Obj: "object", Str: "string", ListOf: "array", MapOf: "object", Bool: "boolean",
            Quantity: "quantity"}.get(type(rule), "int32" if isinstance(rule, Int) and rule.bits == 32 else "int64")


@dataclass(frozen=True, slots=True)
class MapOf:
    """A JSON object with free keys (labels, resource lists, parameters)."""

    value: Rule
    key: NameCheck | None = None  # strict only
    always_key: Callable[[str, str, Ctx], None] | None = None  # checked in every mode
    values_at_map: bool = False  # a bad value is reported at the map's path (ValidateLabels)

    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        if not isinstance(value, dict):
            ctx.add(type_error(path, value, "object"))
            return
        for k, v in value.items():
            if not isinstance(k, str):
                ctx.add(type_error(path, k, "string"))
                continue
            if self.key is not None and ctx.strict:
                for msg in self.key(k):
                    ctx.add(invalid(path, k, msg))
            if self.always_key is not None:
                self.always_key(k, path, ctx)
            at = path if self.values_at_map else f"{path}[{k}]"
            if v is None:
                ctx.add(type_error(at, v, _type_name(self.value)))
            else:
                self.value.check(v, at, ctx)


REMEMBERED = 4096  # clean verdicts a Remembered rule keeps (then it starts afresh)


class _ExactPacker(threading.local):
    """One reusable exact msgpack Packer per thread: msgpack.packb builds a Packer at
    every call (most of its cost on a small value); a Packer's output, and its buffer
    after a refused value (emptied), are a fresh one's."""

    def __init__(self) -> None:
        self.pack = msgpack.Packer(use_bin_type=True, strict_types=True).pack


_EXACT = _ExactPacker()


@dataclass(frozen=True, slots=True)
class Remembered:
    """`rule`, remembering the values it found nothing wrong with. Pods made from one
    template carry the same spec and labels: after the first, each is known clean by
    its exact encoding (msgpack with exact types: 1, 1.0 and True, a list and a
    tuple, never share one) instead of walked again. Only a clean verdict is kept,
    per mode (strict, semantic, unknown fields looked for): errors and unknown
    fields are always found by the walk, with their paths. The rule's verdict must
    depend on the value alone (every rule here does). A value that is the caller's
    proven one (Ctx.proven, by identity: a pod spec the write chain admitted before in
    the same mode) passes unwalked."""

    rule: Rule
    clean: dict[tuple[bool, bool, bool, bytes], None] = field(default_factory=dict, compare=False, repr=False)

    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        if value is ctx.proven and value is not None:
            return
        try:
            key = (ctx.strict, ctx.semantic, ctx.unknown is not None, _EXACT.pack(value))
        except (TypeError, ValueError, OverflowError):  # not plain JSON: walked, never remembered
            self.rule.check(value, path, ctx)
            return
        if key in self.clean:
            return
        errors, unknown = len(ctx.errors), len(ctx.unknown) if ctx.unknown is not None else 0
        self.rule.check(value, path, ctx)
        if len(ctx.errors) == errors and (ctx.unknown is None or len(ctx.unknown) == unknown):
            if len(self.clean) >= REMEMBERED:
                self.clean.clear()
            self.clean[key] = None


@dataclass(frozen=True, slots=True)
class IntOrString:
    """intstr.IntOrString (a PodDisruptionBudget's minAvailable, a port's targetPort)."""

    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        if isinstance(value, str):
            return
        Int(32).check(value, path, ctx)
