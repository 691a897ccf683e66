"""The storage objects the volume plugins read: PersistentVolumeClaim,
PersistentVolume and the storage.k8s.io/v1 kinds."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from framework.api.errors import ValidationError
from framework.api.labels import NodeSelector
from framework.api.meta import KubeObject, _list, _map, _str

BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def _str_list(raw: Mapping[str, Any], key: str, field: str) -> list[str]:
    v = _list(raw, key, field)
    if not all(isinstance(x, str) for x in v):
        raise ValidationError(f"{field}.{key}", "must be a list of strings")
    return v


class PersistentVolumeClaim(KubeObject):
    """v1 PersistentVolumeClaim: what the volume plugins read."""

    kind = "PersistentVolumeClaim"

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        status = _map(raw, "status", "")
        self.volume_name = _str(spec, "volumeName", "spec")
        self.storage_class_name = _str(spec, "storageClassName", "spec")
        self.access_modes = _str_list(spec, "accessModes", "spec")
        self.phase = _str(status, "phase", "status") or "Pending"

    @property
    def storage_class(self) -> str:
        """The claim's class: the beta annotation wins over spec.storageClassName
        (upstream's GetPersistentVolumeClaimClass); "" for none."""
        beta = self.meta.annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
        return beta if beta is not None else self.storage_class_name


class PersistentVolume(KubeObject):
    """v1 PersistentVolume: what the volume plugins read."""

    kind = "PersistentVolume"
    namespaced = False

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        affinity = _map(spec, "nodeAffinity", "spec")
        req = affinity.get("required")
        self.required_node_affinity: NodeSelector | None = (
            NodeSelector.parse(req, "spec.nodeAffinity.required") if req is not None else None
        )
        self.storage_class_name = _str(spec, "storageClassName", "spec")
        csi = _map(spec, "csi", "spec")
        # CSI source: the driver and its id for the volume ("" when not a CSI volume).
        self.csi_driver = _str(csi, "driver", "spec.csi")
        self.csi_volume_handle = _str(csi, "volumeHandle", "spec.csi")


class StorageObject(KubeObject):
    """A storage.k8s.io/v1 object the volume plugins read as JSON (StorageClass,
    CSINode, CSIDriver, VolumeAttachment): cluster-scoped, no parsing beyond metadata.
    The store holds and validates them (framework.api.schema.kinds)."""

    namespaced = False


class StorageClass(StorageObject):
    kind = "StorageClass"


class CSINode(StorageObject):
    kind = "CSINode"


class CSIDriver(StorageObject):
    kind = "CSIDriver"


class VolumeAttachment(StorageObject):
    kind = "VolumeAttachment"
