"""Prometheus metrics named and labelled as kube-scheduler names them
(pkg/scheduler/metrics/metrics.go), one registry per daemon.

SchedulerMetrics is the daemon's actors.metrics_sink.MetricsSink: the daemon hands
it to the Pipeline, and the actors record into it where upstream records:

- schedule_attempt(result, profile, seconds): the Scheduler, "scheduled" after Bind
  succeeds, "unschedulable" / "error" in its failure handler; seconds since the
  start of that attempt's scheduling cycle.
- set_pending_pods(counts): the Queue actor, whenever the queue's sizes change.
- extension_point(...): the Scheduler's timed Frameworks (ExtensionPointTimer), around PreFilter,
  PostFilter, PreScore, Score, Reserve, Unreserve, Permit, PreBind, Bind, PostBind
  (not Filter: it runs per node).
- plugin_execution(...): the same views, per plugin call, on every 10th cycle
  (upstream samples 10% of cycles).
- permit_wait(result, seconds): a binding cycle, when its pod's Permit wait ends.
- preemption_attempt() / preemption_victims(n): around PostFilter, when
  DefaultPreemption ran / when it evicted victims on its chosen node.
- batch_attempt(profile, result) / batch_cache_flushed(profile, reason): the
  Scheduler's opportunistic batching (framework/batching.py), as upstream's
  BatchAttemptStats / BatchCacheFlushed.

Every method is cheap and synchronous, called from the event loop's thread only
(transport.http.metric_cells keeps plain state, no locks).
`render()` gives the text exposition for GET /metrics.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Mapping

from prometheus_client import CollectorRegistry, Gauge, disable_created_metrics

from transport.http.kueue_metrics import KueueMetrics
from transport.http.metric_cells import CounterFamily, GaugeFamily, HistogramFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from actors.metrics_sink import ERROR, PENDING_QUEUES, SCHEDULED, UNSCHEDULABLE

CONTENT_TYPE = CONTENT_TYPE_LATEST
disable_created_metrics()  # kube-scheduler exposes no *_created series

SCHEDULE_RESULTS = (SCHEDULED, UNSCHEDULABLE, ERROR)


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """component-base metrics.ExponentialBuckets."""
    return [start * factor**i for i in range(count)]


class SchedulerMetrics:
    """The scheduler's metrics in their own CollectorRegistry (so two daemons in
    one process, as in tests, never share counters). The series the actors record
    per pod are transport.http.metric_cells families (plain state, no locks, no
    labels() per call); leader_election_master_status stays a prometheus_client
    Gauge (transport.ha sets it through labels())."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.schedule_attempts = CounterFamily(
            r, "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"])
        self.scheduling_attempt_duration = HistogramFamily(
            r, "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15))
        self.podgroup_schedule_attempts = CounterFamily(
            r, "scheduler_podgroup_schedule_attempts_total",
            "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could not "
            "be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"])
        self.podgroup_scheduling_attempt_duration = HistogramFamily(
            r, "scheduler_podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds",
            ["result", "profile"], buckets=exponential_buckets(0.001, 2, 15))
        self.podgroup_scheduling_algorithm_duration = HistogramFamily(
            r, "scheduler_podgroup_scheduling_algorithm_duration_seconds",
            "Pod group scheduling algorithm latency in seconds", buckets=exponential_buckets(0.001, 2, 15))
        self.leader_election_master_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates "
            "master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            ["name"], registry=r)
        self.kueue = KueueMetrics(r)  # Kueue's names, fed by the admission actor
        self.pending_pods = GaugeFamily(
            r, "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
            "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods "
            "that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable "
            "pods that the scheduler never attempted to schedule because they are gated.",
            ["queue"])
        self.framework_extension_point_duration = HistogramFamily(
            r, "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"], buckets=exponential_buckets(0.0001, 2, 12))
        self.plugin_execution_duration = HistogramFamily(
            r, "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"], buckets=exponential_buckets(0.00001, 1.5, 20))
        self.permit_wait_duration = HistogramFamily(
            r, "scheduler_permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            ["result"], buckets=exponential_buckets(0.001, 2, 15))
        self.preemption_attempts = CounterFamily(
            r, "scheduler_preemption_attempts_total", "Total preemption attempts in the cluster till now")
        self.preemption_victims_histogram = HistogramFamily(
            r, "scheduler_preemption_victims", "Number of selected preemption victims",
            buckets=exponential_buckets(1, 2, 7))
        self.failures_reused = CounterFamily(
            r, "ksched_scheduling_failures_reused_total",
            "Failed scheduling attempts that reused the known failure of a pod with the same signature in the "
            "same cluster state instead of running PreFilter, Filter and PostFilter again.",
            ["profile"])
        self.batch_attempts = CounterFamily(
            r, "scheduler_batch_attempts_total", "Counts of results when we attempt to use batching.",
            ["profile", "result"])
        self.batch_cache_flushed_total = CounterFamily(
            r, "scheduler_batch_cache_flushed_total", "Counts of cache flushes by reason.",
            ["profile", "reason"])
        self.server_rejections = CounterFamily(
            r, "ksched_server_rejections_total",
            "Requests and connections refused or slowed by a daemon limit (connections, "
            "unauthenticated, hello_size, not_hello, handshake_timeout, idle_timeout, in_flight, "
            "queued_frames, watches, frame_size, auth_failed, http_auth_failed, ws_auth_failed, "
            "ws_hello_timeout, auth_throttled, http_auth_throttled, ws_auth_throttled, http_connections, "
            "http_idle_evicted, http_idle_timeout).",
            ["limit"])
        for queue in PENDING_QUEUES:  # the four series exist from the start, at 0
            self.pending_pods.set((queue,), 0)
        # The per-cycle histograms' cells by their label values (a cycle observes six to
        # eight extension points): one dict lookup, then the cell's own observe.
        self._point_cells = self.framework_extension_point_duration.cells
        # The same cells, read by actors.framework_timing.ExtensionPointTimer, which observes
        # a label set already made in place and calls extension_point for a new one.
        self.extension_point_cells = self._point_cells
        self._plugin_cells = self.plugin_execution_duration.cells
        self._attempt_cells = self.scheduling_attempt_duration.cells
        self._attempt_counts = self.schedule_attempts.values

    # --- what the actors call ---------------------------------------------------------

    # The per-cycle recorders below find their cell without the family's call and write
    # their counter value in place (CounterFamily.inc, without the call), and observe in
    # place: HistogramCell.observe's two lines written out (the sum, then the bucket
    # bisect_left finds, none for NaN), a frame fewer for each of a pod's ~12 observations
    # (tests/transport/test_metric_cells.py checks them against observe). A Churn
    # completion records ~24 observations.

    def schedule_attempt(self, result: str, profile: str, duration_s: float) -> None:
        """One scheduling attempt ended: result is scheduled, unschedulable or error."""
        key = (result, profile)
        counts = self._attempt_counts
        counts[key] = counts.get(key, 0) + 1
        cell = self._attempt_cells.get(key)
        if cell is None:
            cell = self.scheduling_attempt_duration.cell(key)
        cell.sum += duration_s
        if duration_s == duration_s:
            cell.counts[bisect_left(cell.bounds, duration_s)] += 1

    def pod_group_attempt(self, result: str, profile: str, duration_s: float, algorithm_s: float | None) -> None:
        """One whole-group cycle ended (the scheduler_podgroup_* series, GenericWorkload's)."""
        self.podgroup_schedule_attempts.inc((result, profile))
        self.podgroup_scheduling_attempt_duration.observe((result, profile), duration_s)
        if algorithm_s is not None:
            self.podgroup_scheduling_algorithm_duration.observe((), algorithm_s)

    def set_pending_pods(self, counts: Mapping[str, int]) -> None:
        """Queue sizes by queue name (active, backoff, unschedulable, gated)."""
        values = self.pending_pods.values
        for queue, n in counts.items():
            values[(queue,)] = n

    def extension_point(self, extension_point: str, status: str, profile: str, duration_s: float) -> None:
        """All plugins of one extension point ran (status: the Code's name, e.g. Success)."""
        key = (extension_point, status, profile)
        cell = self._point_cells.get(key)
        if cell is None:
            cell = self.framework_extension_point_duration.cell(key)
        cell.sum += duration_s
        if duration_s == duration_s:
            cell.counts[bisect_left(cell.bounds, duration_s)] += 1

    def plugin_execution(self, plugin: str, extension_point: str, status: str, duration_s: float) -> None:
        key = (plugin, extension_point, status)
        cell = self._plugin_cells.get(key)
        if cell is None:
            cell = self.plugin_execution_duration.cell(key)
        cell.sum += duration_s
        if duration_s == duration_s:
            cell.counts[bisect_left(cell.bounds, duration_s)] += 1

    def permit_wait(self, result: str, duration_s: float) -> None:
        """A pod left the Permit waiting room: result is the final Code's name (Success, Unschedulable...)."""
        self.permit_wait_duration.observe((result,), duration_s)

    def preemption_attempt(self) -> None:
        """DefaultPreemption's PostFilter ran."""
        values = self.preemption_attempts.values
        values[()] = values[()] + 1

    def preemption_victims(self, victims: int) -> None:
        """Preemption evicted `victims` pods on the node it chose."""
        self.preemption_victims_histogram.observe((), victims)

    def failure_reused(self, profile: str) -> None:
        """A failed attempt reused a known failure (ksched's failure reuse)."""
        self.failures_reused.inc((profile,))

    def batch_attempt(self, profile: str, result: str) -> None:
        """Opportunistic batching: whether a hint was given and taken (framework/batching.py)."""
        values, key = self.batch_attempts.values, (profile, result)
        values[key] = values.get(key, 0) + 1

    def batch_cache_flushed(self, profile: str, reason: str) -> None:
        """Opportunistic batching could not use or keep its list, and why."""
        values, key = self.batch_cache_flushed_total.values, (profile, reason)
        values[key] = values.get(key, 0) + 1

    def server_rejection(self, limit: str) -> None:
        """The server refused (or held back) a client because of `limit`."""
        self.server_rejections.inc((limit,))

    # --- exposition -------------------------------------------------------------------

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def sample(self, name: str, labels: Mapping[str, str] | None = None) -> float | None:
        """One sample's current value (tests and `stats`)."""
        return self.registry.get_sample_value(name, dict(labels or {}))
