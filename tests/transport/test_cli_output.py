"""What the CLI reads (manifests) and prints (tables, describe, explain)."""
from __future__ import annotations

import io

import pytest

from framework.api.errors import ValidationError
from transport.cli.main import build_parser
from transport.cli.commands import UsageError, load_manifests, parse_manifests
from transport.cli.describe import describe_node, describe_pod, explain_report
from transport.cli.tables import human_duration, nodes_table, pod_status, pods_table, resolve_kind

NOW = 1_700_000_000.0
T0 = "2023-11-14T22:13:20Z"  # NOW - 0 s


def node(name: str, cpu: str = "4") -> dict:
    return {"kind": "Node", "metadata": {"name": name, "creationTimestamp": T0},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name: str, node_name: str = "", phase: str = "", cpu: str = "500m", conditions: list | None = None) -> dict:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "creationTimestamp": "2023-11-14T22:10:00Z"},
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase, "conditions": conditions or []}}


def test_many_yaml_documents_json_lists_and_kind_list_all_become_objects():
    text = "kind: Node\nmetadata: {name: a}\n---\n---\nkind: List\nitems:\n- {kind: Node, metadata: {name: b}}\n"
    assert [o["metadata"]["name"] for o in parse_manifests(text, "f")] == ["a", "b"]
    assert [o["metadata"]["name"] for o in parse_manifests('[{"kind": "Pod", "metadata": {"name": "p"}}]', "f")] == ["p"]


def test_yaml_timestamps_are_sent_as_rfc3339_strings():
    [obj] = parse_manifests("kind: Pod\nmetadata: {name: p, creationTimestamp: 2024-01-02T03:04:05Z}\n", "f")
    assert obj["metadata"]["creationTimestamp"] == "2024-01-02T03:04:05Z"


@pytest.mark.parametrize("text, message", [
    pytest.param("metadata: {name: a}\n", "f: document 0: kind: is required", id="no-kind"),
    pytest.param("kind: Node\n---\n- 5\n", "f: document 1[0]: must be an object, got int", id="scalar-in-list"),
    pytest.param("kind: [\n", "f: not valid YAML or JSON", id="syntax"),
])
def test_a_bad_manifest_names_the_file_and_document(text, message):
    with pytest.raises(UsageError) as err:
        parse_manifests(text, "f")
    assert str(err.value).startswith(message)


def test_a_directory_is_read_in_name_order_and_only_manifest_files_count(tmp_path):
    (tmp_path / "b.yaml").write_text("kind: Node\nmetadata: {name: b}\n")
    (tmp_path / "a.json").write_text('{"kind": "Node", "metadata": {"name": "a"}}')
    (tmp_path / "notes.txt").write_text("kind: Node\n")
    stdin = io.StringIO("kind: Node\nmetadata: {name: c}\n")
    assert [o["metadata"]["name"] for o in load_manifests([str(tmp_path), "-"], stdin)] == ["a", "b", "c"]
    with pytest.raises(UsageError, match="no such file"):
        load_manifests([str(tmp_path / "missing.yaml")])


@pytest.mark.parametrize("name, kind", [("po", "Pod"), ("pods", "Pod"), ("Node", "Node"), ("pg", "PodGroup"),
                                        ("priorityclasses", "PriorityClass")])
def test_kubectl_resource_names_resolve_to_kinds(name, kind):
    assert resolve_kind(name) == kind


def test_an_unknown_resource_name_is_an_error_naming_kind():
    with pytest.raises(ValidationError, match="^kind: unknown resource type 'gadgets'"):
        resolve_kind("gadgets")


@pytest.mark.parametrize("raw, status", [
    pytest.param(pod("p"), "Pending", id="pending"),
    pytest.param(pod("p", "n1"), "Bound", id="bound"),
    pytest.param(pod("p", "n1", "Succeeded"), "Succeeded", id="succeeded"),
    pytest.param(pod("p", conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]),
                 "Unschedulable", id="unschedulable"),
    pytest.param({**pod("p"), "spec": {"schedulingGates": [{"name": "g"}]}}, "SchedulingGated", id="gated"),
])
def test_pod_status_reads_like_kubectl(raw, status):
    assert pod_status(raw) == status


def test_the_pods_table_has_name_status_node_and_age():
    out = pods_table([pod("a", "n1"), pod("b")], NOW, wide=False, namespaces=False).splitlines()
    assert [line.split() for line in out] == [["NAME", "STATUS", "NODE", "AGE"], ["a", "Bound", "n1", "3m20s"],
                                              ["b", "Pending", "<none>", "3m20s"]]


def test_the_nodes_table_shows_requested_over_allocatable_from_non_terminal_pods():
    pods = [pod("a", "n1"), pod("b", "n1", cpu="1"), pod("done", "n1", "Succeeded", cpu="2")]
    out = nodes_table([node("n1"), node("n2", cpu="2")], pods, NOW, wide=False).splitlines()
    assert [line.split() for line in out[1:]] == [["n1", "Ready", "2/110", "1500m/4", "0/8Gi", "0s"],
                                                  ["n2", "Ready", "0/110", "0/2", "0/8Gi", "0s"]]


@pytest.mark.parametrize("seconds, text", [
    (5, "5s"), (150, "2m30s"), (600, "10m"), (3600, "60m"), (11100, "3h5m"), (36000, "10h"), (200000, "2d7h"),
    (86400 * 30, "30d"), (86400 * 800, "2y70d")])
def test_ages_are_printed_like_kubectl(seconds, text):
    assert human_duration(seconds) == text


def test_describe_pod_shows_the_failed_scheduling_message_and_events():
    msg = "0/2 nodes are available: 2 Insufficient cpu."
    raw = pod("p", conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg}])
    text = describe_pod(raw, [{"type": "Warning", "reason": "FailedScheduling", "message": msg, "ageSeconds": 3}], NOW)
    assert "Status:           Unschedulable" in text
    assert text.count(msg) == 2 and "FailedScheduling" in text


def test_describe_node_lists_allocated_resources_and_its_pods():
    text = describe_node(node("n1"), [pod("a", "n1", cpu="1"), pod("b", "n2")], [], NOW)
    assert "Allocated:     cpu=1 (25%), memory=0 (0%), pods=1" in text
    assert "Non-terminated Pods: (1 in total)" in text and " a " in text


def test_explain_report_shows_verdicts_weighted_scores_and_the_choice():
    result = {"pod": "default/p", "profile": "default-scheduler", "chosen": "n2", "nodes": {
        "n1": {"feasible": False, "filters": {"NodeResourcesFit": {"code": "Unschedulable", "reasons": ["Insufficient cpu"]}}},
        "n2": {"feasible": True, "totalScore": 150, "filters": {"NodeResourcesFit": {"code": "Success"}},
               "scores": {"TaintToleration": {"raw": 0, "normalized": 50, "weight": 3, "weighted": 150}}},
    }}
    text = explain_report(result)
    assert text.index("Node n2: feasible, total score 150") < text.index("Node n1: infeasible")
    assert "Insufficient cpu" in text and text.rstrip().endswith("Chosen node: n2")
    assert ["TaintToleration", "0", "50", "3", "150"] in [line.split() for line in text.splitlines()]


def test_every_client_command_accepts_server_and_token_after_the_subcommand():
    parser = build_parser()
    for argv in (["get", "pods"], ["apply", "-f", "x"], ["describe", "pod", "p"], ["delete", "pod", "p"],
                 ["watch"], ["explain", "-f", "p"], ["complete", "p"], ["stats"]):
        args = parser.parse_args([*argv, "--server", "h:1", "--token", "t"])
        assert (args.server, args.token) == ("h:1", "t")
