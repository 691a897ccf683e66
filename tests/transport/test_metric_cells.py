"""SchedulerMetrics on transport.http.metric_cells renders exactly what the same
sink on prometheus_client's own objects renders (tests/transport/reference_metrics.py),
for any sequence of recordings: GET /metrics and get_sample_value are unchanged."""
from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from tests.transport.reference_metrics import PrometheusClientMetrics
from transport.http.metric_cells import CounterFamily, GaugeFamily, HistogramCell, HistogramFamily
from transport.http.metrics import SchedulerMetrics

WORDS = st.sampled_from(["default-scheduler", "Success", "Unschedulable", "Error", "scheduled", "a\"b\\c\nd",
                         "NodeResourcesFit", "PreFilter", "", "ünïcode"])
SECONDS = st.one_of(st.floats(min_value=0, max_value=100, allow_nan=False),
                    st.sampled_from([0.0, 1e-05, 0.0001, 0.001, 0.002, 0.512, 16.384, 1e9]))

CALLS = st.one_of(
    st.tuples(st.just("schedule_attempt"), WORDS, WORDS, SECONDS),
    st.tuples(st.just("pod_group_attempt"), WORDS, WORDS, SECONDS, st.none() | SECONDS),
    st.tuples(st.just("set_pending_pods"), st.dictionaries(st.sampled_from(["active", "backoff", "gated", "x"]),
                                                           st.integers(0, 10**6))),
    st.tuples(st.just("extension_point"), WORDS, WORDS, WORDS, SECONDS),
    st.tuples(st.just("plugin_execution"), WORDS, WORDS, WORDS, SECONDS),
    st.tuples(st.just("permit_wait"), WORDS, SECONDS),
    st.tuples(st.just("preemption_attempt")),
    st.tuples(st.just("preemption_victims"), st.integers(0, 300)),
    st.tuples(st.just("failure_reused"), WORDS),
    st.tuples(st.just("batch_attempt"), WORDS, WORDS),
    st.tuples(st.just("batch_cache_flushed"), WORDS, WORDS),
    st.tuples(st.just("server_rejection"), WORDS),
)


def test_a_fresh_sink_renders_what_prometheus_client_objects_render() -> None:
    assert SchedulerMetrics().render() == PrometheusClientMetrics().render()


@settings(max_examples=150, deadline=None)
@given(st.lists(CALLS, max_size=60))
def test_any_recordings_render_byte_identical_exposition_and_samples(calls: list[tuple]) -> None:
    ours, theirs = SchedulerMetrics(), PrometheusClientMetrics()
    for name, *args in calls:
        getattr(ours, name)(*args)
        getattr(theirs, name)(*args)
    assert ours.render() == theirs.render()
    for family in theirs.registry.collect():
        for s in family.samples:
            assert ours.sample(s.name, s.labels) == theirs.sample(s.name, s.labels)


ANY_VALUE = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6))
BUCKETS = st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=12,
                   unique=True).map(sorted)
LABEL_SETS = st.lists(st.tuples(st.sampled_from(["x", "y", "z"]), st.sampled_from(["p", "q"])), max_size=30)


@settings(max_examples=150, deadline=None)
@given(BUCKETS, st.lists(st.tuples(st.sampled_from(["x", "y", "z"]), st.sampled_from(["p", "q"]), ANY_VALUE),
                         max_size=40))
def test_a_histogram_family_collects_what_a_histogram_does_for_any_buckets_and_values(
        buckets: list[float], observations: list[tuple[str, str, float]]) -> None:
    mine, theirs = CollectorRegistry(), CollectorRegistry()
    family = HistogramFamily(mine, "h_seconds", "help", ["a", "b"], buckets=buckets)
    reference = Histogram("h_seconds", "help", ["a", "b"], buckets=buckets, registry=theirs)
    plain = HistogramFamily(mine, "plain", "no labels", buckets=buckets)
    plain_reference = Histogram("plain", "no labels", buckets=buckets, registry=theirs)
    for a, b, value in observations:
        family.observe((a, b), value)
        reference.labels(a=a, b=b).observe(value)
        plain.observe((), value)
        plain_reference.observe(value)
    assert generate_latest(mine) == generate_latest(theirs)


@settings(max_examples=100, deadline=None)
@given(LABEL_SETS, st.lists(st.integers(0, 10**9), max_size=30))
def test_counter_and_gauge_families_collect_what_counter_and_gauge_do(
        label_sets: list[tuple[str, str]], amounts: list[int]) -> None:
    mine, theirs = CollectorRegistry(), CollectorRegistry()
    counter, counter_ref = CounterFamily(mine, "c_total", "c", ["a", "b"]), Counter("c_total", "c", ["a", "b"],
                                                                                   registry=theirs)
    gauge, gauge_ref = GaugeFamily(mine, "g", "g", ["a", "b"]), Gauge("g", "g", ["a", "b"], registry=theirs)
    bare, bare_ref = CounterFamily(mine, "bare", "bare"), Counter("bare", "bare", registry=theirs)
    for (a, b), amount in zip(label_sets, amounts + [1] * len(label_sets)):
        counter.inc((a, b), amount)
        counter_ref.labels(a, b).inc(amount)
        gauge.set((a, b), amount)
        gauge_ref.labels(a, b).set(amount)
        bare.inc()
        bare_ref.inc()
    assert generate_latest(mine) == generate_latest(theirs)


def test_a_nan_adds_to_the_sum_and_to_no_bucket_as_prometheus_client_does() -> None:
    registry = CollectorRegistry()
    family = HistogramFamily(registry, "h", "h", buckets=[1.0])
    family.observe((), math.nan)
    assert registry.get_sample_value("h_count") == 0.0
    assert math.isnan(registry.get_sample_value("h_sum"))


def test_a_family_name_taken_twice_in_one_registry_is_refused() -> None:
    registry = CollectorRegistry(auto_describe=True)
    HistogramFamily(registry, "h", "h", buckets=[1.0])
    try:
        Histogram("h", "again", buckets=[1.0], registry=registry)
    except ValueError as e:
        assert "Duplicated timeseries" in str(e)
    else:
        raise AssertionError("a second h was registered")


# The per-cycle recorders observe in place (HistogramCell.observe written out): for any
# value, a NaN, an infinity and the buckets' own bounds among them, their cells hold
# what observe would have made of the same values, in the same order.
IN_PLACE = st.one_of(ANY_VALUE, st.sampled_from([0.0, -0.0, 1e-05, 0.001, 0.002, 16.384, math.inf, -math.inf,
                                                 math.nan]))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["schedule_attempt", "extension_point", "plugin_execution"]),
                          st.sampled_from(["a", "b"]), IN_PLACE), max_size=40))
def test_the_in_place_recorders_keep_what_observe_keeps(calls: list[tuple[str, str, float]]) -> None:
    sink = SchedulerMetrics()
    families = {"schedule_attempt": sink.scheduling_attempt_duration,
                "extension_point": sink.framework_extension_point_duration,
                "plugin_execution": sink.plugin_execution_duration}
    expected: dict[tuple[str, tuple[str, ...]], HistogramCell] = {}
    for name, word, value in calls:
        args = (word, "x", value) if name == "schedule_attempt" else (word, "y", "z", value)
        getattr(sink, name)(*args)
        family = families[name]
        key = (name, tuple(args[:-1]))
        expected.setdefault(key, HistogramCell(family.bounds)).observe(value)
    for (name, labels), cell in expected.items():
        got = families[name].cells[labels]
        assert got.counts == cell.counts
        assert repr(got.sum) == repr(cell.sum)  # the same float, NaN and signs included


DOOR_RUNS = st.lists(st.tuples(
    st.sampled_from(["PreFilter", "Score", "Reserve", "Permit", "PreBind", "Bind"]),
    st.sampled_from([None, "Success", "Unschedulable", "Error", "Wait", "Skip"]),
    st.sampled_from(["default-scheduler", "other"]),
    st.booleans(),  # the coroutine door (run_async)
    st.one_of(SECONDS, st.just(math.nan), st.just(math.inf))), max_size=40)


@settings(max_examples=100, deadline=None)
@given(DOOR_RUNS)
def test_the_timer_observing_the_sink_s_cells_in_place_renders_what_the_sink_s_calls_render(runs) -> None:
    """ExtensionPointTimer observes a label set the sink already has in place (its cells)
    and calls extension_point for a new one: /metrics is what calling the reference
    sink every time renders, for any doors, statuses, profiles and durations."""
    import asyncio

    from actors.framework_timing import ExtensionPointTimer
    from framework.interface import Code, Status
    from framework.runtime.timing import status_itself

    ours, theirs = SchedulerMetrics(), PrometheusClientMetrics()
    for point, code, profile, is_async, seconds in runs:
        clock = iter([0.0, seconds])
        timer = ExtensionPointTimer(ours, profile, lambda: next(clock))
        result = None if code is None else Status(Code[code])
        if is_async:
            async def door() -> Status | None:
                return result
            asyncio.run(timer.run_async(point, status_itself, door))
        else:
            timer.run(point, status_itself, lambda: result)
        theirs.extension_point(point, "Success" if code is None else code, profile, seconds - 0.0)
    assert ours.render() == theirs.render()


def test_the_timer_calls_the_sink_only_for_a_label_set_s_first_observation() -> None:
    from actors.framework_timing import ExtensionPointTimer
    from framework.runtime.timing import status_itself

    class Counting(SchedulerMetrics):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def extension_point(self, *args) -> None:  # type: ignore[override]
            self.calls += 1
            super().extension_point(*args)

    sink = Counting()
    timer = ExtensionPointTimer(sink, "p", lambda: 0.001)
    for _ in range(3):
        timer.run("Reserve", status_itself, lambda: None)
    assert sink.calls == 1
    assert sink.sample("scheduler_framework_extension_point_duration_seconds_count",
                       {"extension_point": "Reserve", "status": "Success", "profile": "p"}) == 3.0
