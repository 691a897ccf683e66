"""The whole-group cycle records upstream 1.36's scheduler_podgroup_* series (result and
profile labels, 1 ms..16 s buckets; a group that waits on its preemption as
waiting_on_preemption) and GET /metrics exposes them: through the real actor pipeline
and the real HTTP app on a loopback socket."""
from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from tests.gang.test_group_cycle_member_preemption import GATE_OFF, one_gang_cycle
from tests.gang.test_group_cycle_pipeline import START, gang, member, nodes, placed
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


@pytest.mark.parametrize("gates", [GATE_OFF, {}], ids=["members-preempt-each", "group-step-preempts"])
async def test_a_group_cycle_that_waits_on_its_preemption_is_counted_as_waiting_on_preemption(gates: dict) -> None:
    # upstream 1.36's submitPodGroupAlgorithmResult records PodGroupWaitingOnPreemption,
    # not PodGroupUnschedulable, when the rejected group waits on a preemption it started
    metrics = SchedulerMetrics()
    async with Pipeline(gates, clock=FakeClock(START), metrics=metrics) as p:
        first = await one_gang_cycle(p, members=3, cpu=2)
        assert first.preemptions  # the first cycle preempted; the next one placed the gang
        await placed(p)
        text = await scrape(metrics)
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}
    attempts = {dict(labels)["result"]: v for (name, labels), v in samples.items()
                if name == "scheduler_podgroup_schedule_attempts_total"}
    assert attempts == {"waiting_on_preemption": 1, "scheduled": 1}
    assert samples[("scheduler_podgroup_scheduling_attempt_duration_seconds_count",
                    (("profile", PROFILE), ("result", "waiting_on_preemption")))] == 1
