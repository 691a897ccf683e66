"""The conformance runner's pod-group queue driver pops a member with the others its
queue holds, a member whose PodGroup is missing is held gated by GangScheduling, and a
case marked `held` counts as held while it differs and fails the run once it passes."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from conformance.runner import evaluate, run

_GROUP = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
          "metadata": {"name": "pg", "namespace": "ns"}, "spec": {"schedulingPolicy": {"basic": {}}}}


def _member(name: str) -> dict:
    return {"metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": {"schedulingGroup": {"podGroupName": "pg"}}}


def _case(groups: list, steps: list, name: str = "GroupQueue/driver", **extra) -> dict:
    return {"name": name, "_file": "t.json", **extra,
            "queue": {"startTime": "2026-01-01T00:00:00.5Z", "podGroups": groups},
            "pods": {"a": _member("a"), "b": _member("b"), "c": _member("c")}, "steps": steps}


def test_a_pop_takes_the_members_its_queue_holds_with_the_popped_one():
    steps = [{"op": "add", "pod": "a"}, {"op": "add", "pod": "b"},
             {"op": "pop", "expect": {"group": ["ns/a", "ns/b"]}},
             {"op": "check", "expect": {"inFlight": ["ns/a", "ns/b"], "activeQ": []}}]
    actual, error, diffs = evaluate(_case([_GROUP], steps))
    assert error is None and diffs == []
    assert actual["steps"]["2"]["group"] == ["ns/a", "ns/b"]


def test_a_member_whose_pod_group_is_missing_is_held_gated_until_it_is_added():
    steps = [{"op": "add", "pod": "a"},
             {"op": "check", "expect": {"gatedExactly": ["ns/a"], "activeQ": []}},
             {"op": "addPodGroup", "podGroup": _GROUP},
             {"op": "check", "expect": {"gatedExactly": [], "activeQ": ["ns/a"]}}]
    _, error, diffs = evaluate(_case([], steps))
    assert error is None and diffs == []


def test_a_group_expected_whole_fails_when_a_member_pops_alone():
    steps = [{"op": "add", "pod": "a"}, {"op": "pop", "expect": {"group": ["ns/a", "ns/c"]}}]
    _, _, diffs = evaluate(_case([_GROUP], steps))
    assert diffs == ["steps[1] (pop): group: expected ['ns/a', 'ns/c'], got ['ns/a']"]


def _run(tmp_path: Path, cases: list, capsys) -> tuple[int, str]:
    f = tmp_path / "cases.json"
    f.write_text(json.dumps(cases))
    code = run(argparse.Namespace(paths=[str(f)], json=False, match=""))
    return code, capsys.readouterr().out


def test_a_held_case_that_differs_is_counted_held_and_one_that_passes_fails_the_run(tmp_path, capsys):
    differs = _case([_GROUP], [{"op": "add", "pod": "a"}, {"op": "check", "expect": {"activeQ": []}}],
                    name="differs", held="known difference")
    code, out = _run(tmp_path, [differs], capsys)
    assert code == 0 and out.strip().endswith("0 passed, 0 failed, 1 held")
    passes = _case([_GROUP], [{"op": "add", "pod": "a"}, {"op": "check", "expect": {"activeQ": ["ns/a"]}}],
                   name="passes", held="known difference")
    code, out = _run(tmp_path, [passes], capsys)
    assert code == 1 and "FAIL passes: passes but is marked held" in out
