"""Kueue's metrics, with Kueue's names and labels (pkg/metrics/metrics.go), fed by the
admission actor after each batch of cycles (replica_role is always "leader": the
daemon that admits is the one that schedules)."""
from __future__ import annotations

from typing import Any, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

ROLE = "leader"


def _value(resource: str, amount: int) -> float:
    return amount / 1000 if resource == "cpu" else float(amount)  # cpu in cores, as Kueue reports it


class KueueMetrics:
    def __init__(self, r: CollectorRegistry) -> None:
        self.admission_attempts = Counter("kueue_admission_attempts_total", "Total number of attempts to admit "
                                          "workloads, by result ('success' or 'inadmissible').",
                                          ["result", "replica_role"], registry=r)
        self.admission_attempt_duration = Histogram("kueue_admission_attempt_duration_seconds",
                                                    "Latency of an admission attempt, by result.",
                                                    ["result", "replica_role"], registry=r)
        self.pending = Gauge("kueue_pending_workloads", "Number of pending workloads, per cluster_queue and status "
                             "('active' or 'inadmissible').", ["cluster_queue", "status", "replica_role"], registry=r)
        self.admitted_total = Counter("kueue_admitted_workloads_total", "Total number of admitted workloads per "
                                      "cluster_queue.", ["cluster_queue", "priority_class", "replica_role"], registry=r)
        self.quota_reserved_total = Counter("kueue_quota_reserved_workloads_total", "Total number of quota reserved "
                                            "workloads per cluster_queue.",
                                            ["cluster_queue", "priority_class", "replica_role"], registry=r)
        self.evicted_total = Counter("kueue_evicted_workloads_total", "Number of evicted workloads per "
                                     "cluster_queue and reason.", ["cluster_queue", "reason", "underlying_cause",
                                                                   "priority_class", "replica_role"], registry=r)
        self.preempted_total = Counter("kueue_preempted_workloads_total", "Number of preempted workloads per "
                                       "preempting_cluster_queue and reason.",
                                       ["preempting_cluster_queue", "reason", "replica_role"], registry=r)
        self.reserving_active = Gauge("kueue_reserving_active_workloads", "Number of workloads reserving quota, "
                                      "per cluster_queue.", ["cluster_queue", "replica_role"], registry=r)
        self.admitted_active = Gauge("kueue_admitted_active_workloads", "Number of admitted workloads that are "
                                     "active (unsuspended and not finished), per cluster_queue.",
                                     ["cluster_queue", "replica_role"], registry=r)
        frl = ["cohort", "cluster_queue", "flavor", "resource", "replica_role"]
        self.usage = Gauge("kueue_cluster_queue_resource_usage", "Reports the cluster_queue's total resource usage "
                           "within all the flavors", frl, registry=r)
        self.nominal = Gauge("kueue_cluster_queue_nominal_quota", "Reports the cluster_queue's resource nominal "
                             "quota within all the flavors", frl, registry=r)
        self.status = Gauge("kueue_cluster_queue_status", "Reports 'cluster_queue' with its 'status' (pending, "
                            "active or terminated)", ["cluster_queue", "status", "replica_role"], registry=r)

    def cycle(self, result: str, duration_s: float) -> None:
        self.admission_attempts.labels(result=result, replica_role=ROLE).inc()
        self.admission_attempt_duration.labels(result=result, replica_role=ROLE).observe(duration_s)

    def admitted(self, cq: str, priority_class: str = "") -> None:
        self.quota_reserved_total.labels(cluster_queue=cq, priority_class=priority_class, replica_role=ROLE).inc()
        self.admitted_total.labels(cluster_queue=cq, priority_class=priority_class, replica_role=ROLE).inc()

    def evicted(self, cq: str, reason: str, preempting_cq: str = "", preemption_reason: str = "") -> None:
        self.evicted_total.labels(cluster_queue=cq, reason=reason, underlying_cause="", priority_class="",
                                  replica_role=ROLE).inc()
        if preempting_cq:
            self.preempted_total.labels(preempting_cluster_queue=preempting_cq, reason=preemption_reason,
                                        replica_role=ROLE).inc()

    def queues(self, view: Mapping[str, Any]) -> None:
        """The per-ClusterQueue view of the admission actor (actors/admission/queue_view.py)."""
        for name, q in view.items():
            self.pending.labels(cluster_queue=name, status="active", replica_role=ROLE).set(q["pendingActive"])
            self.pending.labels(cluster_queue=name, status="inadmissible", replica_role=ROLE).set(q["pendingInadmissible"])
            self.reserving_active.labels(cluster_queue=name, replica_role=ROLE).set(q["admitted"])
            self.admitted_active.labels(cluster_queue=name, replica_role=ROLE).set(q["admitted"])
            for status in ("active", "pending"):
                self.status.labels(cluster_queue=name, status=status, replica_role=ROLE).set(
                    1 if (status == "active") == q["active"] else 0)
            for u in q["usage"]:
                labels = dict(cohort=q["cohort"], cluster_queue=name, flavor=u["flavor"], resource=u["resource"],
                              replica_role=ROLE)
                self.usage.labels(**labels).set(_value(u["resource"], u["usage"]))
                self.nominal.labels(**labels).set(_value(u["resource"], u["nominal"]))
