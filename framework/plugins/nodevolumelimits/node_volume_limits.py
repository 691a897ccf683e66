"""NodeVolumeLimits: a node may attach only so many CSI volumes per driver.

Upstream: pkg/scheduler/framework/plugins/nodevolumelimits (csi.go, CSILimits).
A pod's claims count as "<driver>/<volumeHandle>" of the CSI PersistentVolume they
are bound to, once per node however many pods share them; the limit for a driver
is the node's allocatable "attachable-volumes-csi-<driver>".

Out of scope here: CSINode objects (upstream lets their per-driver
allocatable.count override the node's numbers, and uses their migrated-plugins
annotation to count in-tree volumes as CSI ones) and counting unbound claims by
their StorageClass's provisioner. ksched stores neither CSINode nor StorageClass
objects, so these paths behave as upstream's do when the objects are absent: such
volumes are not counted, and a node without attachable-volumes-* allocatable has
no limits and passes, as upstream's does.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

from framework.api.objects import Pod
from framework.api.quantity import value
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
from framework.plugins.helper import volume as vu
from framework.plugins.helper import FilterEachNode

NAME = "NodeVolumeLimits"

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
CSI_ATTACH_LIMIT_PREFIX = "attachable-volumes-csi-"
RESOURCE_NAME_LENGTH_LIMIT = 63


def csi_attach_limit_key(driver: str) -> str:
    """The allocatable resource name holding a driver's limit; long driver names
    are shortened to 23 characters plus 16 hex digits of their SHA-1."""
    if len(CSI_ATTACH_LIMIT_PREFIX) + len(driver) >= RESOURCE_NAME_LENGTH_LIMIT:
        digest = hashlib.sha1(driver.encode()).hexdigest()[:16]
        return CSI_ATTACH_LIMIT_PREFIX + driver[:23] + digest
    return CSI_ATTACH_LIMIT_PREFIX + driver


def volume_limits(node_info: NodeInfo) -> dict[str, int]:
    """The node's attachable-volumes-* allocatable, by resource name."""
    if node_info.node is None:
        return {}
    return {k: value(q) for k, q in node_info.node.allocatable_list.items() if k.startswith(ATTACHABLE_VOLUMES_PREFIX)}


def _is_inline_migratable(volume: Any) -> bool:
    return any(isinstance(volume.get(k), dict) for k in vu.MIGRATABLE_INLINE_SOURCES)


class NodeVolumeLimits(FilterEachNode):
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

    def _attachable_volumes(self, pod: Pod, new_pod: bool, out: dict[str, str]) -> Status | None:
        """Add the pod's countable volumes to `out` ("<driver>/<handle>" -> limit key)."""
        for v in vu.volumes(pod):
            ref = vu.pvc_volume_claim(pod, v)
            if ref is None:
                continue  # inline volumes count only through CSI migration (CSINode)
            claim, ephemeral = ref
            if not claim:
                return Status(Code.Error, "PersistentVolumeClaim had no name")
            pvc = self._handle.get_object("PersistentVolumeClaim", pod.namespace, claim)
            if pvc is None:
                if new_pod:
                    # The pod cannot run until the claim exists.
                    return Status(Code.UnschedulableAndUnresolvable,
                                  f"looking up PVC {pod.namespace}/{claim}: {vu.pvc_not_found(claim)}")
                continue  # an existing pod's missing claim is not counted
            if ephemeral:
                err = vu.volume_is_for_pod(pod, pvc)
                if err is not None:
                    return Status(Code.Error, err)
            pv = self._handle.get_object("PersistentVolume", "", pvc.volume_name) if pvc.volume_name else None
            if pv is None or not pv.csi_driver or not pv.csi_volume_handle:
                continue
            out[f"{pv.csi_driver}/{pv.csi_volume_handle}"] = csi_attach_limit_key(pv.csi_driver)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        new_volumes: dict[str, str] = {}
        status = self._attachable_volumes(pod, True, new_volumes)
        if status is not None or not new_volumes:
            return status
        limits = volume_limits(node_info)
        if not limits:
            return None
        attached: dict[str, str] = {}
        for pi in node_info.pods:
            status = self._attachable_volumes(pi.pod, False, attached)
            if status is not None:
                return status
        attached_count: Counter[str] = Counter()
        for unique_name, key in attached.items():
            # A volume already attached for another pod does not count twice.
            new_volumes.pop(unique_name, None)
            attached_count[key] += 1
        for key, count in Counter(new_volumes.values()).items():
            limit = limits.get(key)
            if limit is not None and attached_count[key] + count > limit:
                return Status(Code.Unschedulable, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
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
