"""NodeVolumeLimits: a node may attach only so many CSI volumes per driver.

Upstream: pkg/scheduler/framework/plugins/nodevolumelimits (csi.go, CSILimits).
A volume counts as "<driver>/<volumeHandle>", once per node however many pods
share it: a claim bound to a CSI PersistentVolume by that PV's driver and handle;
an in-tree PV or inline volume (AWS EBS, GCE PD, Azure Disk, Cinder) by the CSI
driver it migrates to, when the node has a CSINode; an unbound claim (or one whose
PV is missing) by its StorageClass's provisioner with a handle private to this
plugin. VolumeAttachments on the node count too, unless a pod there already uses
the volume. The limit per driver is the node's CSINode `allocatable.count`; ksched
does not store CSINode objects yet, so a node without one falls back to its
allocatable "attachable-volumes-csi-<driver>" (upstream's pre-CSINode source).
"""
from __future__ import annotations

import hashlib
import secrets
from collections import Counter
from typing import Any, Callable, Hashable, Sequence

from framework.api.objects import Pod
from framework.api.quantity import value
from framework.cache import NodeInfo
from framework.interface import (SKIP, ActionType, ClusterEvent, ClusterEventWithHint, Code, CycleState, Handle,
                                 PreFilterResult, QueueingHint, SignPurpose, Status)
from framework.plugins.helper import volume as vu
from framework.plugins.helper import FilterEachNode
from framework.plugins.helper.signing import POD_ADDED, signed_unless_claims

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


def _ebs_handle(source: dict[str, Any]) -> str:
    vid = str(source.get("volumeID", ""))
    return vid.rsplit("/", 1)[-1] if vid.startswith("aws://") else vid


# In-tree plugin -> (the source's key in a PV or volume, its CSI driver, the CSI volume handle).
IN_TREE_MIGRATION: dict[str, tuple[str, str, Callable[[dict[str, Any]], str]]] = {
    "kubernetes.io/aws-ebs": ("awsElasticBlockStore", "ebs.csi.aws.com", _ebs_handle),
    "kubernetes.io/gce-pd": ("gcePersistentDisk", "pd.csi.storage.gke.io",
                             lambda s: f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{s.get('pdName', '')}"),
    "kubernetes.io/azure-disk": ("azureDisk", "disk.csi.azure.com", lambda s: str(s.get("diskURI", ""))),
    "kubernetes.io/cinder": ("cinder", "cinder.csi.openstack.org", lambda s: str(s.get("volumeID", ""))),
}


def _migrated(source_holder: Any, csi_node: Any) -> tuple[str, str]:
    """(driver, handle) of an in-tree volume source once migrated to CSI, which
    needs the node's CSINode (upstream's isCSIMigrationOn); ("", "") otherwise."""
    if csi_node is None or not isinstance(source_holder, dict):
        return "", ""
    for key, driver, handle in IN_TREE_MIGRATION.values():
        src = source_holder.get(key)
        if isinstance(src, dict):
            return driver, handle(src)
    return "", ""


def csi_node_limits(csi_node: Any) -> dict[str, int]:
    """Driver -> CSINode spec.drivers[].allocatable.count."""
    out: dict[str, int] = {}
    for d in (vu.raw_of(csi_node).get("spec") or {}).get("drivers") or []:
        count = ((d or {}).get("allocatable") or {}).get("count")
        if isinstance(count, int) and not isinstance(count, bool):
            out[str(d.get("name", ""))] = count
    return out


class NodeVolumeLimits(FilterEachNode):
    name = NAME

    def monotone_events(self, pod: Pod) -> Sequence[ClusterEvent]:
        """A pod added to a node only uses more of its volumes (MonotoneEventsPlugin)."""
        return (POD_ADDED,)

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """SignPlugin: a pod with volume claims is not signed (signed_unless_claims)."""
        return signed_unless_claims(pod)

    def __init__(self, handle: Handle) -> None:
        self._handle = handle
        # Unbound claims count under a handle no real volume has (upstream's randomVolumeIDPrefix).
        self._random_prefix = secrets.token_hex(16)

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
        return None, SKIP

    def pre_filter_extensions(self) -> None:
        return None

    def _attachable_volumes(self, pod: Pod, csi_node: Any, new_pod: bool, out: dict[str, str]) -> Status | None:
        """Add the pod's countable volumes to `out` ("<driver>/<handle>" -> driver)."""
        for v in vu.volumes(pod):
            ref = vu.pvc_volume_claim(pod, v)
            if ref is None:
                driver, handle = _migrated(v, csi_node)
                if driver and handle:
                    out[f"{driver}/{handle}"] = driver
                continue
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
            driver, handle = self._csi_driver_info(pvc, csi_node)
            if driver and handle:
                out[f"{driver}/{handle}"] = driver
        return None

    def _csi_driver_info(self, pvc: Any, csi_node: Any) -> tuple[str, str]:
        pv = self._handle.get_object("PersistentVolume", "", pvc.volume_name) if pvc.volume_name else None
        if pv is None:
            return self._driver_info_from_class(pvc, csi_node)
        if pv.csi_driver:
            return pv.csi_driver, pv.csi_volume_handle
        return _migrated(vu.raw_of(pv).get("spec"), csi_node)

    def _driver_info_from_class(self, pvc: Any, csi_node: Any) -> tuple[str, str]:
        """An unbound claim: its StorageClass's provisioner (migrated when in-tree)."""
        if not pvc.storage_class:
            return "", ""  # no class: bound before scheduling (immediate binding)
        sc = self._handle.get_object("StorageClass", "", pvc.storage_class)
        if sc is None:
            return "", ""
        handle = f"{self._random_prefix}-{pvc.namespace}/{pvc.name}"
        provisioner = str(vu.raw_of(sc).get("provisioner", ""))
        if provisioner in IN_TREE_MIGRATION:
            return (IN_TREE_MIGRATION[provisioner][1], handle) if csi_node is not None else ("", "")
        return provisioner, handle

    def _volume_limits(self, node_info: NodeInfo, csi_node: Any) -> dict[str, int]:
        if csi_node is not None:
            return csi_node_limits(csi_node)
        prefix = CSI_ATTACH_LIMIT_PREFIX
        return {k[len(prefix):]: v for k, v in volume_limits(node_info).items() if k.startswith(prefix)}

    def _volume_attachments(self, node_name: str, attached: dict[str, str], counts: Counter[str]) -> None:
        """VolumeAttachments on the node whose PV is a CSI volume no pod there uses yet."""
        for va in self._handle.list_objects("VolumeAttachment"):
            spec = vu.raw_of(va).get("spec") or {}
            if spec.get("nodeName") != node_name:
                continue
            attacher = str(spec.get("attacher") or "")
            pv_name = (spec.get("source") or {}).get("persistentVolumeName")
            pv = self._handle.get_object("PersistentVolume", "", pv_name) if attacher and pv_name else None
            if pv is None or not pv.csi_driver:
                continue
            unique = f"{attacher}/{pv.csi_volume_handle}"
            if unique not in attached:
                attached[unique] = attacher
                counts[attacher] += 1

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.volumes or node_info.node is None:
            return None
        csi_node = self._handle.get_object("CSINode", "", node_info.name)
        new_volumes: dict[str, str] = {}
        status = self._attachable_volumes(pod, csi_node, True, new_volumes)
        if status is not None or not new_volumes:
            return status
        limits = self._volume_limits(node_info, csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        for pi in node_info.pods:
            status = self._attachable_volumes(pi.pod, csi_node, False, attached)
            if status is not None:
                return status
        attached_count: Counter[str] = Counter()
        for unique_name, driver in attached.items():
            # A volume already attached for another pod does not count twice.
            new_volumes.pop(unique_name, None)
            attached_count[driver] += 1
        self._volume_attachments(node_info.name, attached, attached_count)
        for driver, count in Counter(new_volumes.values()).items():
            limit = limits.get(driver)
            if limit is not None and attached_count[driver] + count > limit:
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
