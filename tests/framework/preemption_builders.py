"""Building clusters for the preemption tests: nodes with cpu, pods with priority."""
from __future__ import annotations

import random
from typing import Any

from framework.api.objects import Node, Pod, PodDisruptionBudget
from framework.cache import PodInfo, Snapshot
from framework.features import FeatureGates
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, Status
from framework.plugins.defaultpreemption.default_preemption import DefaultPreemption
from framework.plugins.noderesources.fit import NodeResourcesFit
from framework.runtime import Framework
from framework.waiting import WaitingPodsMap


def node(name: str, cpu: str = "500m", labels: dict[str, str] | None = None) -> Node:
    res = {"cpu": cpu, "memory": "1Gi", "pods": "32"}
    return Node({"metadata": {"name": name, "labels": labels or {}}, "status": {"capacity": res, "allocatable": res}})


def pod(name: str, *, cpu: str = "100m", priority: int = 0, node_name: str = "", start: str | None = None,
        labels: dict[str, str] | None = None, **spec: Any) -> Pod:
    raw: dict[str, Any] = {
        "metadata": {"name": name, "uid": name, "labels": labels or {}},
        "spec": {"priority": priority, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec},
        "status": {},
    }
    if node_name:
        raw["spec"]["nodeName"] = node_name
    if start is not None:
        raw["status"]["startTime"] = start
    return Pod(raw)


def pdb(name: str, match_labels: dict[str, str] | None, allowed: int, disrupted: list[str] = (), namespace: str = "default") -> PodDisruptionBudget:
    spec = {"selector": {"matchLabels": match_labels}} if match_labels is not None else {}
    return PodDisruptionBudget({
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"disruptionsAllowed": allowed, "disruptedPods": {p: "2024-01-01T00:00:00Z" for p in disrupted}},
    })


class ExtensionErrors:
    """A PreFilter plugin whose RemovePod fails on the listed nodes."""

    name = "ExtensionErrors"

    def __init__(self, nodes: set[str]) -> None:
        self.nodes = nodes

    def pre_filter(self, state, pod, nodes):  # noqa: ANN001, ANN201
        return None, None

    def pre_filter_extensions(self) -> "ExtensionErrors":
        return self

    def add_pod(self, state, pod, pod_info, node_info):  # noqa: ANN001, ANN201
        return None

    def remove_pod(self, state, pod, pod_info, node_info):  # noqa: ANN001, ANN201
        if node_info.name in self.nodes:
            return Status(Code.Error, f"cannot remove {pod_info.pod.name}")
        return None


class Cluster:
    """A snapshot, a handle recording evictions (or asynchronous preemption jobs), and a Framework with NodeResourcesFit
    at PreFilter/Filter and DefaultPreemption at PostFilter."""

    def __init__(self, nodes: list[Node], pods: list[Pod], *, objects: list[Any] = (), extra: list[Any] = (),
                 nominated: dict[str, list[Pod]] | None = None, args: dict[str, Any] | None = None,
                 async_preemption: bool = False) -> None:
        self.snapshot = Snapshot.build(nodes, pods)
        self.waiting = WaitingPodsMap()
        nominated = nominated or {}
        self.handle = FrameworkHandle(
            snapshot=self.snapshot,
            objects=InMemoryObjects([*nodes, *pods, *objects]),
            waiting_pods=self.waiting,
            nominated=lambda n: [PodInfo(p) for p in nominated.get(n, [])],
            rand=random.Random(0),
            # Synchronous unless asked: evictions land in handle.evicted.
            features=FeatureGates({"SchedulerAsyncPreemption": async_preemption}),
        )
        self.preemption = DefaultPreemption.new(args, self.handle)
        fit = NodeResourcesFit.new(None, self.handle)
        plugins: dict[str, Any] = {fit.name: fit, self.preemption.name: self.preemption}
        for pl in extra:
            plugins[pl.name] = pl
        pre = [n for n, pl in plugins.items() if hasattr(pl, "pre_filter")]
        self.fwk = Framework("default-scheduler", plugins,
                             {"preFilter": pre, "filter": [fit.name], "postFilter": [self.preemption.name]},
                             {}, self.handle)

    def evicted(self) -> list[str]:
        return [v.name for v, _, _ in self.handle.evicted]
