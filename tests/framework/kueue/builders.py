"""Kueue objects in their API form for tests."""
from __future__ import annotations

from typing import Any

from framework.kueue.api import parse_cluster_queue, parse_cohort, parse_local_queue, parse_resource_flavor
from framework.kueue.workload import parse_workload


def flavor(name: str, **labels: str):
    return parse_resource_flavor({"metadata": {"name": name}, "spec": {"nodeLabels": labels}})


EVERY_NAMESPACE: dict[str, Any] = {}


def cq(name: str, cohort: str = "", quotas: dict[str, dict[str, Any]] | None = None, *, resources=("cpu",),
       strategy: str = "BestEffortFIFO", preemption: dict[str, Any] | None = None, weight: str | None = None,
       fungibility: dict[str, Any] | None = None, namespace_selector: dict[str, Any] | None = EVERY_NAMESPACE,
       strict: bool = True):
    """quotas: flavor -> {resource: nominal} or {resource: (nominal, borrowingLimit, lendingLimit)};
    namespace_selector: {} (every namespace) unless given; None leaves it out (no namespace);
    strict=False: as upstream's unit tests build it, without the API server's defaults."""
    flavors = []
    for f, res in (quotas or {"default": {"cpu": "10"}}).items():
        rs = []
        for r in resources:
            v = res.get(r, "0")
            nominal, bl, ll = v if isinstance(v, tuple) else (v, None, None)
            q: dict[str, Any] = {"name": r, "nominalQuota": nominal}
            if bl is not None:
                q["borrowingLimit"] = bl
            if ll is not None:
                q["lendingLimit"] = ll
            rs.append(q)
        flavors.append({"name": f, "resources": rs})
    spec: dict[str, Any] = {"cohortName": cohort, "queueingStrategy": strategy,
                            "resourceGroups": [{"coveredResources": list(resources), "flavors": flavors}]}
    if namespace_selector is not None:
        spec["namespaceSelector"] = namespace_selector
    if preemption:
        spec["preemption"] = preemption
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    if fungibility:
        spec["flavorFungibility"] = fungibility
    return parse_cluster_queue({"metadata": {"name": name}, "spec": spec}, strict=strict)


def cohort(name: str, parent: str = ""):
    return parse_cohort({"metadata": {"name": name}, "spec": {"parentName": parent}})


def lq(name: str, cluster_queue: str, namespace: str = "default"):
    return parse_local_queue({"metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": cluster_queue}})


def wl(name: str, queue: str, cpu: str = "1", count: int = 1, priority: int = 0, created: float = 1.0,
       namespace: str = "default"):
    return parse_workload({"metadata": {"name": name, "namespace": namespace, "uid": name, "creationTimestamp": created},
                           "spec": {"queueName": queue, "priority": priority, "podSets": [
                               {"name": "main", "count": count,
                                "template": {"spec": {"containers": [{"resources": {"requests": {"cpu": cpu}}}]}}}]}})
