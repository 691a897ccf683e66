"""`ksched conformance`: runs the translated upstream cases against the real code.

Each case is dispatched by its kind (CASE_SCHEMA.md): a scenario (`schedule`) runs
through the actor pipeline, a plugin case through the plugin alone, a function case
through that function. The runner builds everything from the case's inputs and only
then compares with `expect`; expectations never steer the run.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

from transport.conformance.compare import mismatches
from transport.conformance.functions import FUNCTIONS
from transport.conformance.plugin_cases import CaseError, run_plugin_case

# Case kinds whose drivers live in their own modules: (module, function).
_DRIVERS: dict[str, tuple[str, str]] = {
    "scenario": ("transport.conformance.scenarios", "run_scenario_case"),
    "coscheduling": ("transport.conformance.coscheduling_cases", "run_coscheduling_case"),
    "preemption": ("transport.conformance.preemption_cases", "run_preemption_case"),
    "queue": ("transport.conformance.queue_cases", "run_queue_case"),
}


def case_kind(case: dict[str, Any]) -> str:
    if "schedule" in case:
        return "scenario"
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


def _driver(kind: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    module_name, fn = _DRIVERS[kind]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name:
            raise CaseError(f"no driver for {kind} cases yet ({module_name} is missing)") from None
        raise
    return getattr(module, fn)


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """The case's `actual` (keys of its expect), or {"error": why} beside it."""
    from framework.config import full_registry

    kind = case_kind(case)
    if kind in _DRIVERS:
        actual = _driver(kind)(case)
    elif kind == "function":
        fn = FUNCTIONS.get(case["function"])
        if fn is None:
            raise CaseError(f"function {case['function']!r} is not known to the runner")
        actual = fn(case)
    elif kind == "plugin":
        actual = run_plugin_case(case, full_registry_or_partial())
    else:
        raise CaseError("case has neither schedule, plugin nor function")
    return actual


def full_registry_or_partial() -> Any:
    """The in-tree registry; while some plugin modules are missing, the ones present."""
    from framework.plugins import IN_TREE_MODULES, Registry

    reg = Registry()
    for module_name in IN_TREE_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name == module_name:
                continue
            raise
        for cls in module.PLUGINS:
            reg.register_class(cls)
    return reg


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
        for i, c in enumerate(data if isinstance(data, list) else [data]):
            if not isinstance(c, dict):
                raise CaseFileError(f"{f}: case [{i}] is not an object")
            c.setdefault("_file", f.name)
            cases.append(c)
    return cases


def evaluate(case: dict[str, Any]) -> tuple[dict[str, Any], str | None, list[str]]:
    """(actual, error, mismatches) for one case."""
    expect = case.get("expect") or {}
    try:
        full = run_case(case)
    except CaseError as e:
        return {}, str(e), []
    except Exception as e:  # noqa: BLE001 - one broken case must not stop the run
        return {}, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}", []
    actual = {k: full.get(k) for k in _reported_keys(expect) if k in full}
    if "error" in full and "error" not in expect:  # an expected `error` is a result, not a failure to run
        return actual, str(full["error"]), mismatches(expect, full)
    return actual, None, mismatches(expect, full)


def _reported_keys(expect: dict[str, Any]) -> list[str]:
    keys = []
    for k in expect:
        keys.append({"bindingAnyOf": "bindings", "nominatedAnyOf": "nominated"}.get(k, k))
    return keys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ksched conformance", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", help="case files or directories of *.json cases")
    parser.add_argument("--json", action="store_true", help="print every case's actual results as JSON")
    parser.add_argument("-k", dest="match", default="", help="only cases whose name contains this text")


def run(args: argparse.Namespace) -> int:
    try:
        cases = [c for c in load_cases(args.paths) if args.match in c.get("name", "")]
    except CaseFileError as e:
        print(f"ksched conformance: {e}", file=sys.stderr)
        return 2
    passed = failed = 0
    report = []
    for case in cases:
        actual, error, diffs = evaluate(case)
        ok = error is None and not diffs
        passed += ok
        failed += not ok
        entry: dict[str, Any] = {"name": case.get("name"), "actual": actual}
        if error is not None:
            entry["error"] = error
        report.append(entry)
        if not ok and not args.json:
            why = error.splitlines()[0] if error else "; ".join(diffs)
            if len(why) > 600:  # one line a case; --json has everything
                why = why[:600] + " ..."
            print(f"FAIL {case.get('name')}: {why}")
    if args.json:
        print(json.dumps(report, indent=1, default=str))
    print(f"{passed} passed, {failed} failed", file=sys.stderr if args.json else sys.stdout)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
