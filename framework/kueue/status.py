"""ClusterQueue and LocalQueue status as Kueue's controllers write it, from the
admission state (pkg/controller/core/clusterqueue_controller.go:
updateCqStatusIfChanged; localqueue_controller.go: Reconcile, updateStatusIfChanged;
pkg/cache/scheduler/cache.go: Usage, getUsage, LocalQueueUsage,
filterLocalQueueUsage; clusterqueue.go: inactiveReason). Pure: the admission actor
writes what these return when it differs from what is stored.

Conditions are metav1.Conditions: a condition keeps its lastTransitionTime while its
status stays the same (meta.SetStatusCondition).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from framework.api.timeutil import format_time
from framework.kueue.amount import FR, format_amount
from framework.kueue.api import ClusterQueueSpec, LocalQueueSpec
from framework.kueue.fairsharing import dominant_resource_share
from framework.kueue.snapshot import ClusterQueue
from framework.kueue.workload import WorkloadInfo

READY_CQ = ("True", "Ready", "Can admit new workloads")
LQ_READY = ("True", "Ready", "Can submit new workloads to localQueue")
LQ_STOPPED = ("False", "Stopped", "LocalQueue is stopped")
LQ_NO_CQ = ("False", "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue")
LQ_CQ_INACTIVE = ("False", "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue")


def _quantity(resource: str, v: int) -> str:
    return format_amount(resource, v, sentinel=False)


def _flavors_in_order(spec: ClusterQueueSpec) -> list[tuple[str, list[str]]]:
    """Every flavor of every resource group, in the spec's order, with the group's
    resources sorted by name (a stable order: no endless status updates)."""
    return [(fq.name, sorted(g.covered)) for g in spec.resource_groups for fq in g.flavors]


def flavors_usage(cq: ClusterQueue, usage: Mapping[FR, int]) -> list[dict[str, Any]]:
    """status.flavorsReservation / flavorsUsage: per flavor and resource the total, and
    what is above nominal (borrowed; always 0 without a cohort)."""
    out = []
    for flavor, names in _flavors_in_order(cq.spec):
        resources = []
        for r in names:
            used = usage.get((flavor, r), 0)
            borrowed = used - cq.quota_for((flavor, r)).nominal if cq.parent is not None else 0
            resources.append({"name": r, "total": _quantity(r, used), "borrowed": _quantity(r, max(0, borrowed))})
        out.append({"name": flavor, "resources": resources})
    return out


def _usage_of(workloads: Iterable[WorkloadInfo]) -> dict[FR, int]:
    total: dict[FR, int] = {}
    for wl in workloads:
        for fr, v in wl.usage().items():
            total[fr] = total.get(fr, 0) + v
    return total


def condition(old: Iterable[Mapping[str, Any]] | None, type_: str, verdict: tuple[str, str, str], now: int,
              generation: int | None) -> list[dict[str, Any]]:
    """`old` conditions with `type_` set to verdict (status, reason, message)."""
    status, reason, message = verdict
    kept = [dict(c) for c in old or () if isinstance(c, Mapping)]
    prev = next((c for c in kept if c.get("type") == type_), None)
    since = prev.get("lastTransitionTime") if prev is not None and prev.get("status") == status else None
    new: dict[str, Any] = {"type": type_, "status": status, "reason": reason, "message": message,
                           "lastTransitionTime": since or format_time(now - now % 1_000_000_000)}
    if generation is not None:
        new["observedGeneration"] = generation
    return [new if c is prev else c for c in kept] if prev is not None else [*kept, new]


def cluster_queue_verdict(cq: ClusterQueue) -> tuple[str, str, str]:
    """The Active condition: Ready, or why it admits nothing (Terminating, Stopped,
    FlavorNotFound: framework.kueue.snapshot words them as Kueue's inactiveReason)."""
    if not cq.active:
        return "False", cq.inactive_reason, cq.inactive_message
    return READY_CQ


def cluster_queue_status(cq: ClusterQueue, pending: int, old: Mapping[str, Any] | None, now: int, *,
                         fair_sharing: bool = False, generation: int | None = None) -> dict[str, Any]:
    """A ClusterQueue's status: counts, usage of the workloads holding quota (reserved)
    and of those admitted, the Active condition, the weighted share under fair sharing."""
    holding = list(cq.workloads.values())
    admitted = [w for w in holding if w.cond_true("Admitted")]
    out: dict[str, Any] = {
        "conditions": condition((old or {}).get("conditions"), "Active", cluster_queue_verdict(cq),
                                now, generation),
        "flavorsReservation": flavors_usage(cq, cq.usage),
        "flavorsUsage": flavors_usage(cq, _usage_of(admitted)),
        "pendingWorkloads": pending,
        "reservingWorkloads": len(holding),
        "admittedWorkloads": len(admitted),
    }
    if fair_sharing:
        out["fairSharing"] = {"weightedShare": dominant_resource_share(cq).rounded()}
    return out


def local_queue_status(lq: LocalQueueSpec, cq: ClusterQueue | None, workloads: Iterable[WorkloadInfo],
                       old: Mapping[str, Any] | None, now: int, generation: int | None = None) -> dict[str, Any]:
    """A LocalQueue's status: its pending, reserving and admitted workloads, their usage
    per flavor of its ClusterQueue, and the Active condition."""
    mine = [w for w in workloads if w.namespace == lq.namespace and w.queue_name == lq.name]
    if lq.stop_policy != "None":
        verdict = LQ_STOPPED
    elif cq is None:
        verdict = LQ_NO_CQ
    else:
        verdict = LQ_READY if cq.active else LQ_CQ_INACTIVE
    pending = [w for w in mine if w.admission is None and w.active and not w.cond_true("Finished")]
    holding = [w for w in mine if w.holds_quota] if cq is not None else []
    admitted = [w for w in holding if w.cond_true("Admitted")]
    out: dict[str, Any] = {
        "conditions": condition((old or {}).get("conditions"), "Active", verdict, now, generation),
        "pendingWorkloads": len(pending) if lq.stop_policy == "None" else 0,
        "reservingWorkloads": len(holding),
        "admittedWorkloads": len(admitted),
    }
    if cq is not None:
        out["flavorsReservation"] = _local_usage(cq, _usage_of(holding))
        out["flavorsUsage"] = _local_usage(cq, _usage_of(admitted))
    return out


def _local_usage(cq: ClusterQueue, usage: Mapping[FR, int]) -> list[dict[str, Any]]:
    return [{"name": flavor, "resources": [{"name": r, "total": _quantity(r, usage.get((flavor, r), 0))}
                                           for r in names]}
            for flavor, names in _flavors_in_order(cq.spec)]
