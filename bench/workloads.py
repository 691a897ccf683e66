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
class BenchWorkload:
    name: str
    config: dict[str, Any] | None
    setup: list[dict[str, Any]]  # nodes, init pods, pod groups...
    measured: list[dict[str, Any]]
    namespace: str = "default"
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # Setup pods that stay pending by design (Unschedulable's large pods): a
    # runner waits for the others to bind before it measures.
    setup_pending: int = 0
    # Measured pods that can bind at all (SchedulingPodAntiAffinity: one per node).
    expected: int | None = None
    # scheduler_perf's churn op (mode create): while the measured pods schedule, the
    # runner creates background(i) every background_interval_s seconds (not measured).
    background: Callable[[int], dict[str, Any]] | None = None
    background_interval_s: float = 0.2

    @property
    def init_pods(self) -> int:
        return sum(1 for o in self.setup if o["kind"] == "Pod")

    @property
    def expected_bound(self) -> int:
        return len(self.measured) if self.expected is None else self.expected


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


# Init pods per node count as upstream's 5000Nodes workloads in
# config/performance-config.yaml: SchedulingBasic 1,000 (one per 5 nodes),
# SchedulingPodAntiAffinity 1,000 in namespace sched-0, TopologySpreading 5,000
# (one per node), PreemptionBasic 20,000 low-priority pods (four per node, which
# fills every node: 4 x 900m of 4 cpu), Unschedulable 200 large pods.

def scheduling_basic(nodes: int, pods: int) -> BenchWorkload:
    """pod-default.yaml for init and measured pods."""
    return BenchWorkload("SchedulingBasic", None,
                    [node(i) for i in range(nodes)] + [pod(f"init-{i}") for i in range(max(1, nodes // 5))],
                    [pod(f"pod-{i}") for i in range(pods)])


def _anti_affinity_pod(name: str, namespace: str) -> dict[str, Any]:
    """pod-with-pod-anti-affinity.yaml: at most one such pod per node (hostname),
    counted over both namespaces."""
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": "kubernetes.io/hostname",
         "namespaces": ["sched-0", "sched-1"]}]}}}
    return pod(name, labels={"color": "green"}, spec=anti, namespace=namespace)


def scheduling_pod_anti_affinity(nodes: int, pods: int) -> BenchWorkload:
    init = [_anti_affinity_pod(f"init-{i}", "sched-0") for i in range(max(1, min(nodes // 5, nodes - 1)))]
    return BenchWorkload("SchedulingPodAntiAffinity", None, [node(i) for i in range(nodes)] + init,
                    [_anti_affinity_pod(f"anti-{i}", "sched-1") for i in range(pods)], namespace="sched-1",
                    expected=min(pods, nodes - len(init)),
                    notes="each node takes one pod; pods beyond the free nodes stay pending")


def topology_spreading(nodes: int, pods: int) -> BenchWorkload:
    """pod-with-topology-spreading.yaml: maxSkew 5 over zones, DoNotSchedule;
    init pods are pod-default.yaml."""
    spread = {"topologySpreadConstraints": [{
        "maxSkew": 5, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]}
    ns = [node(i, labels={"topology.kubernetes.io/zone": ZONES[i % len(ZONES)]}) for i in range(nodes)]
    init = [pod(f"init-{i}") for i in range(nodes)]
    return BenchWorkload("TopologySpreading", None, ns + init,
                    [pod(f"spread-{i}", labels={"foo": ""}, spec=spread) for i in range(pods)])


def preemption_basic(nodes: int, pods: int) -> BenchWorkload:
    """pod-low-priority.yaml (900m, no priority) fills every node; each
    pod-high-priority.yaml pod (3000m, priority 10) needs preemption."""
    low = [pod(f"low-{i}", cpu="900m") for i in range(nodes * 4)]
    high = [pod(f"high-{i}", cpu="3000m", priority=10) for i in range(pods)]
    return BenchWorkload("PreemptionBasic", None, [node(i) for i in range(nodes)] + low, high,
                    expected=min(pods, nodes), notes="one high-priority pod fits per node after preemption")


def _low_priority(name: str) -> dict[str, Any]:
    """pod-low-priority.yaml: 900m / 500Mi, priority 0, terminationGracePeriodSeconds 0."""
    return pod(name, cpu="900m", spec={"terminationGracePeriodSeconds": 0})


def preemption_async(nodes: int, pods: int) -> BenchWorkload:
    """default_preemption/performance-config.yaml's PreemptionAsync: four low-priority
    pods per node (3.6 of 4 cpu); a pod-high-priority.yaml preemptor (3000m, priority
    10) created every 200 ms in its own namespace while the measured pod-default.yaml
    pods (100m, always fit) schedule. The figure is the measured pods' throughput;
    the preemptors run with whatever preemption the daemon has."""
    low = [_low_priority(f"low-{i}") for i in range(nodes * 4)]

    def preemptor(i: int) -> dict[str, Any]:
        return pod(f"high-{i}", cpu="3000m", priority=10, namespace="preemptors")

    return BenchWorkload("PreemptionAsync", None, [node(i) for i in range(nodes)] + low,
                    [pod(f"pod-{i}") for i in range(pods)], background=preemptor, background_interval_s=0.2,
                    notes="a 3-cpu high-priority preemptor every 200 ms in the background")


# scheduler_perf/batching/scheduler-config-no-topology.yaml: system default spreading off.
NO_TOPOLOGY_CONFIG: dict[str, Any] = {
    "apiVersion": API, "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
        {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}}]}]}
SIGNATURE_BATCH = 10  # signatureBatchSize of the integration-test variant (10Nodes_10Pods_10BatchSize)


def _signed(i: int, body: dict[str, Any], batch: int) -> dict[str, Any]:
    """createPodsOp's signatureBatchSize: each run of `batch` pods shares one label."""
    body["metadata"]["labels"]["signature"] = f"signature-label-{i // batch}"
    return body


def _no_limits(p: dict[str, Any]) -> dict[str, Any]:
    del p["spec"]["containers"][0]["resources"]["limits"]
    return p


def resource_saturation(nodes: int, pods: int, batch: int = SIGNATURE_BATCH) -> BenchWorkload:
    """batching suite, pod-saturation.yaml: 3 cpu / 1Gi requests, no limits; one fits per node."""
    measured = [_signed(i, _no_limits(pod(f"pod-saturation-{i}", cpu="3", memory="1Gi")), batch)
                for i in range(pods)]
    return BenchWorkload("ResourceSaturation", NO_TOPOLOGY_CONFIG, [node(i) for i in range(nodes)], measured,
                    expected=min(pods, nodes), notes="one pod per node; pods beyond the nodes stay pending")


def host_port_conflict(nodes: int, pods: int, batch: int = SIGNATURE_BATCH) -> BenchWorkload:
    """batching suite, pod-hostport-80.yaml: 100m / 100Mi, no limits, hostPort 80; one per node."""
    def hostport(i: int) -> dict[str, Any]:
        p = _no_limits(pod(f"pod-hostport-80-{i}", memory="100Mi"))
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80}]
        return _signed(i, p, batch)

    return BenchWorkload("HostPortConflict", NO_TOPOLOGY_CONFIG, [node(i) for i in range(nodes)],
                    [hostport(i) for i in range(pods)], expected=min(pods, nodes),
                    notes="port 80 once per node; pods beyond the nodes stay pending")


def churn(nodes: int, pods: int) -> BenchWorkload:
    """Steady state (issue 17): every node (4 cpu) full of 1-cpu pods, `pods` more 1-cpu
    pods queued; bench/churn.py then completes running pods one at a time."""
    full = [pod(f"run-{i}", cpu="1", memory="100Mi") for i in range(nodes * 4)]
    return BenchWorkload("Churn", None, [node(i) for i in range(nodes)] + full,
                    [pod(f"queued-{i}", cpu="1", memory="100Mi") for i in range(pods)],
                    notes="each completion (a bound pod deleted) lets one queued pod in")


def unschedulable(nodes: int, pods: int) -> BenchWorkload:
    """pod-large-cpu.yaml pods (9 cpu, no limits) never fit and sit in the
    unschedulable pool while the measured default pods schedule."""
    large = [pod(f"large-{i}", cpu="9") for i in range(200)]
    for p in large:
        del p["spec"]["containers"][0]["resources"]["limits"]
    return BenchWorkload("Unschedulable", None, [node(i) for i in range(nodes)] + large,
                    [pod(f"pod-{i}") for i in range(pods)], setup_pending=len(large))


WORKLOADS: dict[str, Callable[[int, int], BenchWorkload]] = {
    "SchedulingBasic": scheduling_basic,
    "SchedulingPodAntiAffinity": scheduling_pod_anti_affinity,
    "TopologySpreading": topology_spreading,
    "PreemptionBasic": preemption_basic,
    "Unschedulable": unschedulable,
    "PreemptionAsync": preemption_async,
    "ResourceSaturation": resource_saturation,
    "HostPortConflict": host_port_conflict,
    "Churn": churn,
}
