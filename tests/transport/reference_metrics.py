"""The reference for transport.http.metrics.SchedulerMetrics: the same sink on
prometheus_client's own Counter, Gauge and Histogram objects (the implementation
before transport.http.metric_cells). tests/transport/test_metric_cells.py drives both
with the same calls and asserts byte-identical exposition; the old-sink figures in
docs/performance.md were measured with it."""
from __future__ import annotations

from typing import Any, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from actors.metrics_sink import PENDING_QUEUES
from transport.http.kueue_metrics import KueueMetrics
from transport.http.metrics import exponential_buckets


class PrometheusClientMetrics:
    """SchedulerMetrics as it was before transport.http.metric_cells: prometheus_client's
    own Counter, Gauge and Histogram objects, labels() per call."""

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
        self.podgroup_schedule_attempts = Counter(
            "scheduler_podgroup_schedule_attempts_total",
            "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could not "
            "be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"], registry=r)
        self.podgroup_scheduling_attempt_duration = Histogram(
            "scheduler_podgroup_scheduling_attempt_duration_seconds", "Pod group scheduling attempt latency in seconds",
            ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self.podgroup_scheduling_algorithm_duration = Histogram(
            "scheduler_podgroup_scheduling_algorithm_duration_seconds",
            "Pod group scheduling algorithm latency in seconds", buckets=exponential_buckets(0.001, 2, 15), registry=r)
        self.leader_election_master_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates "
            "master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            ["name"], registry=r)
        self.kueue = KueueMetrics(r)  # Kueue's names, fed by the admission actor
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
        self.preemption_victims_histogram = Histogram(
            "scheduler_preemption_victims", "Number of selected preemption victims",
            buckets=exponential_buckets(1, 2, 7), registry=r)
        self.failures_reused = Counter(
            "ksched_scheduling_failures_reused_total",
            "Failed scheduling attempts that reused the known failure of a pod with the same signature in the "
            "same cluster state instead of running PreFilter, Filter and PostFilter again.",
            ["profile"], registry=r)
        self.batch_attempts = Counter(
            "scheduler_batch_attempts_total", "Counts of results when we attempt to use batching.",
            ["profile", "result"], registry=r)
        self.batch_cache_flushed_total = Counter(
            "scheduler_batch_cache_flushed_total", "Counts of cache flushes by reason.",
            ["profile", "reason"], registry=r)
        self.server_rejections = Counter(
            "ksched_server_rejections_total",
            "Requests and connections refused or slowed by a daemon limit (connections, "
            "unauthenticated, hello_size, not_hello, handshake_timeout, idle_timeout, in_flight, "
            "queued_frames, watches, frame_size, auth_failed, http_auth_failed, ws_auth_failed, "
            "ws_hello_timeout, auth_throttled, http_auth_throttled, ws_auth_throttled, http_connections, "
            "http_idle_evicted, http_idle_timeout).",
            ["limit"], registry=r)
        # One child per queue, looked up once: the Queue actor sets them as every pod comes
        # (prometheus_client's labels() costs more than the set itself).
        self._pending_by_queue = {q: self.pending_pods.labels(queue=q) for q in PENDING_QUEUES}
        for child in self._pending_by_queue.values():
            child.set(0)
        # Children of the per-cycle series by their label values, looked up once each (a
        # cycle observes six to eight extension points; labels() is most of each observation).
        self._point_children: dict[tuple[str, str, str], Any] = {}
        self._attempt_children: dict[tuple[str, str], tuple[Any, Any]] = {}

    # --- what the actors call ---------------------------------------------------------

    def schedule_attempt(self, result: str, profile: str, duration_s: float) -> None:
        """One scheduling attempt ended: result is scheduled, unschedulable or error."""
        children = self._attempt_children.get((result, profile))
        if children is None:
            children = self._attempt_children[(result, profile)] = (
                self.schedule_attempts.labels(result=result, profile=profile),
                self.scheduling_attempt_duration.labels(result=result, profile=profile))
        children[0].inc()
        children[1].observe(duration_s)

    def pod_group_attempt(self, result: str, profile: str, duration_s: float, algorithm_s: float | None) -> None:
        """One whole-group cycle ended (the scheduler_podgroup_* series, GenericWorkload's)."""
        self.podgroup_schedule_attempts.labels(result=result, profile=profile).inc()
        self.podgroup_scheduling_attempt_duration.labels(result=result, profile=profile).observe(duration_s)
        if algorithm_s is not None:
            self.podgroup_scheduling_algorithm_duration.observe(algorithm_s)

    def set_pending_pods(self, counts: Mapping[str, int]) -> None:
        """Queue sizes by queue name (active, backoff, unschedulable, gated)."""
        for queue, n in counts.items():
            child = self._pending_by_queue.get(queue)
            (child if child is not None else self.pending_pods.labels(queue=queue)).set(n)

    def extension_point(self, extension_point: str, status: str, profile: str, duration_s: float) -> None:
        """All plugins of one extension point ran (status: the Code's name, e.g. Success)."""
        key = (extension_point, status, profile)
        child = self._point_children.get(key)
        if child is None:
            child = self._point_children[key] = self.framework_extension_point_duration.labels(
                extension_point=extension_point, status=status, profile=profile)
        child.observe(duration_s)

    def plugin_execution(self, plugin: str, extension_point: str, status: str, duration_s: float) -> None:
        self.plugin_execution_duration.labels(
            plugin=plugin, extension_point=extension_point, status=status).observe(duration_s)

    def permit_wait(self, result: str, duration_s: float) -> None:
        """A pod left the Permit waiting room: result is the final Code's name (Success, Unschedulable...)."""
        self.permit_wait_duration.labels(result=result).observe(duration_s)

    def preemption_attempt(self) -> None:
        """DefaultPreemption's PostFilter ran."""
        self.preemption_attempts.inc()

    def preemption_victims(self, victims: int) -> None:
        """Preemption evicted `victims` pods on the node it chose."""
        self.preemption_victims_histogram.observe(victims)

    def failure_reused(self, profile: str) -> None:
        """A failed attempt reused a known failure (ksched's failure reuse)."""
        self.failures_reused.labels(profile=profile).inc()

    def batch_attempt(self, profile: str, result: str) -> None:
        """Opportunistic batching: whether a hint was given and taken (framework/batching.py)."""
        self.batch_attempts.labels(profile=profile, result=result).inc()

    def batch_cache_flushed(self, profile: str, reason: str) -> None:
        """Opportunistic batching could not use or keep its list, and why."""
        self.batch_cache_flushed_total.labels(profile=profile, reason=reason).inc()

    def server_rejection(self, limit: str) -> None:
        """The server refused (or held back) a client because of `limit`."""
        self.server_rejections.labels(limit=limit).inc()

    # --- exposition -------------------------------------------------------------------

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def sample(self, name: str, labels: Mapping[str, str] | None = None) -> float | None:
        """One sample's current value (tests and `stats`)."""
        return self.registry.get_sample_value(name, dict(labels or {}))
