"""NodeVolumeLimits: a node may attach only so many CSI volumes per driver.

Upstream: pkg/scheduler/framework/plugins/nodevolumelimits (csi.go, CSILimits).
The per-driver limits come from CSINode objects (spec.drivers[].allocatable.count),
and counting a pod's volumes needs the CSI driver behind each claim. ksched has no
CSINode objects: this is out of scope here. Upstream passes every node that has no
limits, and without CSINode no node has any, so this plugin keeps upstream's
PreFilter (Skip for pods with no claim-backed or migratable inline volume) and the
one Filter verdict that does not depend on limits: a new pod whose claim does not
exist is UnschedulableAndUnresolvable. Every other node passes.
"""
from __future__ import annotations

from typing import Any

from framework.api.objects import Pod
from framework.cache import NodeInfo
from framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    PreFilterResult,
    QueueingHint,
    Status,
)
from framework.plugins import volume_util as vu

NAME = "NodeVolumeLimits"


def _is_inline_migratable(volume: Any) -> bool:
    return any(isinstance(volume.get(k), dict) for k in vu.MIGRATABLE_INLINE_SOURCES)


class NodeVolumeLimits:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "NodeVolumeLimits":
        return cls(handle)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.Add)),
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.Delete), _after_pod_deleted),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.Add), vu.after_claim_of_pod_changed),
        ]

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        for v in vu.volumes(pod):
            if vu.pvc_volume_claim(pod, v) is not None or _is_inline_migratable(v):
                return None, None
        return None, Status(Code.Skip)

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        for v in vu.volumes(pod):
            ref = vu.pvc_volume_claim(pod, v)
            if ref is None:
                continue
            claim, ephemeral = ref
            if not claim:
                return Status(Code.Error, "PersistentVolumeClaim had no name")
            pvc = self._handle.get_object("PersistentVolumeClaim", pod.namespace, claim)
            if pvc is None:
                # The pod cannot run until the claim exists.
                return Status(Code.UnschedulableAndUnresolvable,
                              f"looking up PVC {pod.namespace}/{claim}: {vu.pvc_not_found(claim)}")
            if ephemeral:
                err = vu.volume_is_for_pod(pod, pvc)
                if err is not None:
                    return Status(Code.Error, err)
        # No CSINode, so no limits: upstream lets the pod through.
        return None


def _after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    deleted = old if old is not None else new
    if deleted is None or not deleted.volumes or not deleted.node_name:
        return QueueingHint.QueueSkip
    for v in vu.volumes(deleted):
        if vu.pvc_volume_claim(deleted, v) is not None or _is_inline_migratable(v):
            return QueueingHint.Queue
    return QueueingHint.QueueSkip


PLUGINS = [NodeVolumeLimits]
