"""Comparing a Kueue case's `expected` with what the run produced, as CASE_SCHEMA.md
says: quantities by value, condition lists and victims as sets, share nodes by name."""
from __future__ import annotations

from typing import Any

from framework.api.quantity import parse_quantity_text
from conformance.compare import _deep

_QUANTITY_MAPS = {"resourceUsage", "requests", "usage"}


def _qty(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return str(parse_quantity_text(v))
        except ValueError:
            return v
    return v


def _norm(v: Any, key: str = "") -> Any:
    if isinstance(v, dict):
        if key in _QUANTITY_MAPS:
            return {k: (_norm(x, k) if isinstance(x, dict) else _qty(x)) for k, x in v.items()}
        return {k: _norm(x, k) for k, x in v.items()}
    if isinstance(v, list):
        items = [_norm(x, key) for x in v]
        if items and all(isinstance(x, dict) and "type" in x and "status" in x for x in items):
            return sorted(items, key=lambda c: c["type"])  # a condition list is a set
        if key == "victims":
            return sorted(items, key=lambda x: str(x.get("workload")))
        if key == "nodes":
            return sorted(items, key=lambda x: (str(x.get("kind")), str(x.get("name"))))
        return items
    return v


def kueue_mismatches(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    out = []
    for key, exp in expected.items():
        e, a = _norm(exp, key), _norm(actual.get(key), key)
        if isinstance(e, list):
            ok = isinstance(a, list) and len(a) == len(e) and all(_deep(x, y) for x, y in zip(e, a))
        elif isinstance(e, dict) and key in ("assignments", "left", "inadmissibleLeft"):
            ok = isinstance(a, dict) and set(a) == set(e) and _deep(e, a)  # the whole map, nothing extra
        else:
            ok = _deep(e, a, key)
        if not ok:
            out.append(f"{key}: expected {exp!r}, got {actual.get(key)!r}")
    return out
