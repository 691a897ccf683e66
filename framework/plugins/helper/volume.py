"""Pod-volume helpers the volume plugins share (upstream: component-helpers
storage/ephemeral and storage/volume). Not a plugin module."""
from __future__ import annotations

from typing import Any, Iterator, Mapping

from framework.api.objects import PersistentVolumeClaim, Pod
from framework.interface import QueueingHint

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
CLAIM_LOST = "Lost"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"

# Inline volume sources that csi-translation-lib can migrate to a CSI driver.
MIGRATABLE_INLINE_SOURCES = (
    "gcePersistentDisk", "awsElasticBlockStore", "cinder", "azureDisk", "azureFile", "vsphereVolume", "portworxVolume",
)


def volumes(pod: Pod) -> Iterator[Mapping[str, Any]]:
    for v in pod.volumes:
        if isinstance(v, Mapping):
            yield v


def pvc_volume_claim(pod: Pod, volume: Mapping[str, Any]) -> tuple[str, bool] | None:
    """(claim name, is generic ephemeral) of a volume backed by a PVC, else None.
    An ephemeral volume's claim is named "<pod>-<volume>" (ephemeral.VolumeClaimName)."""
    pvc = volume.get("persistentVolumeClaim")
    if isinstance(pvc, Mapping):
        return str(pvc.get("claimName") or ""), False
    if isinstance(volume.get("ephemeral"), Mapping):
        return f"{pod.name}-{volume.get('name') or ''}", True
    return None


def persistent_volume_claim_name(volume: Mapping[str, Any]) -> str | None:
    """spec.volumes[].persistentVolumeClaim.claimName, None for other sources."""
    pvc = volume.get("persistentVolumeClaim")
    if isinstance(pvc, Mapping):
        return str(pvc.get("claimName") or "")
    return None


def pod_claim_names(pod: Pod) -> list[str]:
    """Claim names of the pod's persistentVolumeClaim volumes (ephemeral ones excluded)."""
    return [n for n in (persistent_volume_claim_name(v) for v in volumes(pod)) if n is not None]


def pod_uses_claim(pod: Pod, namespace: str, claim: str) -> bool:
    """Whether the pod mounts claim `claim` of `namespace` (directly or as ephemeral volume)."""
    if pod.namespace != namespace:
        return False
    for v in volumes(pod):
        ref = pvc_volume_claim(pod, v)
        if ref is not None and ref[0] == claim:
            return True
    return False


def volume_is_for_pod(pod: Pod, pvc: PersistentVolumeClaim) -> str | None:
    """None when the pod controls the claim of its ephemeral volume, else the
    error upstream's ephemeral.VolumeIsForPod gives."""
    for ref in pvc.meta.owner_references:
        if isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("uid") == pod.meta.uid:
            return None
    return f"PVC {pvc.namespace}/{pvc.name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"


def pvc_not_found(name: str) -> str:
    """The apiserver's NotFound message for a claim."""
    return f'persistentvolumeclaim "{name}" not found'


def pv_not_found(name: str) -> str:
    return f'persistentvolume "{name}" not found'


def storage_class_not_found(name: str) -> str:
    return f'storageclass.storage.k8s.io "{name}" not found'


def is_pvc_fully_bound(pvc: PersistentVolumeClaim) -> bool:
    return pvc.volume_name != "" and ANN_BIND_COMPLETED in pvc.meta.annotations


def raw_of(obj: Any) -> Mapping[str, Any]:
    """The JSON map of an object: typed objects keep it in `raw`; kinds ksched does
    not model (StorageClass, CSINode, ...) may arrive as plain maps."""
    raw = getattr(obj, "raw", obj)
    return raw if isinstance(raw, Mapping) else {}


def volume_binding_mode(storage_class: Any) -> str | None:
    """StorageClass.volumeBindingMode; None when unset."""
    mode = raw_of(storage_class).get("volumeBindingMode")
    return mode if isinstance(mode, str) else None


def after_pod_claim_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Queueing hint: Queue when the added or changed claim is one the pod names
    in a persistentVolumeClaim volume."""
    if new is not None and new.namespace == pod.namespace and new.name in pod_claim_names(pod):
        return QueueingHint.Queue
    return QueueingHint.QueueSkip


def after_claim_of_pod_changed(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Queueing hint: Queue when the added or changed claim backs one of the pod's
    volumes, generic ephemeral ones included."""
    if new is not None and pod_uses_claim(pod, new.namespace, new.name):
        return QueueingHint.Queue
    return QueueingHint.QueueSkip
