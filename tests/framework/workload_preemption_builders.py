"""scheduling.k8s.io gangs for the workload-aware preemption tests, over preemption_builders' Cluster."""
from __future__ import annotations

from typing import Any

from framework.api.objects import Pod
from framework.api.workload_api import SchedulingPodGroup
from tests.framework.preemption_builders import pod


def gang_group(name: str, min_count: int, topology_key: str = "", *, disruption: str = "PodGroup",
               priority: int | None = None) -> SchedulingPodGroup:
    """A gang PodGroup; evicted whole by default (disruptionMode PodGroup), member by
    member with disruption="Pod"."""
    spec: dict[str, Any] = {
        "podGroupTemplateRef": {"workload": {"workloadName": "job", "podGroupTemplateName": name}},
        "schedulingPolicy": {"gang": {"minCount": min_count}},
        "disruptionMode": disruption,
    }
    if priority is not None:
        spec["priority"] = priority
    if topology_key:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    return SchedulingPodGroup({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                               "metadata": {"name": name, "namespace": "default"}, "spec": spec})


def member(group: str, i: int, *, cpu: str, priority: int, node_name: str = "", **kw: Any) -> Pod:
    return pod(f"{group}-{i}", cpu=cpu, priority=priority, node_name=node_name,
               schedulingGroup={"podGroupName": group}, **kw)


def gang(group: str, nodes: list[str], *, cpu: str, priority: int) -> list[Pod]:
    """One bound member on each listed node ("" for a pending member)."""
    return [member(group, i, cpu=cpu, priority=priority, node_name=n) for i, n in enumerate(nodes)]
