"""Building a case's cluster: typed objects, a Snapshot and a FrameworkHandle."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from framework.api.objects import (
    CSIDriver,
    CSINode,
    KubeObject,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    StorageClass,
    VolumeAttachment,
)
from framework.api.workload_api import SchedulingPodGroup
from framework.cache import Snapshot
from framework.features import FeatureGates
from framework.handle import FrameworkHandle, InMemoryObjects

OBJECT_KEYS: dict[str, type[KubeObject]] = {
    "services": Service,
    "replicationControllers": ReplicationController,
    "replicaSets": ReplicaSet,
    "statefulSets": StatefulSet,
    "namespaces": Namespace,
    "podDisruptionBudgets": PodDisruptionBudget,
    "persistentVolumes": PersistentVolume,
    "persistentVolumeClaims": PersistentVolumeClaim,
    "storageClasses": StorageClass,
    "csiNodes": CSINode,
    "csiDrivers": CSIDriver,
    "volumeAttachments": VolumeAttachment,
    "schedulingPodGroups": SchedulingPodGroup,  # scheduling.k8s.io/v1alpha2 PodGroups (issue 29)
}


@dataclass
class CaseCluster:
    nodes: list[Node]
    bound: list[Pod]
    pending: list[Pod]
    pod: Pod | None
    pod_groups: list[PodGroup]
    objects: list[KubeObject]
    snapshot: Snapshot
    handle: FrameworkHandle
    features: FeatureGates = field(default_factory=FeatureGates)


def build_objects(case: dict[str, Any]) -> list[KubeObject]:
    out: list[KubeObject] = []
    for key, items in (case.get("objects") or {}).items():
        cls = OBJECT_KEYS.get(key)
        if cls is None:
            raise ValueError(f"objects.{key}: unknown object list")
        out.extend(cls(o) for o in items)
    return out


def build_cluster(case: dict[str, Any], clock: float = 0.0) -> CaseCluster:
    """Everything a plugin case describes, as the plugin under test sees it."""
    nodes = [Node(n) for n in case.get("nodes") or []]
    bound = [Pod(p) for p in case.get("pods") or []]
    pending = [Pod(p) for p in case.get("pendingPods") or []]
    pod = Pod(case["pod"]) if case.get("pod") else None
    groups = [PodGroup(g) for g in case.get("podGroups") or []]
    objects = build_objects(case)
    features = FeatureGates(case.get("featureGates"))
    snapshot = Snapshot.build(nodes, [p for p in bound if p.node_name])
    lister = InMemoryObjects([*nodes, *bound, *pending, *groups, *objects])
    if pod is not None:
        lister.put(pod)
    handle = FrameworkHandle(snapshot=snapshot, objects=lister, clock=lambda: clock, features=features)
    return CaseCluster(nodes, bound, pending, pod, groups, objects, snapshot, handle, features)
