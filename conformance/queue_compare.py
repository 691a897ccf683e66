"""Comparing a queue case's expectations (each step's `expect` and `expect.final`,
SCHEMA-ADDITIONS.md section 5) with what the run observed (queue_cases.QueueRun.run).

Names in expectations are `namespace/name` (default namespace when absent) or a
variable `$v` the run bound (reported under `vars`)."""
from __future__ import annotations

from typing import Any, Callable

_POP_KEYS = ("attempts", "gated", "unschedulablePlugins", "pendingPlugins")
Names = Callable[[Any], set[str]]


def queue_mismatches(case: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    bound = actual.get("vars") or {}

    def name(ref: str) -> str:
        if ref.startswith("$"):
            return str(bound.get(ref[1:], ref))
        return ref if "/" in ref else f"default/{ref}"

    out: list[str] = []
    observed = actual.get("steps") or {}
    for i, step in enumerate(case.get("steps") or []):
        e = step.get("expect")
        if not e:
            continue
        where = f"steps[{i}] ({step['op']})"
        if str(i) not in observed:
            out.append(f"{where}: nothing observed")
        elif step["op"] == "pop":
            out += _pop_mismatches(where, e, observed[str(i)], name)
        else:
            out += state_mismatches(where, e, observed[str(i)], name)
    final = (case.get("expect") or {}).get("final")
    if final:
        out += state_mismatches("final", final, actual.get("final") or {}, name)
    return out


def _pop_mismatches(where: str, e: dict[str, Any], got: dict[str, Any], name: Callable[[str], str]) -> list[str]:
    out: list[str] = []
    popped = got.get("pod")
    for k in e:
        if k not in ("pod", "notPod", "initialAttemptAt", "group", *_POP_KEYS):
            out.append(f"{where}: unknown pop expectation {k!r}")
    if "pod" in e:
        want = name(e["pod"]) if e["pod"] is not None else None
        if want != popped:
            return [f"{where}: pod: expected {want!r}, got {popped!r}"]
    if "notPod" in e and popped == name(e["notPod"]):
        out.append(f"{where}: notPod: expected not {e['notPod']!r}, got {popped!r}")
    if "group" in e and sorted(name(x) for x in e["group"]) != got.get("group"):
        out.append(f"{where}: group: expected {sorted(name(x) for x in e['group'])!r}, got {got.get('group')!r}")
    if popped is None:
        return out
    for k in _POP_KEYS:
        if k in e:
            want = sorted(e[k]) if isinstance(e[k], list) else e[k]
            if want != got.get(k):
                out.append(f"{where}: {k}: expected {want!r}, got {got.get(k)!r}")
    if "initialAttemptAt" in e:
        at = got.get("initialAttemptAt")
        if at is None or abs(at - e["initialAttemptAt"]) > 1e-9:
            out.append(f"{where}: initialAttemptAt: expected {e['initialAttemptAt']!r}, got {at!r}")
    return out


def state_mismatches(where: str, e: dict[str, Any], got: dict[str, Any], name: Callable[[str], str]) -> list[str]:
    out: list[str] = []

    def names(xs: Any) -> set[str]:
        return {name(x) for x in xs}

    def fail(what: str, want: Any, have: Any) -> None:
        out.append(f"{where}: {what}: expected {want!r}, got {have!r}")

    every = set(got.get("activeQ", [])) | set(got.get("backoffQ", [])) | set(got.get("unschedulable", []))
    for k, v in e.items():
        if k in ("activeQ", "backoffQ", "unschedulable", "inFlight", "pendingPods"):
            if names(v) != set(got.get(k, [])):
                fail(k, sorted(names(v)), got.get(k))
        elif k == "gatedExactly":
            if names(v) != set(got.get("gated", [])):
                fail(k, sorted(names(v)), got.get("gated"))
        elif k in ("activeQContains", "backoffQContains", "unschedulableContains", "gated"):
            sub = got.get(k.removesuffix("Contains"), [])
            if not names(v) <= set(sub):
                fail(k, sorted(names(v)), sub)
        elif k == "notIn":
            for sub, pods in v.items():
                if names(pods) & set(got.get(sub, [])):
                    fail(f"notIn.{sub}", sorted(names(pods)), got.get(sub))
        elif k == "notInAnyQueue":
            if names(v) & every:
                fail(k, sorted(names(v)), sorted(every))
        elif k == "counts":
            for c, n in v.items():
                if (got.get("counts") or {}).get(c) != n:
                    fail(f"counts.{c}", n, (got.get("counts") or {}).get(c))
        elif k == "inFlightEvents":
            want = [x if not x.startswith("pod:") else "pod:" + name(x[4:]) for x in v]
            if want != got.get(k):
                fail(k, want, got.get(k))
        elif k == "nominated":
            want_nom = {n: [name(p) for p in ps] for n, ps in v.items()}
            if want_nom != got.get("nominated"):
                fail(k, want_nom, got.get("nominated"))
        elif k == "nominatedFor":
            for n, pods in v.items():
                have = (got.get("nominated") or {}).get(n, [])
                if [name(p) for p in pods] != have:
                    fail(f"nominatedFor.{n}", pods, have)
        elif k == "nominatedNodeCount":
            if v != len(got.get("nominated") or {}):
                fail(k, v, len(got.get("nominated") or {}))
        elif k == "holdsUpdatedObject":
            for ref in v:
                key = name(ref)
                held = (got.get("heldObjects") or {}).get(key)
                if held is None or held != (got.get("lastGivenObjects") or {}).get(key):
                    fail(k, key, held)
        elif k == "backoffSeconds":
            for ref, seconds in v.items():
                have = (got.get("backoffSeconds") or {}).get(name(ref))
                if have != seconds:
                    fail(f"backoffSeconds.{name(ref)}", seconds, have)
        else:
            out.append(f"{where}: unknown check key {k!r}")
    return out
