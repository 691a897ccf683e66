"""The issue-17 workloads (PreemptionAsync, Churn, ResourceSaturation, HostPortConflict),
--feature-gates on bench, and the event-driven bind tracker, on tiny clusters."""
from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from bench.measure import BindTracker
from bench.runner import CONTRACT_KEYS, run_bench, with_gates
from bench.workloads import WORKLOADS, host_port_conflict, preemption_async, resource_saturation

NEW_KEYS = {"attempts_per_pod", "bind_p50_ms", "bind_p99_ms", "rss_mb"}


def _cpu(p: dict) -> str:
    return p["spec"]["containers"][0]["resources"]["requests"]["cpu"]


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_nodes_and_pods_set_every_workloads_size(name: str) -> None:
    w = WORKLOADS[name](3, 2)
    assert sum(1 for o in w.setup if o["kind"] == "Node") == 3
    assert len(w.measured) == 2


def test_preemption_async_has_upstreams_shape() -> None:
    w = preemption_async(nodes=3, pods=5)
    low = [o for o in w.setup if o["kind"] == "Pod"]
    assert len(low) == 12 and all(_cpu(o) == "900m" and "priority" not in o["spec"] for o in low)
    assert all(o["spec"]["terminationGracePeriodSeconds"] == 0 for o in low)
    assert all(_cpu(o) == "100m" and "priority" not in o["spec"] for o in w.measured)
    high = w.background(7)
    assert (_cpu(high), high["spec"]["priority"], high["metadata"]["namespace"]) == ("3000m", 10, "preemptors")
    assert high["metadata"]["name"] != w.background(8)["metadata"]["name"]
    assert w.background_interval_s == 0.2


def test_preemption_async_binds_every_measured_pod_and_reports_its_keys() -> None:
    result = run_bench("PreemptionAsync", nodes=3, pods=6, store="memory")
    assert CONTRACT_KEYS | NEW_KEYS <= set(result)
    assert (result["workload"], result["pods"], result["scheduled"], result["init_pods"]) == ("PreemptionAsync", 6, 6, 12)
    assert result["background_created"] >= 1  # the first preemptor goes in with the measured pods


def test_churn_completes_one_pod_per_queued_pod_and_reports_its_figures() -> None:
    result = run_bench("Churn", nodes=2, pods=3, store="memory")
    assert CONTRACT_KEYS | NEW_KEYS | {"completions_per_s", "failed_attempts_per_completion"} <= set(result)
    assert (result["init_pods"], result["pods"], result["scheduled"], result["completions"]) == (8, 3, 3, 3)
    assert result["bound_before_churn"] == 0  # the cluster was full: nothing bound before a completion
    # in the churn phase every attempt but the 3 that bound failed (the pods woken by a completion)
    assert result["failed_attempts"] == result["attempts"] - 3
    assert result["failed_attempts_per_completion"] == round(result["failed_attempts"] / 3, 2)
    assert result["completion_p99_ms"] >= result["completion_p50_ms"] > 0


def test_churn_wakes_one_class_per_completion_and_the_gate_off_wakes_every_queued_pod() -> None:
    on = run_bench("Churn", nodes=2, pods=6, store="memory", completions=4)
    assert on["completions"] == 4 and on["scheduled"] == 4
    # one class (the queued pods are alike): its first member binds, the next follows and fails
    assert on["classes_woken_per_completion"] == 1.0
    assert on["pods_woken_per_completion"] == 2.0 and on["failed_attempts_per_completion"] == 1.0
    off = run_bench("Churn", nodes=2, pods=6, store="memory", completions=4,
                    feature_gates="QueueEquivalenceClasses=false")
    assert off["classes_woken_per_completion"] == 0.0
    assert off["pods_woken_per_completion"] > on["pods_woken_per_completion"]


def test_churn_over_tcp_drives_a_real_daemon_with_the_same_loop() -> None:
    result = run_bench("Churn", nodes=1, pods=2, tcp=True)
    assert (result["transport"], result["scheduled"], result["completions"], result["init_pods"]) == ("tcp", 2, 2, 4)
    assert result["failed_attempts"] == result["attempts"] - 2
    assert result["bind_window"] == 6  # the daemon's recent binds: 4 setup pods, 2 queued
    assert result["classes_woken_per_completion"] == 1.0  # the daemon's queue counts, over its stats


@pytest.mark.parametrize(("make", "name"), [(resource_saturation, "ResourceSaturation"),
                                            (host_port_conflict, "HostPortConflict")])
def test_batching_workloads_place_one_pod_per_node_with_signature_batches(make, name) -> None:
    w = make(4, 25)
    assert w.config["profiles"][0]["pluginConfig"][0] == {
        "name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}}
    signatures = [p["metadata"]["labels"]["signature"] for p in w.measured]
    assert signatures[:11] == ["signature-label-0"] * 10 + ["signature-label-1"] and len(set(signatures)) == 3
    assert all("limits" not in p["spec"]["containers"][0]["resources"] for p in w.measured)
    result = run_bench(name, nodes=4, pods=6, store="memory")
    assert (result["scheduled"], result["expected"], result["attempts"]) == (4, 4, 6)


def test_host_port_conflict_pods_ask_for_host_port_80() -> None:
    ports = host_port_conflict(2, 1).measured[0]["spec"]["containers"][0]["ports"]
    assert ports == [{"containerPort": 80, "hostPort": 80}]


def test_feature_gates_go_into_the_workloads_configuration_and_the_result() -> None:
    cfg = with_gates({"apiVersion": "a", "featureGates": {"PodLevelResources": True}}, {"StorageCapacityScoring": True})
    assert cfg["featureGates"] == {"PodLevelResources": True, "StorageCapacityScoring": True}
    result = run_bench("SchedulingBasic", nodes=2, pods=2, store="memory",
                       feature_gates="SchedulerPopFromBackoffQ=false")
    assert result["feature_gates"] == {"SchedulerPopFromBackoffQ": False} and result["scheduled"] == 2


@pytest.mark.parametrize(("flag", "message"), [
    ("Bogus=false", "--feature-gates: unrecognized feature gate: Bogus"),
    ("SchedulerQueueingHints=false", "--feature-gates: cannot set feature gate SchedulerQueueingHints to false"),
])
def test_a_bad_gate_is_refused_before_anything_runs(flag: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run_bench("SchedulingBasic", nodes=1, pods=1, feature_gates=flag)
    proc = subprocess.run([sys.executable, "-m", "transport.cli.main", "bench", "SchedulingBasic", "--nodes", "1",
                           "--feature-gates", flag], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr


def test_the_tracker_wakes_waiters_as_pods_bind_and_counts_only_first_bindings() -> None:
    async def scenario() -> None:
        t = BindTracker(stall_seconds=5)
        keys = {("d", f"p{i}") for i in range(3)}
        two = asyncio.ensure_future(t.wait(keys, 2))
        any_new = asyncio.ensure_future(t.wait_new(None, 1))
        await asyncio.sleep(0)
        t.observe(("d", "other"), "n1")
        assert await asyncio.wait_for(any_new, 5) is True
        t.observe(("d", "p0"), "n1")
        t.observe(("d", "p0"), "n2")  # a second binding of the same pod is not new
        t.observe(("d", "p1"), None)  # not bound
        for _ in range(5):
            await asyncio.sleep(0)
        assert not two.done()
        t.observe(("d", "p2"), "n1")
        assert await two is True
        assert t.order == [("d", "other"), ("d", "p0"), ("d", "p2")] and t.bound(keys) == 2
        assert await t.wait(keys, 2) is True  # already there: no wait at all

    asyncio.run(scenario())


def test_the_tracker_gives_up_after_a_stall_with_no_binding() -> None:
    async def scenario() -> bool:
        return await BindTracker(stall_seconds=0.01).wait({("d", "p")}, 1)

    assert asyncio.run(scenario()) is False


def test_batching_workloads_report_the_gate_on_and_off_from_one_run() -> None:
    result = run_bench("ResourceSaturation", nodes=20, pods=20, store="memory")
    off = result["gate_off"]
    assert result["scheduled"] == off["scheduled"] == 20
    assert off["feature_gates"] == {"OpportunisticBatching": False} and "feature_gates" not in result
    assert CONTRACT_KEYS | NEW_KEYS <= off.keys()
    # Signature batches of 10: the first pod of each scores every node, the 9 after it take hints.
    assert result["batched_pods"] == 18 and off["batched_pods"] == 0
    assert result["batching_speedup"] is not None


def test_setting_the_batching_gate_runs_that_setting_only() -> None:
    result = run_bench("HostPortConflict", nodes=4, pods=4, store="memory", feature_gates="OpportunisticBatching=true")
    assert "gate_off" not in result and result["batched_pods"] == 3
