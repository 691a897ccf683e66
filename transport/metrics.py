"""Prometheus metrics named and labelled as kube-scheduler names them
(pkg/scheduler/metrics/metrics.go), one registry per daemon.

The actors record through the methods of SchedulerMetrics; they never touch
prometheus_client themselves. Every method is cheap and synchronous, safe to call
from the event loop. `render()` gives the text exposition for GET /metrics.

    m = SchedulerMetrics()
    m.schedule_attempt("scheduled", "default-scheduler", 0.0021)
    m.set_pending_pods({"active": 3, "backoff": 1, "unschedulable": 0, "gated": 0})

Where upstream records each one (for the actors, once they take a `metrics`):
- schedule_attempt(result, profile, seconds): "scheduled" after Bind succeeds,
  "unschedulable" / "error" in the failure handler; seconds since the start of
  that pod's scheduling cycle.
- set_pending_pods(counts): whenever the queue's sizes change.
- extension_point(...): the runtime, around PreFilter, PostFilter, PreScore, Score,
  Reserve, Permit, PreBind, Bind, PostBind (not Filter: it runs per node).
  Until the runtime does it, instrument_framework() wraps a Framework instance.
- plugin_execution(...): the runtime, per plugin call (upstream samples 10% of cycles).
- permit_wait(result, seconds): when a pod leaves the Permit waiting room.
- preemption_attempt(victims): after DefaultPreemption's PostFilter ran.
Until the Scheduler records attempts and preemptions itself, MetricsBridge derives
them from its counters at scrape time (pass count_attempts=False once it does).
"""
from __future__ import annotations

import functools
import time
from typing import Any, Callable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

CONTENT_TYPE = CONTENT_TYPE_LATEST
disable_created_metrics()  # kube-scheduler exposes no *_created series

SCHEDULE_RESULTS = ("scheduled", "unschedulable", "error")
PENDING_QUEUES = ("active", "backoff", "unschedulable", "gated")


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """component-base metrics.ExponentialBuckets."""
    return [start * factor**i for i in range(count)]


class SchedulerMetrics:
    """The scheduler's metrics in their own CollectorRegistry (so two daemons in
    one process, as in tests, never share counters)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"], registry=r)
        self.scheduling_attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
            "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods "
            "that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable "
            "pods that the scheduler never attempted to schedule because they are gated.",
            ["queue"], registry=r)
        self.framework_extension_point_duration = Histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"], buckets=exponential_buckets(0.0001, 2, 12), registry=r)
        self.plugin_execution_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"], buckets=exponential_buckets(0.00001, 1.5, 20), registry=r)
        self.permit_wait_duration = Histogram(
            "scheduler_permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            ["result"], buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts_total", "Total preemption attempts in the cluster till now", registry=r)
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims", "Number of selected preemption victims",
            buckets=exponential_buckets(1, 2, 7), registry=r)
        for q in PENDING_QUEUES:
            self.pending_pods.labels(queue=q).set(0)

    # --- what the actors call ---------------------------------------------------------

    def schedule_attempt(self, result: str, profile: str, duration_s: float) -> None:
        """One scheduling attempt ended: result is scheduled, unschedulable or error."""
        self.schedule_attempts.labels(result=result, profile=profile).inc()
        self.scheduling_attempt_duration.labels(result=result, profile=profile).observe(duration_s)

    def set_pending_pods(self, counts: Mapping[str, int]) -> None:
        """Queue sizes by queue name (active, backoff, unschedulable, gated)."""
        for queue, n in counts.items():
            self.pending_pods.labels(queue=queue).set(n)

    def extension_point(self, extension_point: str, status: str, profile: str, duration_s: float) -> None:
        """All plugins of one extension point ran (status: the Code's name, e.g. Success)."""
        self.framework_extension_point_duration.labels(
            extension_point=extension_point, status=status, profile=profile).observe(duration_s)

    def plugin_execution(self, plugin: str, extension_point: str, status: str, duration_s: float) -> None:
        self.plugin_execution_duration.labels(
            plugin=plugin, extension_point=extension_point, status=status).observe(duration_s)

    def permit_wait(self, result: str, duration_s: float) -> None:
        """A pod left the Permit waiting room: result is the final Code's name (Success, Unschedulable...)."""
        self.permit_wait_duration.labels(result=result).observe(duration_s)

    def preemption_attempt(self, victims: int) -> None:
        """PostFilter tried preemption and chose `victims` pods to evict (0 when it found none)."""
        self.preemption_attempts.inc()
        self.preemption_victims.observe(victims)

    # --- exposition -------------------------------------------------------------------

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def sample(self, name: str, labels: Mapping[str, str] | None = None) -> float | None:
        """One sample's current value (tests and `stats`)."""
        return self.registry.get_sample_value(name, dict(labels or {}))


class MetricsBridge:
    """Pulls what the actors count into SchedulerMetrics at scrape time, for the
    numbers the actors do not record themselves yet: queue sizes (always), and
    scheduling attempts from the Scheduler's counters (by delta, labelled with the
    first profile, since those counters are not split by profile)."""

    def __init__(self, metrics: SchedulerMetrics, pipeline: Any, *, count_attempts: bool = True) -> None:
        self.metrics = metrics
        self.pipeline = pipeline
        self.count_attempts = count_attempts
        self._seen = {"scheduled": 0, "unschedulable": 0}
        self._victims_seen = 0

    async def refresh(self) -> None:
        p = self.pipeline
        counts = await p.pending_counts()
        self.metrics.set_pending_pods({q: counts.get(q, 0) for q in PENDING_QUEUES})
        if not self.count_attempts:
            return
        stats = p.scheduler.stats
        profile = next(iter(p.frameworks), "default-scheduler")
        for result, total in (("scheduled", stats.scheduled), ("unschedulable", stats.failed)):
            delta = total - self._seen[result]
            if delta > 0:
                self.metrics.schedule_attempts.labels(result=result, profile=profile).inc(delta)
                self._seen[result] = total
        victims = len(p.scheduler.preempted)
        if victims > self._victims_seen:
            self.metrics.preemption_victims.observe(victims - self._victims_seen)
            self._victims_seen = victims


# Framework methods that upstream times as a whole extension point (Filter is not
# among them: it runs per node), and where each one's Status is in its result.
_TIMED_POINTS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "run_pre_filter": ("PreFilter", lambda r: r[1]),
    "run_post_filter": ("PostFilter", lambda r: r[1]),
    "run_pre_score": ("PreScore", lambda r: r),
    "run_score": ("Score", lambda r: r[1]),
    "run_reserve": ("Reserve", lambda r: r),
    "run_permit": ("Permit", lambda r: r[0]),
    "run_post_bind": ("PostBind", lambda r: None),
}
_TIMED_ASYNC_POINTS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "run_pre_bind": ("PreBind", lambda r: r),
    "run_bind": ("Bind", lambda r: r),
}


def _code_name(status: Any) -> str:
    code = getattr(status, "code", None)
    return getattr(code, "name", "Success") if code is not None else "Success"


def instrument_framework(fwk: Any, metrics: SchedulerMetrics, timer: Callable[[], float] = time.perf_counter) -> None:
    """Record scheduler_framework_extension_point_duration_seconds for one profile's
    Framework by wrapping its run_* methods on the instance (the runtime itself has no
    metrics hook yet). Idempotent per instance."""
    if getattr(fwk, "_ksched_instrumented", False):
        return
    profile = fwk.profile_name

    def wrap_sync(point: str, status_of: Callable[[Any], Any], fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = timer()
            result = fn(*args, **kwargs)
            metrics.extension_point(point, _code_name(status_of(result)), profile, timer() - start)
            return result
        return timed

    def wrap_async(point: str, status_of: Callable[[Any], Any], fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = timer()
            result = await fn(*args, **kwargs)
            metrics.extension_point(point, _code_name(status_of(result)), profile, timer() - start)
            return result
        return timed

    for attr, (point, status_of) in _TIMED_POINTS.items():
        setattr(fwk, attr, wrap_sync(point, status_of, getattr(fwk, attr)))
    for attr, (point, status_of) in _TIMED_ASYNC_POINTS.items():
        setattr(fwk, attr, wrap_async(point, status_of, getattr(fwk, attr)))
    fwk._ksched_instrumented = True
