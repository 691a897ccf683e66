"""Comparing a case's `expect` with the `actual` the real run produced."""
from __future__ import annotations

from typing import Any

_UNORDERED = {"preempted", "unschedulablePlugins", "victims"}
# Keys of `expect` whose actual value is reported under another name (CASE_SCHEMA.md).
_ACTUAL_KEY = {"bindingAnyOf": "bindings", "nominatedAnyOf": "nominated"}


def _status_matches(exp: dict[str, Any], act: dict[str, Any] | None) -> bool:
    if act is None:
        return False
    for k, v in exp.items():
        if k == "messageContains":
            if v not in ", ".join(act.get("reasons") or []):
                return False
            continue
        if k not in act and k == "reasons" and not v:
            continue
        if act.get(k) != v:
            return False
    return True


def _deep(exp: Any, act: Any, key: str = "") -> bool:
    if isinstance(exp, dict):
        if not isinstance(act, dict):
            return False
        return all(_deep(v, act.get(k), k) for k, v in exp.items())
    if isinstance(exp, list) and key in _UNORDERED:
        return isinstance(act, list) and sorted(map(str, exp)) == sorted(map(str, act))
    return exp == act


def mismatches(expect: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Human-readable differences; empty when the case passes."""
    out: list[str] = []
    for key, exp in expect.items():
        act = actual.get(_ACTUAL_KEY.get(key, key))
        ok: bool
        if key == "filter":
            ok = isinstance(act, dict) and all(_status_matches(v, act.get(n)) for n, v in exp.items())
        elif key in ("preFilter", "preScore", "permit", "postFilter"):
            ok = isinstance(act, dict) and _status_matches(exp, act)
        elif key == "bindings":
            ok = isinstance(act, dict) and all(
                (act.get(p) is not None) if node == "*" else act.get(p) == node for p, node in exp.items()
            )
        elif key in ("bindingAnyOf", "nominatedAnyOf"):
            ok = isinstance(act, dict) and all(act.get(p) in nodes for p, nodes in exp.items())
        elif key == "oneOf":
            ok = act in exp
        elif key == "fitError":
            ok = _fit_error_matches(exp, act)
        else:
            ok = _deep(exp, act, key)
        if not ok:
            out.append(f"{key}: expected {exp!r}, got {act!r}")
    return out


def _fit_error_matches(exp: dict[str, Any], act: Any) -> bool:
    if not isinstance(act, dict):
        return False
    for k, v in exp.items():
        if k == "nodeStatuses":
            statuses = act.get("nodeStatuses") or {}
            for node, st in v.items():
                targets = list(statuses) if node == "*" else [node]
                if node == "*" and not targets:
                    return False
                if not all(_status_matches(st, statuses.get(t)) for t in targets):
                    return False
        elif k == "unschedulablePlugins":
            if sorted(v) != sorted(act.get(k) or []):
                return False
        elif act.get(k) != v:
            return False
    return True
