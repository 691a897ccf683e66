"""The actors record metrics where upstream records them, into the sink the
Pipeline was given (a recording sink here; transport.http.metrics in the daemon)."""
from __future__ import annotations

import random
from collections import Counter
from typing import Any, Mapping

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from tests.actors.helpers import config, node, pod, profile, recording_registry


class RecordingSink:
    """Every call, in order, as (method, args...)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def schedule_attempt(self, result: str, profile: str, duration_s: float) -> None:
        self.calls.append(("schedule_attempt", result, profile, duration_s))

    def pod_group_attempt(self, result: str, profile: str, duration_s: float, algorithm_s: float | None) -> None:
        self.calls.append(("pod_group_attempt", result, profile))

    def set_pending_pods(self, counts: Mapping[str, int]) -> None:
        self.calls.append(("set_pending_pods", dict(counts)))

    def extension_point(self, extension_point: str, status: str, profile: str, duration_s: float) -> None:
        self.calls.append(("extension_point", extension_point, status, profile))

    def plugin_execution(self, plugin: str, extension_point: str, status: str, duration_s: float) -> None:
        self.calls.append(("plugin_execution", plugin, extension_point, status))

    def permit_wait(self, result: str, duration_s: float) -> None:
        self.calls.append(("permit_wait", result, duration_s))

    def preemption_attempt(self) -> None:
        self.calls.append(("preemption_attempt",))

    def preemption_victims(self, victims: int) -> None:
        self.calls.append(("preemption_victims", victims))

    def failure_reused(self, profile: str) -> None:
        self.calls.append(("failure_reused", profile))

    def batch_attempt(self, profile: str, result: str) -> None:
        self.calls.append(("batch_attempt", profile, result))

    def batch_cache_flushed(self, profile: str, reason: str) -> None:
        self.calls.append(("batch_cache_flushed", profile, reason))

    def of(self, method: str) -> list[tuple[Any, ...]]:
        return [c[1:] for c in self.calls if c[0] == method]


def labelled(name: str, cpu: str = "1", **labels: str) -> dict:
    return pod(name, cpu=cpu, memory="10Mi", labels=labels)


async def test_each_attempt_is_recorded_once_with_its_result_profile_and_cycle_duration() -> None:
    sink = RecordingSink()
    clock = FakeClock(100.0)
    async with Pipeline(config(profile(reserve=False)), clock=clock, registry=recording_registry([]),
                        metrics=sink) as p:
        await p.client.apply([node("n0", cpu="3")])
        await p.client.apply([labelled("a"), labelled("b"), labelled("too-big", cpu="3")])
        await p.settle()
        # a waits at Permit for 4 s; its attempt ends when Bind succeeds.
        await p.client.apply([labelled("waits", cpu="100m", wait="g", timeout="30")])
        await p.settle()
        clock.advance(4)
        await p.client.apply([labelled("releaser", cpu="100m", release="g")])
        await p.settle()
    attempts = sink.of("schedule_attempt")
    assert sorted(attempts) == [
        ("scheduled", "default-scheduler", 0.0),
        ("scheduled", "default-scheduler", 0.0),
        ("scheduled", "default-scheduler", 0.0),
        ("scheduled", "default-scheduler", 4.0),
        ("unschedulable", "default-scheduler", 0.0),
    ]
    assert sink.of("permit_wait") == [("Success", 4.0)]


async def test_a_permit_timeout_is_a_rejected_wait_of_exactly_the_timeout() -> None:
    sink = RecordingSink()
    clock = FakeClock()
    async with Pipeline(config(profile(reserve=False)), clock=clock, registry=recording_registry([]),
                        metrics=sink) as p:
        await p.client.apply([node("n0")])
        await p.client.apply([labelled("w", wait="g", timeout="7")])
        await p.settle()
        clock.advance(7)
        await p.settle()
    assert sink.of("permit_wait") == [("Unschedulable", 7.0)]
    assert ("unschedulable", "default-scheduler", 7.0) in sink.of("schedule_attempt")


async def test_extension_points_are_timed_with_their_status_and_filter_is_not() -> None:
    sink = RecordingSink()
    async with Pipeline(config(profile()), clock=FakeClock(), registry=recording_registry([]), metrics=sink) as p:
        await p.client.apply([node("n0", cpu="2")])
        await p.client.apply([labelled("fits", cpu="1"), labelled("denied", cpu="100m", deny="yes")])
        await p.settle()
    points = Counter((point, status) for point, status, _ in sink.of("extension_point"))
    results = Counter(result for result, _, _ in sink.of("schedule_attempt"))
    assert results["scheduled"] == 1 and results["unschedulable"] >= 1  # denied is retried once fits binds
    attempts = results["scheduled"] + results["unschedulable"]
    assert points[("PreFilter", "Success")] == points[("Reserve", "Success")] == attempts
    assert points[("Permit", "Unschedulable")] == points[("Unreserve", "Success")] == results["unschedulable"]
    for point in ("Permit", "PreBind", "Bind", "PostBind"):
        assert points[(point, "Success")] == 1, point
    assert not any(point == "Filter" for point, _ in points)
    assert {prof for _, _, prof in sink.of("extension_point")} == {"default-scheduler"}


async def test_plugin_durations_are_sampled_on_the_first_and_every_tenth_cycle_after() -> None:
    sink = RecordingSink()
    async with Pipeline(config(profile(reserve=False)), clock=FakeClock(), registry=recording_registry([]),
                        metrics=sink) as p:
        await p.client.apply([node("n0", cpu="8")])
        await p.client.apply([labelled(f"p{i:02d}", cpu="100m") for i in range(12)])
        await p.settle()
    runs = Counter(sink.of("plugin_execution"))
    # cycles 1 and 11, each over the one node
    assert runs[("NodeResourcesFit", "Filter", "Success")] == 2
    assert runs[("NodeResourcesFit", "PreFilter", "Success")] == 2
    assert runs[("WaitPermit", "Permit", "Success")] == 2
    assert runs[("DefaultBinder", "Bind", "Success")] == 2
    assert len(sink.of("schedule_attempt")) == 12


async def preempt_two_for_high(p: Pipeline) -> None:
    """Two low pods fill n0; a high one preempts both and binds there."""
    await p.client.apply([node("n0", cpu="2")])
    await p.client.apply([pod("low-a", cpu="1", priority=0), pod("low-b", cpu="1", priority=0)])
    await p.run_until_quiescent(max_seconds=5)
    await p.client.apply([pod("high", cpu="2", priority=100)])
    await p.run_until_quiescent(max_seconds=30)
    assert p.store.peek("Pod", "default", "high").node_name == "n0"


async def test_preemption_counts_the_attempt_and_the_victims_it_evicted() -> None:
    sink = RecordingSink()
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1), metrics=sink) as p:
        await preempt_two_for_high(p)
    assert sink.of("preemption_attempt") == [()]
    assert sink.of("preemption_victims") == [(2,)]


async def test_pending_pods_follow_the_queue() -> None:
    sink = RecordingSink()
    async with Pipeline(config(profile(reserve=False)), clock=FakeClock(), registry=recording_registry([]),
                        metrics=sink) as p:
        await p.client.apply([node("n0", cpu="1")])
        await p.client.apply([labelled("too-big", cpu="2")])
        await p.settle()
        assert sink.of("set_pending_pods")[-1] == ({"active": 0, "backoff": 0, "unschedulable": 1, "gated": 0},)
        await p.client.delete("Pod", "default", "too-big")
        await p.settle()
    assert sink.of("set_pending_pods")[-1] == ({"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0},)


async def test_a_preemption_attempt_is_counted_on_cycles_whose_plugins_are_not_timed() -> None:
    """Whether DefaultPreemption ran is PostFilter's own result: with plugin timing
    never sampled (no proxy in front of any plugin) the attempt is still counted."""
    sink = RecordingSink()
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1), metrics=sink) as p:
        p.scheduler.plugin_sample_every = 10**9
        p.scheduler.stats.attempts = 1  # the first cycle would be sampled: start past it
        await preempt_two_for_high(p)
    assert sink.of("plugin_execution") == []
    assert sink.of("preemption_attempt") == [()]


async def test_opportunistic_batching_counts_its_attempts_and_flushes_as_upstream_does() -> None:
    from tests.framework.test_batching import NO_DEFAULT_SPREAD
    from transport.http.metrics import SchedulerMetrics

    sink = RecordingSink()
    alloc = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    nodes = [{"kind": "Node", "metadata": {"name": f"n{i}"}, "status": {"capacity": alloc, "allocatable": alloc}}
             for i in range(3)]

    def saturating(name: str, sig: str) -> dict:
        return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": {"signature": sig}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}]}}

    async with Pipeline(NO_DEFAULT_SPREAD, clock=FakeClock(), metrics=sink) as p:
        await p.client.apply(nodes)
        for name, sig in (("a", "x"), ("b", "x"), ("c", "y")):  # one at a time: one cycle each, in order
            await p.client.apply([saturating(name, sig)])
            await p.settle()
    assert sink.of("batch_attempt") == [("default-scheduler", "no_hint"), ("default-scheduler", "hint_used"),
                                        ("default-scheduler", "no_hint")]
    assert sink.of("batch_cache_flushed") == [("default-scheduler", "pod_incompatible"),
                                              ("default-scheduler", "empty_list")]
    prom = SchedulerMetrics()
    prom.batch_attempt("default-scheduler", "hint_used")
    prom.batch_cache_flushed("default-scheduler", "expired")
    text = prom.render().decode() if isinstance(prom.render(), bytes) else prom.render()
    assert 'scheduler_batch_attempts_total{profile="default-scheduler",result="hint_used"} 1.0' in text
    assert 'scheduler_batch_cache_flushed_total{profile="default-scheduler",reason="expired"} 1.0' in text


async def test_a_pipeline_that_records_no_metrics_runs_its_profiles_untimed_and_one_with_a_sink_timed() -> None:
    async with Pipeline(config(profile()), clock=FakeClock(), registry=recording_registry([])) as p:
        own = p.scheduler.frameworks["default-scheduler"]
        assert p.scheduler.views["default-scheduler"] == (own, own)
        await p.client.apply([node("n0", cpu="2")])
        await p.client.apply([labelled("fits", cpu="1")])
        await p.settle()
        assert p.store.peek("Pod", "default", "fits").node_name == "n0"
    sink = RecordingSink()
    async with Pipeline(config(profile()), clock=FakeClock(), registry=recording_registry([]), metrics=sink) as p:
        own = p.scheduler.frameworks["default-scheduler"]
        plain, sampled = p.scheduler.views["default-scheduler"]
        assert plain is not own and sampled is not own and plain is not sampled
