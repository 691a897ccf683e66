"""The conformance runner's queue and queueing-hint drivers report what the real
code did, and a case whose expectation does not hold fails."""
from __future__ import annotations

from conformance.runner import evaluate

_POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "p"}, "spec": {}}


def _queue_case(final: dict, pop_expect: dict | None = None) -> dict:
    return {"name": "Queue/driver", "_file": "t.json",
            "queue": {"startTime": "2025-01-01T00:00:00.5Z"},
            "pods": {"p": _POD},
            "steps": [{"op": "add", "pod": "p"}, {"op": "pop", "saveAs": "v", "expect": pop_expect or {"pod": "p"}},
                      {"op": "requeue", "pod": "p", "from": "popped", "unschedulablePlugins": ["Foo"]}],
            "expect": {"final": final}}


def test_a_queue_case_reports_what_the_queue_holds():
    actual, error, diffs = evaluate(_queue_case({"unschedulableContains": ["p"]}))
    assert error is None and diffs == []
    assert actual["final"]["unschedulable"] == ["default/p"]
    assert actual["final"]["activeQ"] == []
    assert actual["steps"]["1"]["pod"] == "default/p" and actual["steps"]["1"]["attempts"] == 1
    assert actual["vars"] == {"v": "default/p"}


def test_a_queue_case_whose_final_state_differs_fails_with_the_real_state():
    actual, error, diffs = evaluate(_queue_case({"activeQ": ["p"]}))
    assert error is None
    assert diffs == ["final: activeQ: expected ['default/p'], got []"]
    assert actual["final"]["activeQ"] == []  # what the queue holds, not what the case expects


def test_a_queue_case_whose_pop_differs_fails_at_that_step():
    _, _, diffs = evaluate(_queue_case({"unschedulableContains": ["$v"]}, {"pod": "p", "attempts": 2}))
    assert diffs == ["steps[1] (pop): attempts: expected 2, got 1"]


def test_an_unknown_check_key_fails_rather_than_passing_unchecked():
    _, _, diffs = evaluate(_queue_case({"activeQHolds": ["p"]}))
    assert diffs == ["final: unknown check key 'activeQHolds'"]


def _hint_case(new_obj, expect: dict, hint: str = "isSchedulableAfterNodeChange") -> dict:
    return {"name": "hint", "_file": "t.json", "plugin": "NodeUnschedulable", "hint": hint, "event": None,
            "pluginArgs": None, "pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}},
            "oldObj": None, "newObj": new_obj, "expect": expect}


def test_a_hint_case_runs_the_plugins_registered_hint():
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {"unschedulable": True}}
    actual, error, diffs = evaluate(_hint_case(node, {"hint": "QueueSkip", "error": False}))
    assert (actual, error, diffs) == ({"hint": "QueueSkip", "error": False}, None, [])
    _, _, diffs = evaluate(_hint_case(node, {"hint": "Queue", "error": False}))
    assert diffs == ["hint: expected 'Queue', got 'QueueSkip'"]


def test_a_hint_given_an_object_of_another_kind_errs_and_queues():
    actual, error, _ = evaluate(_hint_case("not-a-node", {"hint": "Queue", "error": True}))
    assert error is None and actual == {"hint": "Queue", "error": True}


def test_a_hint_the_plugin_does_not_have_is_a_case_error():
    _, error, _ = evaluate(_hint_case(None, {"hint": "Queue"}, hint="isSchedulableAfterSomethingElse"))
    assert error is not None and "no hint for upstream's isSchedulableAfterSomethingElse" in error


def test_a_hint_is_called_only_for_an_event_it_is_registered_for():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"uid": "u"}, "spec": {}}
    case = _hint_case(pod, {"hint": "QueueSkip"}, hint="isSchedulableAfterPodTolerationChange")
    case.update(oldObj=pod, event="Pod/UpdatePodTolerations")
    assert evaluate(case)[1] is None
    case["event"] = "Node/Add"
    _, error, _ = evaluate(case)
    assert error is not None and "not registered for Node/Add" in error


def _allocator_case(expected_device: str, held: str | None = None) -> dict:
    case = {"name": "allocator/held", "_file": "t.json",
            "featureGates": {"DRAPartitionableDevices": False, "DRAConsumableCapacity": False},
            "node": {"metadata": {"name": "n"}},
            "deviceClasses": [{"metadata": {"name": "c"},
                               "spec": {"selectors": [{"cel": {"expression": 'device.driver == "d"'}}]}}],
            "resourceSlices": [{"metadata": {"name": "s"}, "spec": {
                "driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, "nodeName": "n",
                "devices": [{"name": "x"}]}}],
            "claims": [{"metadata": {"name": "claim"}, "spec": {"devices": {"requests": [
                {"name": "r", "exactly": {"deviceClassName": "c", "allocationMode": "ExactCount", "count": 1}}]}}}],
            "expect": {"outcome": "allocated", "results": [{"devices": {"results": [
                {"request": "r", "driver": "d", "pool": "p", "device": expected_device}]}, "nodeSelector": {"nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}]}}]}}
    if held:
        case["held"] = held
    return case


def test_a_held_case_that_fails_is_counted_held_and_one_that_passes_fails_the_run(tmp_path, capsys):
    import json

    from conformance.cli import main
    failing = _allocator_case("y", held="expects a device the slice does not publish")
    (tmp_path / "held.json").write_text(json.dumps([failing]))
    assert main([str(tmp_path / "held.json")]) == 0
    assert capsys.readouterr().out.splitlines() == ["0 passed, 0 failed, 1 held"]
    (tmp_path / "held.json").write_text(json.dumps([_allocator_case("x", held="no longer needed")]))
    assert main([str(tmp_path / "held.json")]) == 1
    assert "FAIL allocator/held: passes but is marked held; remove its 'held'" in capsys.readouterr().out


def test_a_dra_plugin_case_fails_on_a_status_message_it_does_not_contain_and_on_an_unexpected_claim_change():
    import json
    from pathlib import Path

    rows = json.loads((Path(__file__).resolve().parents[2] / "conformance" / "DRA-TestPlugin.json").read_text())
    case = dict(next(r for r in rows if r["name"].endswith("/no-resources")), _file="t.json")
    assert evaluate(case)[1:] == (None, [])
    wrong = dict(case, expect=dict(case["expect"], postfilter={"status": {"code": "Unschedulable",
                                                                         "message": "deallocation of ResourceClaim completed"}}))
    _, error, diffs = evaluate(wrong)
    assert error is None and len(diffs) == 1 and diffs[0].startswith("postfilter: status expected")
    bound = dict(next(r for r in rows if r["name"].endswith("/with-resources")), _file="t.json")
    unchanged = dict(bound, expect={k: v for k, v in bound["expect"].items() if k != "prebind"})
    diffs = evaluate(unchanged)[2]
    assert len(diffs) == 1 and diffs[0].startswith("prebind: claims expected")
