"""Kueue manifests (API form) for the admission tests: two teams, one cohort, two flavors."""
from __future__ import annotations

from typing import Any

V = "kueue.x-k8s.io/v1beta2"
QUEUE = "kueue.x-k8s.io/queue-name"
RECLAIM = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}


def flavor(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": V, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {"nodeLabels": labels}}


def cluster_queue(name: str, cohort: str, cpu: str, flavor_name: str = "on-demand", weight: str | None = None,
                  preemption: dict | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"cohortName": cohort, "namespaceSelector": {}, "preemption": preemption or RECLAIM,
                            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                                {"name": flavor_name, "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}]}
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"apiVersion": V, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(name: str, cq: str, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": V, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cq}}


def queued_pod(name: str, queue: str, cpu: str = "1", priority: int | None = None, group: str | None = None,
               total: int | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {QUEUE: queue}}
    if group is not None:
        meta["labels"]["kueue.x-k8s.io/pod-group-name"] = group
        meta["annotations"] = {"kueue.x-k8s.io/pod-group-total-count": str(total)}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}
    if priority is not None:
        spec["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def node(name: str, cpu: str = "8", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"},
                       "capacity": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}}
