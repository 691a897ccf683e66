"""The one plain-JSON pass of an object the store admits: in one walk, a copy with
every null-valued object field dropped, keys and short strings interned, its nesting
and its JSON values checked (`plain_copy`). What the fast walk does not take (too
deep, not JSON, a NaN) is named as `too_deep` names it, and a NaN or an infinity
alone is handed on (NotFinite): the kind's own rule for that field speaks first
(framework.api.schema.admit). No I/O; never changes its input.
"""
from __future__ import annotations

from math import isfinite
from sys import intern
from typing import Any

from framework.api.errors import ValidationError
from framework.api.schema.types import MAX_DEPTH, join, type_error
from framework.api.validation import invalid


def plain_copy(raw: dict[str, Any], proven: Any = None) -> tuple[dict[str, Any], ValidationError | None]:
    """(`raw` without its null fields, None) for plain JSON nested at most MAX_DEPTH
    deep. Otherwise the first thing wrong: with `raw` itself when it refuses the
    object (too deep, not JSON), with the copy when it is a NaN or an infinity
    (NotFinite: the schema's walk may name the field in its own words first).
    `proven`: a top-level value of `raw` already admitted (plain JSON, no nulls, its
    keys interned), kept in the copy as it is, in its place, not copied."""
    try:
        return _keeping(_json_copy, raw, proven), None
    except _NotPlainJson:  # too deep, not JSON, a NaN: name it as too_deep does
        deep = too_deep(raw, "")
        if deep is not None and not isinstance(deep, NotFinite):
            return raw, deep
        return _keeping(without_nulls, raw, proven), deep


def _keeping(copy: Any, raw: dict[str, Any], proven: Any) -> dict[str, Any]:
    """copy(raw, ...) with the top-level value `proven` (by identity) left uncopied."""
    if proven is None:
        return copy(raw, 0) if copy is _json_copy else copy(raw)
    if copy is _json_copy:
        return _json_copy(raw, 0, proven)
    rest = {k: v for k, v in raw.items() if v is not proven}
    done = _json_copy(rest, 0) if copy is _json_copy else copy(rest)
    return {intern(k): (v if v is proven else done[k]) for k, v in raw.items() if v is proven or k in done}


JSON_SCALARS = (str, int, float, bool)
NOT_FINITE_MSG = "must be a finite number (JSON has no NaN or Infinity)"


class NotFinite(ValidationError):
    """A NaN or an infinity somewhere in an object: refused, but a kind's own rule for
    that field (a quantity's syntax, an integer's type) speaks first when it has one."""


def _not_finite(v: Any) -> bool:
    return isinstance(v, float) and not isfinite(v)


def too_deep(value: Any, path: str, limit: int = MAX_DEPTH) -> ValidationError | None:
    """The first place `value` nests deeper than `limit` or holds something JSON
    cannot (bytes, a non-string key, NaN or an infinity): such a value could not be
    stored, or not be written back out as JSON. Iterative: a value nested thousands
    deep must not exhaust the stack here or anywhere after. Paths are only built once
    something is wrong."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            if depth >= limit and v:
                return invalid(_path_to_depth(value, path, limit + 1), "...", f"must not nest more than {limit} levels deep")
            if not all(isinstance(k, str) for k in v):
                return _not_json(value, path)
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            if depth >= limit and v:
                return invalid(_path_to_depth(value, path, limit + 1), "...", f"must not nest more than {limit} levels deep")
            stack.extend((x, depth + 1) for x in v)
        elif isinstance(v, float):
            if not isfinite(v):
                return _not_json(value, path)
        elif v is not None and not isinstance(v, JSON_SCALARS):
            return _not_json(value, path)
    return None


def _not_json(value: Any, path: str) -> ValidationError:
    """The error for the first value or key (depth-first) that JSON cannot hold."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        v, at = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str):
                    return type_error(at, k, "string")
                stack.append((x, join(at, k)))
        elif isinstance(v, list):
            stack.extend((x, f"{at}[{i}]") for i, x in enumerate(v))
        elif _not_finite(v):
            err = invalid(at, "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity"), NOT_FINITE_MSG)
            return NotFinite(err.field, err.detail)
        elif v is not None and not isinstance(v, JSON_SCALARS):
            return invalid(at, repr(v)[:64], "must be a JSON value")
    return invalid(path, "...", "must be a JSON value")


def _path_to_depth(value: Any, path: str, depth: int) -> str:
    """The path of the first value found `depth` levels down (depth-first)."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        v, at, d = stack.pop()
        if d == depth:
            return at
        if isinstance(v, dict):
            stack.extend((x, join(at, str(k)), d + 1) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, f"{at}[{i}]", d + 1) for i, x in enumerate(v))
    return path


_NO_VALUE = object()  # _json_copy's `proven` when nothing is kept (no JSON value is it)


class _NotPlainJson(Exception):
    """_json_copy met something its fast path does not take (too_deep says what)."""


def _json_copy(value: dict[str, Any], depth: int, proven: Any = _NO_VALUE) -> dict[str, Any]:
    """without_nulls for a map of plain JSON (exact str, int, bool, finite float,
    dict, list) nested at most MAX_DEPTH deep; _NotPlainJson for anything else.
    `proven`: a value of `value` (by identity) kept as it is, in its place (_keeping)."""
    if depth >= MAX_DEPTH and value:
        raise _NotPlainJson
    out: dict[str, Any] = {}
    for k, v in value.items():
        if type(k) is not str:
            raise _NotPlainJson
        t = type(v)
        if v is proven:
            out[intern(k)] = v
        elif t is str:
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
