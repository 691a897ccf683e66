"""What the cluster page is fed: requests and allocatable as the scheduler parses
them, Permit waiters on wall time, throughput from the metrics registry."""
from __future__ import annotations

from framework.api.objects import Node, Pod
from actors.waiting_room import WaitingSnapshot
from transport.http.metrics import SchedulerMetrics
from transport.cli.tables import node_usage
from transport.web.feed import (SampleRing, node_view, page_object, pod_view, sample_metrics, view_of, view_of_object,
                                waiters)


def test_a_pods_requests_count_init_containers_and_overhead_as_the_scheduler_counts_them():
    raw = {"kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"nodeName": "n1",
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": "200m", "memory": "1Gi"}}},
                                   {"name": "b", "resources": {"requests": {"cpu": "300m"}}}],
                    "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1", "memory": "512Mi"}}}],
                    "overhead": {"cpu": "50m"}}}
    assert pod_view(raw) == {"cpu": 1050, "memory": 1 << 30, "terminal": False}
    assert node_usage([raw])["n1"] == (1, 1050, 1 << 30)  # the numbers `ksched get nodes` prints


def test_a_finished_pod_is_marked_terminal_so_it_frees_its_node():
    raw = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]},
           "status": {"phase": "Succeeded"}}
    assert pod_view(raw)["terminal"] is True


def test_a_node_shows_allocatable_taints_and_cordon():
    raw = {"kind": "Node", "metadata": {"name": "n1"},
           "spec": {"unschedulable": True, "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                                                      {"key": "spot", "effect": "PreferNoSchedule"}]},
           "status": {"allocatable": {"cpu": "3500m", "memory": "2Gi", "pods": "20"}}}
    assert node_view(raw) == {"cpu": 3500, "memory": 2 << 30, "pods": 20, "unschedulable": True,
                              "taints": ["dedicated=gpu:NoSchedule", "spot:PreferNoSchedule"]}


def test_a_node_the_scheduler_cannot_parse_says_which_field():
    raw = {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1.5.5"}}}
    assert "status.allocatable" in node_view(raw)["invalid"]


def member(name: str, group: str | None) -> Pod:
    labels = {"scheduling.x-k8s.io/pod-group": group} if group else {}
    return Pod({"kind": "Pod", "metadata": {"name": name, "namespace": "ml", "labels": labels, "uid": name},
                "spec": {"containers": [{"name": "c"}]}})


def test_permit_waiters_carry_their_gang_and_their_deadline_on_wall_time():
    room = [WaitingSnapshot(member("train-1", "train"), "n2", 130.0), WaitingSnapshot(member("solo", None), "n1", 105.0)]
    got = waiters(room, clock_now=100.0, wall_now=5000.0)
    assert [(w.pod, w.group, w.node, w.deadline) for w in got] == [
        ("ml/solo", "", "n1", 5005.0), ("ml/train-1", "ml/train", "n2", 5030.0)]


def test_a_sample_sums_bound_pods_over_profiles_and_pending_pods_over_queues():
    m = SchedulerMetrics()
    assert sample_metrics(m.registry, 1.0).to_json() == {"t": 1.0, "scheduled": 0.0, "pending": 0.0}
    for result, profile in (("scheduled", "a"), ("scheduled", "a"), ("scheduled", "b"), ("error", "a")):
        m.schedule_attempt(result, profile, 0.001)
    m.set_pending_pods({"active": 4, "backoff": 1, "unschedulable": 2, "gated": 1})
    assert sample_metrics(m.registry, 2.0).to_json() == {"t": 2.0, "scheduled": 3.0, "pending": 8.0}


def test_the_sample_ring_keeps_only_the_newest_samples_oldest_first():
    m = SchedulerMetrics()
    ring = SampleRing(keep=3)
    for t in range(5):
        ring.add(sample_metrics(m.registry, float(t)))
    assert [s["t"] for s in ring.to_json()] == [2.0, 3.0, 4.0]


def test_the_page_gets_the_fields_it_shows_and_the_views_of_parsed_objects_match_the_manifests():
    cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes are available"}
    pending = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"app": "web"},
                                           "managedFields": [{"manager": "x"}]},
               "spec": {"priority": 5, "containers": [{"name": "c", "image": "pause",
                                                        "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}]},
               "status": {"conditions": [{"type": "Ready", "status": "False"}, cond], "nominatedNodeName": "n1"}}
    assert page_object("Pod", Pod(pending)) == {"metadata": {"name": "p", "namespace": "ns"},  # of the labels, the gang's
                                           "spec": {"priority": 5},
                                           "status": {"nominatedNodeName": "n1", "conditions": [cond]}}
    bound = {**pending, "spec": {**pending["spec"], "nodeName": "n1"}}
    assert "conditions" not in page_object("Pod", Pod(bound))["status"]  # a bound pod needs no "why pending"
    assert view_of_object("Pod", Pod(pending)) == view_of("Pod", pending) == {"cpu": 250, "memory": 1 << 30,
                                                                               "terminal": False}
    node = {"kind": "Node", "metadata": {"name": "n1", "labels": {"zone": "a"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}, "images": [{"names": ["x"]}]}}
    assert page_object("Node", Node(node)) == {"metadata": {"name": "n1", "labels": {"zone": "a"}}}
    assert view_of_object("Node", Node(node)) == view_of("Node", node)


def test_slices_and_claims_reach_the_page_as_device_ids_per_node_and_holders_only() -> None:
    from framework.api.dra_kinds import ResourceClaim, ResourceSlice
    from tests import dra_manifests as dm
    from transport.web.feed import page_item
    slice_item = page_item("ResourceSlice", ResourceSlice(dm.resource_slice("node-1", gpus=2)))
    assert slice_item == {"object": {"metadata": {"name": "node-1-gpus"}},
                          "view": {"node": "node-1", "devices": ["gpu.example.com/node-1/gpu-0",
                                                                 "gpu.example.com/node-1/gpu-1"]}}
    raw = dm.resource_claim("held")
    raw["status"] = {"allocation": dm.allocation("node-1", "gpu-1"),
                     "reservedFor": [{"resource": "pods", "name": "trainer", "uid": "u"}]}
    claim_item = page_item("ResourceClaim", ResourceClaim(raw))
    assert claim_item["view"] == {"devices": ["gpu.example.com/node-1/gpu-1"], "pods": ["trainer"]}
    assert "spec" not in claim_item["object"]  # the claim's spec stays on the server
