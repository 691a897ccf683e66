"""The in-process bench records the daemon's metrics (a fresh SchedulerMetrics per
run, as `ksched serve` hands its Pipeline one); `--no-metrics` runs with NO_METRICS."""
from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import bench.gang as gang
from actors.metrics_sink import NO_METRICS
from bench.harness import WITH_METRICS, apply_tracked, measured_keys, set_up
from bench.measure import BindTracker
from bench.runner import run_bench
from bench.workloads import scheduling_basic
from transport.cli.main import build_parser
from transport.http.metrics import SchedulerMetrics

SCHEDULED = {"result": "scheduled", "profile": "default-scheduler"}


def bound_with_sink(with_metrics: bool) -> tuple[Any, int]:
    """SchedulingBasic on 3 nodes, its 4 measured pods bound; the run's sink and its binds."""
    seen: list[Any] = []

    async def run() -> int:
        w = scheduling_basic(3, 4)
        tracker = BindTracker(stall_seconds=30.0)
        async with set_up(w, "memory", tracker) as p:
            await apply_tracked(p.client.apply, w.measured, tracker)
            await tracker.wait(measured_keys(w), w.expected_bound)
            seen.append(p.metrics)
            return tracker.bound(measured_keys(w)) + w.init_pods

    switch = WITH_METRICS.set(with_metrics)
    try:
        binds = asyncio.run(run())
    finally:
        WITH_METRICS.reset(switch)
    return seen[0], binds


def test_an_in_process_run_records_every_bind_into_its_own_scheduler_metrics() -> None:
    first, binds = bound_with_sink(True)
    second, _ = bound_with_sink(True)
    assert isinstance(first, SchedulerMetrics) and first is not second
    assert first.sample("scheduler_schedule_attempts_total", SCHEDULED) == binds
    assert first.sample("scheduler_framework_extension_point_duration_seconds_count",
                        {"extension_point": "Bind", "status": "Success", "profile": "default-scheduler"}) == binds


def test_without_metrics_the_pipeline_gets_no_metrics() -> None:
    sink, binds = bound_with_sink(False)
    assert sink is NO_METRICS and binds > 0


def test_the_result_says_whether_metrics_were_recorded_and_binds_the_same_pods() -> None:
    on = run_bench("SchedulingBasic", nodes=3, pods=4, store="memory")
    off = run_bench("SchedulingBasic", nodes=3, pods=4, store="memory", metrics=False)
    assert (on["metrics"], off["metrics"]) == (True, False)
    assert (on["scheduled"], on["attempts"]) == (off["scheduled"], off["attempts"]) == (4, 4)
    assert WITH_METRICS.get() is True  # the switch is the run's, not the process's


def test_the_gang_bench_records_its_groups_into_the_daemons_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    sinks: list[Any] = []
    real = gang.bench_metrics

    def keep() -> Any:
        sinks.append(real())
        return sinks[-1]

    monkeypatch.setattr(gang, "bench_metrics", keep)
    result = run_bench("GangWorkload", nodes=3, pods=6, gang_size=3, store="memory")
    assert result["scheduled"] == 6 and result["metrics"] is True
    [sink] = sinks
    assert sink.sample("scheduler_podgroup_schedule_attempts_total", SCHEDULED) == 2


@pytest.mark.parametrize(("kwargs", "why"), [
    ({"tcp": True}, "the daemon always records"),
    ({"workload": "Admission"}, "no scheduler pipeline"),
], ids=["over tcp", "admission"])
def test_no_metrics_where_it_cannot_apply_is_refused_with_its_name(kwargs: dict, why: str) -> None:
    args = {"workload": "SchedulingBasic", "nodes": 2, "pods": 2, "metrics": False, **kwargs}
    with pytest.raises(ValueError, match=f"--no-metrics: .*{why}"):
        run_bench(**args)


def test_the_no_metrics_flag_reaches_the_run_and_its_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["bench", "SchedulingBasic", "--nodes", "2", "--pods", "2", "--store", "memory",
                                      "--no-metrics", "--json"])
    assert args.func(args) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (result["metrics"], result["scheduled"]) == (False, 2)
