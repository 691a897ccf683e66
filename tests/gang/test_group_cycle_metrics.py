"""The whole-group cycle records upstream 1.36's scheduler_podgroup_* series (result and
profile labels, 1 ms..16 s buckets) and GET /metrics exposes them: through the real
actor pipeline and the real HTTP app on a loopback socket."""
from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from tests.gang.test_group_cycle_pipeline import START, gang, member, nodes
from tests.transport.test_metrics_series import scrape
from transport.http.metrics import SchedulerMetrics

PROFILE = "default-scheduler"


async def test_one_scheduled_and_one_unschedulable_group_cycle_are_counted_with_their_durations_on_metrics() -> None:
    metrics = SchedulerMetrics()
    async with Pipeline(clock=FakeClock(START), metrics=metrics) as p:
        await p.client.apply(nodes(4, 4))
        await p.client.apply([gang("fits", 2), gang("big", 3)])
        await p.client.apply([member(f"f{i}", 2, "fits") for i in range(2)])
        await p.run_until_quiescent(max_seconds=5)
        await p.client.apply([member(f"b{i}", 3, "big") for i in range(3)])
        await p.run_until_quiescent(max_seconds=1)  # one cycle, before the backoff ends
        text = await scrape(metrics)
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}

    def value(name: str, **labels: str) -> float | None:
        return samples.get((name, tuple(sorted(labels.items()))))

    assert value("scheduler_podgroup_schedule_attempts_total", profile=PROFILE, result="scheduled") == 1
    assert value("scheduler_podgroup_schedule_attempts_total", profile=PROFILE, result="unschedulable") == 1
    assert value("scheduler_podgroup_scheduling_attempt_duration_seconds_count",
                 profile=PROFILE, result="unschedulable") == 1
    assert value("scheduler_podgroup_scheduling_attempt_duration_seconds_bucket",
                 profile=PROFILE, result="scheduled", le="16.384") == 1
    assert value("scheduler_podgroup_scheduling_algorithm_duration_seconds_count") == 2
