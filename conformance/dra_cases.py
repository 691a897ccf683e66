"""DRA CEL cases (incoming/dra/cel-cases.json): one selector expression against one device.

The run compiles the expression in the case's environment and evaluates it against the
case's device through framework/dra; what happened (match, compile or evaluation error)
is reported, and only then compared with `expect`."""
from __future__ import annotations

from typing import Any

from framework.dra.cel_selector import CELCompileError, CELEvalError, compile_selector, device_from_api

# Expected keys the runner does not model (none: cel-go's static cost estimate is
# framework/dra/cel_cost.py's and is compared as `estimatedMaxCost`).
UNMODELED_CEL_KEYS: tuple[str, ...] = ()


def is_cel_case(case: dict[str, Any]) -> bool:
    return "expression" in case and "device" in case and "env" in case


def run_cel_case(case: dict[str, Any]) -> dict[str, Any]:
    env = case.get("env") or {}
    device = case["device"]
    try:
        selector = compile_selector(case["expression"], bool(env.get("DRAConsumableCapacity")))
    except CELCompileError as e:
        return {"compileError": str(e)}
    out: dict[str, Any] = {"estimatedMaxCost": selector.estimated_cost}
    try:
        out["match"] = selector.matches(device_from_api(device.get("driver") or "", device))
    except CELEvalError as e:
        out["evalError"] = str(e)
    return out


def cel_mismatches(expect: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Differences between a CEL case's expect and the run; `...Contains` keys are substrings."""
    out: list[str] = []
    for key, exp in expect.items():
        if key in UNMODELED_CEL_KEYS:
            continue
        if key.endswith("Contains"):
            act = actual.get(key[: -len("Contains")])
            ok = isinstance(act, str) and exp in act
        else:
            act = actual.get(key)
            ok = act == exp
        if not ok:
            out.append(f"{key}: expected {exp!r}, got {actual!r}")
    if not any(k in expect for k in ("compileErrorContains",)) and "compileError" in actual:
        out.append(f"unexpected compile error: {actual['compileError']}")
    if not any(k in expect for k in ("evalErrorContains",)) and "evalError" in actual:
        out.append(f"unexpected evaluation error: {actual['evalError']}")
    return out
