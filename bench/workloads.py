"""scheduler_perf-like workloads (upstream test/integration/scheduler_perf,
config/performance-config.yaml and its templates), scaled by --nodes / --pods.

A workload is a scheduler configuration, the objects that exist before the
measurement (nodes, init pods, pod groups) and the measured pods.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

API = "kubescheduler.config.k8s.io/v1"
ZONES = ("moon-1", "moon-2", "moon-3")


@dataclass
class Workload:
    name: str
    config: dict[str, Any] | None
    setup: list[dict[str, Any]]  # nodes, init pods, pod groups...
    measured: list[dict[str, Any]]
    namespace: str = "default"
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def node(i: int, cpu: str = "4", memory: str = "32Gi", pods: str = "110", labels: dict[str, str] | None = None) -> dict[str, Any]:
    """node-default.yaml: 4 cpu, 32Gi, 110 pods."""
    name = f"node-{i}"
    alloc = {"cpu": cpu, "memory": memory, "pods": pods}
    return {"kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "status": {"capacity": dict(alloc), "allocatable": dict(alloc)}}


def pod(name: str, cpu: str = "100m", memory: str = "500Mi", *, labels: dict[str, str] | None = None,
        priority: int | None = None, spec: dict[str, Any] | None = None, namespace: str = "default") -> dict[str, Any]:
    """pod-default.yaml: one pause container requesting 100m / 500Mi."""
    res = {"cpu": cpu, "memory": memory}
    body: dict[str, Any] = {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                            "resources": {"requests": dict(res), "limits": dict(res)}}]}
    if priority is not None:
        body["priority"] = priority
    body.update(spec or {})
    return {"kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})}, "spec": body}


def scheduling_basic(nodes: int, pods: int) -> Workload:
    init = min(pods // 4, nodes * 5)
    return Workload("SchedulingBasic", None,
                    [node(i) for i in range(nodes)] + [pod(f"init-{i}") for i in range(init)],
                    [pod(f"pod-{i}") for i in range(pods)])


def scheduling_pod_anti_affinity(nodes: int, pods: int) -> Workload:
    """pod-with-pod-anti-affinity.yaml: at most one such pod per node (hostname)."""
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
    return Workload("SchedulingPodAntiAffinity", None, [node(i) for i in range(nodes)],
                    [pod(f"anti-{i}", labels={"color": "green", "name": "test"}, spec=anti) for i in range(pods)],
                    notes="each node takes one pod; pods beyond the node count stay pending")


def topology_spreading(nodes: int, pods: int) -> Workload:
    """pod-with-topology-spreading.yaml: maxSkew 5 over zones, DoNotSchedule."""
    spread = {"topologySpreadConstraints": [{
        "maxSkew": 5, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]}
    ns = [node(i, labels={"topology.kubernetes.io/zone": ZONES[i % len(ZONES)]}) for i in range(nodes)]
    init = [pod(f"init-{i}") for i in range(min(pods // 4, nodes * 5))]
    return Workload("TopologySpreading", None, ns + init,
                    [pod(f"spread-{i}", labels={"foo": ""}, spec=spread) for i in range(pods)])


def preemption_basic(nodes: int, pods: int) -> Workload:
    """pod-low-priority fills every node; pod-high-priority pods preempt them."""
    low = [pod(f"low-{i}", cpu="900m", priority=0) for i in range(nodes * 4)]
    high = [pod(f"high-{i}", cpu="3000m", priority=10) for i in range(pods)]
    return Workload("PreemptionBasic", None, [node(i) for i in range(nodes)] + low, high,
                    notes="one high-priority pod fits per node after preemption")


def unschedulable(nodes: int, pods: int) -> Workload:
    """pod-large-cpu.yaml pods never fit and sit in the unschedulable pool while
    the measured default pods schedule."""
    large = [pod(f"large-{i}", cpu="9") for i in range(max(1, pods // 10))]
    return Workload("Unschedulable", None, [node(i) for i in range(nodes)] + large,
                    [pod(f"pod-{i}") for i in range(pods)], extra={"unschedulable": len(large)})


GANG_SIZE = 10


WORKLOADS: dict[str, Callable[[int, int], Workload]] = {
    "SchedulingBasic": scheduling_basic,
    "SchedulingPodAntiAffinity": scheduling_pod_anti_affinity,
    "TopologySpreading": topology_spreading,
    "PreemptionBasic": preemption_basic,
    "Unschedulable": unschedulable,
}
