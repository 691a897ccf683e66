"""Workload conditions as Kueue writes them (pkg/workload/workload.go: SetQuotaReservation,
UnsetQuotaReservationWithCondition; admissionchecks.go: SyncAdmittedCondition;
evict/evict.go; apis/kueue/v1beta2/workload_types.go for the reasons)."""
from __future__ import annotations

from framework.kueue.workload import Admission, Condition, WorkloadInfo

MAX_MESSAGE = 32 * 1024  # api.TruncateConditionMessage (metav1.Condition message limit)


def _truncate(msg: str) -> str:
    return msg if len(msg) <= MAX_MESSAGE else msg[: MAX_MESSAGE - 3] + "..."


def _set(wl: WorkloadInfo, type_: str, status: str, reason: str, message: str, now: int) -> None:
    old = wl.conditions.get(type_)
    t = old.time if old is not None and old.status == status else now
    wl.conditions[type_] = Condition(type_, status, reason, _truncate(message), t)


def _sync_admitted(wl: WorkloadInfo, now: int) -> None:
    if "QuotaReserved" not in wl.conditions and "Admitted" not in wl.conditions:
        return
    if not wl.cond_true("QuotaReserved"):
        _set(wl, "Admitted", "False", "NoReservation", "The workload has no reservation", now)
    else:
        _set(wl, "Admitted", "True", "Admitted", "The workload is admitted", now)


def set_quota_reservation(wl: WorkloadInfo, admission: Admission, now: int) -> None:
    """QuotaReserved=True; a True Evicted/Preempted turns False with `Previously: ...`."""
    wl.admission = admission
    _set(wl, "QuotaReserved", "True", "QuotaReserved", f"Quota reserved in ClusterQueue {admission.cluster_queue}", now)
    for t in ("Evicted", "Preempted"):
        c = wl.conditions.get(t)
        if c is not None and c.status == "True":
            _set(wl, t, "False", "QuotaReserved", f"Previously: {c.message}", now)
    _sync_admitted(wl, now)  # no admission checks: admitted together with the reservation


def unset_quota_reservation(wl: WorkloadInfo, reason: str, message: str, now: int) -> None:
    _set(wl, "QuotaReserved", "False", reason, message, now)
    wl.admission = None
    _sync_admitted(wl, now)


def set_evicted(wl: WorkloadInfo, reason: str, message: str, now: int) -> None:
    _set(wl, "Evicted", "True", reason, message, now)


def set_preempted(wl: WorkloadInfo, reason: str, message: str, now: int) -> None:
    _set(wl, "Preempted", "True", reason, message, now)


def release_after_eviction(wl: WorkloadInfo, now: int) -> None:
    """Once the evicted workload's pods are gone its quota is released and it may queue again
    (workload controller: QuotaReserved=False reason Pending, admission cleared)."""
    c = wl.conditions.get("Evicted")
    reason = c.reason if c is not None and c.status == "True" else "Pending"
    unset_quota_reservation(wl, reason, c.message if c is not None else "", now)
