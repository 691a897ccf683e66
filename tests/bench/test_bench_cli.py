"""`ksched bench`: its options and the workloads' shapes, on tiny clusters."""
from __future__ import annotations

import pytest

from bench.runner import CONTRACT_KEYS, format_table, run_bench
from bench.workloads import WORKLOADS, preemption_basic
from framework.api.quantity import parse_quantity


def test_bench_uses_the_durable_sqlite_store_by_default_and_says_so() -> None:
    result = run_bench("SchedulingBasic", nodes=5, pods=6)
    assert CONTRACT_KEYS <= set(result)
    assert (result["store"], result["transport"], result["pods"], result["scheduled"]) == ("sqlite", "in-process", 6, 6)
    assert result["attempts"] == 6 and result["attempts_per_pod"] == 1.0
    assert result["p99_ms"] >= result["p50_ms"] > 0
    assert result["peak_rss_mb"] > 0 and result["rss_mb"] == result["peak_rss_mb"]
    # assume-to-bound of the 6 binds of the measured phase
    assert result["binds"] == 6 and result["bind_p99_ms"] >= result["bind_p50_ms"] > 0


def test_bench_with_the_memory_store_names_it_in_the_result() -> None:
    result = run_bench("Unschedulable", nodes=3, pods=4, store="memory")
    assert (result["store"], result["scheduled"], result["init_pods"]) == ("memory", 4, 200)


def test_bench_over_tcp_binds_every_measured_pod_through_a_real_daemon_subprocess() -> None:
    result = run_bench("SchedulingBasic", nodes=4, pods=5, tcp=True)
    assert CONTRACT_KEYS <= set(result)
    assert (result["transport"], result["store"], result["scheduled"], result["attempts"]) == ("tcp", "sqlite", 5, 5)
    assert result["peak_rss_mb"] > 0 and result["rss_mb"] == result["peak_rss_mb"]
    assert result["attempts_per_pod"] == 1.0
    # the daemon's stats give assume-to-bound over its most recent binds (setup's 1 and the 5 measured)
    assert result["bind_window"] == 6 and result["bind_p99_ms"] >= result["bind_p50_ms"] > 0
    assert isinstance(result["rss_per_pod_kb"], float)  # the daemon's RSS growth per measured pod
    assert isinstance(result["rss_per_stored_pod_kb"], float)  # and per stored pod, in a restarted daemon


def test_gang_size_sets_the_members_of_each_pod_group_and_pods_is_what_was_submitted() -> None:
    result = run_bench("Gang", nodes=3, pods=12, gang_size=4)
    assert (result["gang_size"], result["groups"], result["groups_bound"], result["pods"], result["scheduled"]) == (4, 3, 3, 12, 12)
    assert result["ms_per_group"] > 0


def test_every_preemption_basic_preemptor_binds_with_one_failed_attempt_before_it() -> None:
    result = run_bench("PreemptionBasic", nodes=6, pods=6, store="memory")
    assert result["scheduled"] == 6
    # Upstream: the first attempt fails and nominates; the pod is retried once the victims are gone.
    assert result["attempts"] == 12


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"store": "disk"}, "--store"),
    ({"gang_size": 3}, "--gang-size"),
    ({"nodes": 0}, "--nodes"),
    ({"pods": 0}, "--pods"),
    ({"completions": 5}, "--completions"),
], ids=["unknown store", "gang size without a gang", "no nodes", "no pods", "completions without Churn"])
def test_a_bad_bench_option_is_refused_with_its_name(kwargs: dict, field: str) -> None:
    args = {"workload": "SchedulingBasic", "nodes": 2, "pods": 2, **kwargs}
    with pytest.raises(ValueError, match=field):
        run_bench(**args)


def test_gang_over_tcp_is_refused_rather_than_run_in_process() -> None:
    with pytest.raises(ValueError, match="--tcp"):
        run_bench("Gang", nodes=2, pods=6, tcp=True)


def test_preemption_basic_fills_every_node_so_each_high_priority_pod_needs_preemption() -> None:
    w = preemption_basic(nodes=3, pods=2)
    node_cpu = parse_quantity(w.setup[0]["status"]["allocatable"]["cpu"])
    low = [o for o in w.setup if o["kind"] == "Pod"]
    low_cpu = sum(parse_quantity(o["spec"]["containers"][0]["resources"]["requests"]["cpu"]) for o in low)
    high_cpu = parse_quantity(w.measured[0]["spec"]["containers"][0]["resources"]["requests"]["cpu"])
    assert len(low) == 4 * 3
    assert low_cpu / 3 + high_cpu > node_cpu  # no node has room without evicting
    assert all("priority" not in o["spec"] for o in low) and w.measured[0]["spec"]["priority"] == 10


def test_every_workload_uses_upstreams_default_node_and_pod_sizes() -> None:
    own_templates = {"ResourceSaturation", "HostPortConflict", "Churn"}  # their own pod templates
    for name, make in WORKLOADS.items():
        w = make(2, 1)
        n = w.setup[0]
        assert n["status"]["allocatable"] == {"cpu": "4", "memory": "32Gi", "pods": "110"}
        if name not in own_templates:
            assert w.measured[0]["spec"]["containers"][0]["resources"]["requests"]["memory"] == "500Mi"


def test_the_table_has_one_row_per_result_and_names_a_failed_run() -> None:
    ok = {"workload": "SchedulingBasic", "nodes": 5, "pods": 6, "scheduled": 6, "pods_per_s": 10.0, "p50_ms": 1.0,
          "p99_ms": 2.0, "attempts_per_pod": 1.0, "peak_rss_mb": 40.0, "store": "sqlite", "transport": "in-process"}
    table = format_table([ok, {"workload": "Gang", "nodes": 5, "error": ["boom"]}]).splitlines()
    assert table[0].startswith("| workload | nodes | pods |")
    assert table[2] == "| SchedulingBasic | 5 | 6 | 6 | 10.0 | 1.0 | 2.0 | 1.0 |  |  | 40.0 | sqlite | in-process |"
    assert table[3] == "| Gang | 5 | failed: boom |"


def test_admission_bench_admits_every_workload_and_reports_admissions_per_s_and_cycle_costs() -> None:
    from bench.admission import run_admission_bench
    r = run_admission_bench(cqs=20, pending=400, grid=((2, 4), (50, 100)))
    assert r["workload"] == "Admission" and r["scheduled"] == r["pods"] == 400
    assert r["admissions_per_s"] > 0
    assert set(r["cycle_ms"]) == {"2cq_50pending", "2cq_100pending", "4cq_50pending", "4cq_100pending"}
