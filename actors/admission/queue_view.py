"""The per-ClusterQueue figures the Kueue metrics and the page show: pending and
admitted workloads, usage against nominal quota, what is borrowed. A pure function of
the admission state, read after each of the actor's batches."""
from __future__ import annotations

from typing import Any

from framework.kueue.manager import AdmissionState


def queues_view(state: AdmissionState) -> dict[str, Any]:
    """Per ClusterQueue: pending/admitted counts, usage against nominal, borrowed."""
    out: dict[str, Any] = {}
    for name, cq in state.cache.cluster_queues.items():
        usage = []
        for fr, q in sorted(cq.quotas.items()):
            u = cq.usage.get(fr, 0)
            usage.append({"flavor": fr[0], "resource": fr[1], "nominal": q.nominal, "usage": u,
                          "borrowed": max(0, u - q.nominal) if cq.parent is not None else 0})
        pending = state.pending(name)
        # an inactive ClusterQueue's pending workloads are all inadmissible (reportCQPendingWorkloads)
        inadmissible = state.pending_inadmissible(name) if cq.active else pending
        out[name] = {"cohort": cq.spec.cohort, "pending": pending,
                     "pendingActive": pending - inadmissible, "pendingInadmissible": inadmissible,
                     "admitted": len(cq.workloads), "admittedTotal": state.admitted_total.get(name, 0),
                     "strategy": cq.spec.queueing_strategy, "active": cq.active, "usage": usage}
    return out
