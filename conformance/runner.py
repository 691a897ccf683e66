"""`ksched conformance`: runs the translated upstream cases against the real code.

Each case is dispatched by its kind (CASE_SCHEMA.md): a scenario (`schedule`) runs
through the actor pipeline, a plugin case through the plugin alone, a function case
through that function. The runner builds everything from the case's inputs and only
then compares with `expect`; expectations never steer the run.
"""
from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

from framework.config import full_registry
from conformance.compare import mismatches
from conformance.coscheduling_cases import run_coscheduling_case
from conformance.dra_allocator_cases import allocator_mismatches, is_allocator_case, run_allocator_case
from conformance.dra_cases import cel_mismatches, is_cel_case, run_cel_case
from conformance.dra_plugin_cases import dra_plugin_mismatches, is_dra_plugin_case, run_dra_plugin_case
from conformance.functions import FUNCTIONS
from conformance.gang_cases import is_gang_case, run_gang_case
from conformance.hint_cases import run_hint_case
from conformance.kueue_cases import is_kueue_case, run_kueue_case
from conformance.kueue_compare import kueue_mismatches
from conformance.plugin_cases import CaseError, run_plugin_case
from conformance.preemption_cases import run_preemption_case
from conformance.group_queue_cases import is_group_queue_case, run_group_queue_case
from conformance.queue_cases import run_queue_case
from conformance.queue_compare import queue_mismatches
from conformance.scenarios import run_scenario_case

# Case kinds with a driver of their own.
_DRIVERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "scenario": run_scenario_case,
    "coscheduling": run_coscheduling_case,
    "preemption": run_preemption_case,
    "queue": lambda case: (run_group_queue_case if is_group_queue_case(case) else run_queue_case)(case),
    "hint": run_hint_case,
    "kueue": run_kueue_case,
    "dra-cel": run_cel_case,
    "dra-allocator": run_allocator_case,
    "dra-plugin": run_dra_plugin_case,
    "gang": run_gang_case,
}


def case_kind(case: dict[str, Any]) -> str:
    if is_kueue_case(case):
        return "kueue"
    if is_cel_case(case):
        return "dra-cel"
    if is_allocator_case(case):
        return "dra-allocator"
    if is_dra_plugin_case(case):
        return "dra-plugin"
    if "schedule" in case:
        return "scenario"
    if "hint" in case:
        return "hint"
    if is_gang_case(case):
        return "gang"
    if "queue" in case or case.get("function") == "isPodWorthRequeuing":
        return "queue"
    if case.get("plugin") == "Coscheduling" or case.get("function") == "checkClusterResource":
        return "coscheduling"
    if case.get("plugin") == "DefaultPreemption" or case.get("function") == "PodEligibleToPreemptOthers":
        return "preemption"
    if "function" in case:
        return "function"
    if "plugin" in case:
        return "plugin"
    return "unknown"


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """The case's `actual` (keys of its expect), or {"error": why} beside it."""
    kind = case_kind(case)
    if kind in _DRIVERS:
        return _DRIVERS[kind](case)
    if kind == "function":
        fn = FUNCTIONS.get(case["function"])
        if fn is None:
            raise CaseError(f"function {case['function']!r} is not known to the runner")
        return fn(case)
    if kind == "plugin":
        return run_plugin_case(case, full_registry())
    raise CaseError("case has neither schedule, plugin nor function")


class CaseFileError(ValueError):
    """A path that is not a readable case file or directory of them."""


def load_cases(paths: list[str]) -> list[dict[str, Any]]:
    files: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            files.extend(sorted(path.glob("*.json")))
        elif path.is_file():
            files.append(path)
        else:
            raise CaseFileError(f"{p}: no such file or directory")
    cases: list[dict[str, Any]] = []
    for f in files:
        try:
            data = json.loads(f.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CaseFileError(f"{f}: not a JSON case file: {e}") from None
        if isinstance(data, dict) and isinstance(data.get("cases"), list) and "kueueCommit" in data:
            data = [dict(c, name=c.get("id"), kueueCase=True) for c in data["cases"]]  # reported under its id
        for i, c in enumerate(data if isinstance(data, list) else [data]):
            if not isinstance(c, dict):
                raise CaseFileError(f"{f}: case [{i}] is not an object")
            c.setdefault("_file", f.name)
            cases.append(c)
    return cases


def evaluate(case: dict[str, Any]) -> tuple[dict[str, Any], str | None, list[str]]:
    """(actual, error, mismatches) for one case."""
    kueue = case_kind(case) == "kueue"
    expect = (case.get("expected") if kueue else case.get("expect")) or {}
    try:
        full = run_case(case)
    except CaseError as e:
        return {}, str(e), []
    except Exception as e:  # noqa: BLE001 - one broken case must not stop the run
        return {}, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}", []
    if case_kind(case) == "queue" and "steps" in full:
        # A queue run observes every step that has an expectation, not only the end.
        return full, None, queue_mismatches(case, full)
    actual = {k: full.get(k) for k in _reported_keys(expect) if k in full}
    if case_kind(case) == "dra-cel":
        return full, None, cel_mismatches(expect, full)
    if case_kind(case) == "dra-allocator":
        return full, None, allocator_mismatches(expect, full)
    if case_kind(case) == "dra-plugin":
        return full, None, dra_plugin_mismatches(expect, full)
    diffs = kueue_mismatches(expect, full) if kueue else mismatches(expect, full)
    if "error" in full and "error" not in expect:  # an expected `error` is a result, not a failure to run
        return actual, str(full["error"]), diffs
    return actual, None, diffs


def _reported_keys(expect: dict[str, Any]) -> list[str]:
    keys = []
    for k in expect:
        keys.append({"bindingAnyOf": "bindings", "nominatedAnyOf": "nominated"}.get(k, k))
    return keys




def run(args: argparse.Namespace) -> int:
    try:
        cases = [c for c in load_cases(args.paths) if args.match in c.get("name", "")]
    except CaseFileError as e:
        print(f"ksched conformance: {e}", file=sys.stderr)
        return 2
    passed = failed = held = 0
    report = []
    for case in cases:
        actual, error, diffs = evaluate(case)
        ok = error is None and not diffs
        entry: dict[str, Any] = {"name": case.get("name"), "actual": actual}
        if error is not None:
            entry["error"] = error
        report.append(entry)
        if case.get("held"):  # a row ksched is known to answer differently, with the reason
            held += not ok
            failed += ok
            if ok and not args.json:
                print(f"FAIL {case.get('name')}: passes but is marked held; remove its 'held'")
            continue
        passed += ok
        failed += not ok
        if not ok and not args.json:
            why = error.splitlines()[0] if error else "; ".join(diffs)
            if len(why) > 600:  # one line a case; --json has everything
                why = why[:600] + " ..."
            print(f"FAIL {case.get('name')}: {why}")
    if args.json:
        print(json.dumps(report, indent=1, default=str))
    summary = f"{passed} passed, {failed} failed" + (f", {held} held" if held else "")
    print(summary, file=sys.stderr if args.json else sys.stdout)
    return 0 if failed == 0 else 1
