"""Where the actors record metrics: the MetricsSink protocol and a no-op default.

The actors record at the points upstream records (pkg/scheduler/schedule_one.go,
framework/runtime/framework.go, the scheduling queue, DefaultPreemption); the
daemon passes transport.http.metrics.SchedulerMetrics, tests and the conformance runner
pass nothing and get NO_METRICS. Every method is synchronous, cheap and called on
the event loop; none may raise.
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol

# scheduler_schedule_attempts_total's result label.
SCHEDULED, UNSCHEDULABLE, ERROR = "scheduled", "unschedulable", "error"
# scheduler_podgroup_schedule_attempts_total's fourth result: a pod group whose cycle
# ended unschedulable but waiting on a preemption it started (upstream's
# PodGroupWaitingOnPreemption).
WAITING_ON_PREEMPTION = "waiting_on_preemption"
PENDING_QUEUES = ("active", "backoff", "unschedulable", "gated")


class MetricsSink(Protocol):
    def schedule_attempt(self, result: str, profile: str, duration_s: float) -> None:
        """One scheduling attempt ended (scheduled after Bind, unschedulable or error
        in the failure handler); duration from the start of its scheduling cycle."""
        ...

    def pod_group_attempt(self, result: str, profile: str, duration_s: float, algorithm_s: float | None) -> None:
        """One whole-group cycle ended (upstream's scheduler_podgroup_* series): result
        scheduled, unschedulable or error; duration from the start of the cycle; the
        placement's own time (None when no placement ran)."""
        ...

    def set_pending_pods(self, counts: Mapping[str, int]) -> None:
        """The queue's sizes changed: counts by active, backoff, unschedulable, gated."""
        ...

    def extension_point(self, extension_point: str, status: str, profile: str, duration_s: float) -> None:
        """All plugins of one extension point ran; status is the Code's name."""
        ...

    def plugin_execution(self, plugin: str, extension_point: str, status: str, duration_s: float) -> None:
        """One plugin ran at one extension point (sampled cycles only)."""
        ...

    def permit_wait(self, result: str, duration_s: float) -> None:
        """A pod parked at Permit was decided; result is the final Code's name."""
        ...

    def preemption_attempt(self) -> None:
        """DefaultPreemption's PostFilter ran."""
        ...

    def preemption_victims(self, victims: int) -> None:
        """Preemption chose a node and evicted `victims` pods there."""
        ...

    def failure_reused(self, profile: str) -> None:
        """A failed attempt reused the known failure of a pod with the same signature
        in the same cluster state instead of running the filters (ksched's own)."""
        ...

    def batch_attempt(self, profile: str, result: str) -> None:
        """Opportunistic batching: no_hint, hint_used or hint_not_used (upstream's BatchAttemptStats)."""
        ...

    def batch_cache_flushed(self, profile: str, reason: str) -> None:
        """Opportunistic batching dropped or could not use its list (upstream's BatchCacheFlushed)."""
        ...


class NoMetrics:
    """Records nothing."""

    def schedule_attempt(self, result: str, profile: str, duration_s: float) -> None:
        pass

    def pod_group_attempt(self, result: str, profile: str, duration_s: float, algorithm_s: float | None) -> None:
        pass

    def set_pending_pods(self, counts: Mapping[str, int]) -> None:
        pass

    def extension_point(self, extension_point: str, status: str, profile: str, duration_s: float) -> None:
        pass

    def plugin_execution(self, plugin: str, extension_point: str, status: str, duration_s: float) -> None:
        pass

    def permit_wait(self, result: str, duration_s: float) -> None:
        pass

    def preemption_attempt(self) -> None:
        pass

    def preemption_victims(self, victims: int) -> None:
        pass

    def failure_reused(self, profile: str) -> None:
        pass

    def batch_attempt(self, profile: str, result: str) -> None:
        pass

    def batch_cache_flushed(self, profile: str, reason: str) -> None:
        pass


class KueueMetrics(Protocol):
    """What the admission actor records (transport.http.kueue_metrics collects it)."""

    def cycle(self, result: str, duration_s: float) -> None: ...

    def admitted(self, cq: str, priority_class: str = "") -> None: ...

    def evicted(self, cq: str, reason: str, preempting_cq: str = "", preemption_reason: str = "") -> None: ...

    def queues(self, view: Mapping[str, Any]) -> None: ...


class NoKueueMetrics:
    """KueueMetrics when nothing collects."""

    def cycle(self, result: str, duration_s: float) -> None:
        pass

    def admitted(self, cq: str, priority_class: str = "") -> None:
        pass

    def evicted(self, cq: str, reason: str, preempting_cq: str = "", preemption_reason: str = "") -> None:
        pass

    def queues(self, view: Mapping[str, Any]) -> None:
        pass


NO_METRICS: MetricsSink = NoMetrics()


def code_name(status: Any) -> str:
    """A Status's code as upstream's Code.String() spells it; None is Success."""
    return status.code.name if status is not None else "Success"


def percentile(values: "list[float] | tuple[float, ...]", q: float) -> float:
    """Nearest-rank percentile, q in [0, 1] (0 for no values)."""
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]
