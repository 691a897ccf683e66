"""VolumeRestrictions: volumes that cannot be shared.

Upstream: pkg/scheduler/framework/plugins/volumerestrictions. Two rules:
- disk conflicts with pods already on the node: the same GCE PD unless every
  mount is read-only, the same AWS EBS volume id, the same ISCSI IQN or RBD image
  (sharing a Ceph monitor, same pool and image) unless every mount is read-only;
- a claim with access mode ReadWriteOncePod that some scheduled pod already uses
  blocks the pod on every node (preemption may free it, hence Unschedulable).
"""
from __future__ import annotations

from typing import Any, Hashable, Mapping, Sequence

from framework.api.objects import PersistentVolumeClaim, Pod
from framework.cache import NodeInfo, PodInfo
from framework.interface import (SKIP, ActionType, ClusterEvent, ClusterEventWithHint, Code, CycleState, Handle,
                                 PreFilterResult, QueueingHint, SignPurpose, Status)
from framework.plugins.helper import volume as vu
from framework.plugins.helper import FilterEachNode
from framework.plugins.helper.hints import as_objects
from framework.plugins.helper.signing import POD_ADDED, signed_unless_claims

NAME = "VolumeRestrictions"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)

_CONFLICT_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def _source(volume: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    s = volume.get(key)
    return s if isinstance(s, Mapping) else None


def needs_restrictions_check(volume: Mapping[str, Any]) -> bool:
    return any(_source(volume, k) is not None for k in _CONFLICT_SOURCES)


def _both_read_only(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.get("readOnly") is True and b.get("readOnly") is True


def _conflicts(volume: Mapping[str, Any], existing: Mapping[str, Any]) -> bool:
    disk, other = _source(volume, "gcePersistentDisk"), _source(existing, "gcePersistentDisk")
    if disk is not None and other is not None:
        if disk.get("pdName", "") == other.get("pdName", "") and not _both_read_only(disk, other):
            return True
    ebs, other = _source(volume, "awsElasticBlockStore"), _source(existing, "awsElasticBlockStore")
    if ebs is not None and other is not None and ebs.get("volumeID", "") == other.get("volumeID", ""):
        return True
    iscsi, other = _source(volume, "iscsi"), _source(existing, "iscsi")
    if iscsi is not None and other is not None:
        if iscsi.get("iqn", "") == other.get("iqn", "") and not _both_read_only(iscsi, other):
            return True
    rbd, other = _source(volume, "rbd"), _source(existing, "rbd")
    if rbd is not None and other is not None:
        shared_monitor = bool(set(rbd.get("monitors") or ()) & set(other.get("monitors") or ()))
        # An absent pool means the default one, "rbd".
        same_image = (rbd.get("pool") or "rbd") == (other.get("pool") or "rbd") and rbd.get("image", "") == other.get("image", "")
        if shared_monitor and same_image and not _both_read_only(rbd, other):
            return True
    return False


def is_volume_conflict(volume: Mapping[str, Any], pod: Pod) -> bool:
    """Whether `volume` conflicts with one of the volumes of `pod`."""
    return any(_conflicts(volume, existing) for existing in vu.volumes(pod))


def satisfy_volume_conflicts(pod: Pod, pods: list[PodInfo]) -> bool:
    for v in vu.volumes(pod):
        if not needs_restrictions_check(v):
            continue
        for pi in pods:
            if is_volume_conflict(v, pi.pod):
                return False
    return True


class _PreFilterState:
    """Names of the pod's ReadWriteOncePod claims and how many scheduled pods use them."""

    __slots__ = ("read_write_once_pod_pvcs", "conflicting_pvc_ref_count")

    def __init__(self, pvcs: frozenset[str], count: int) -> None:
        self.read_write_once_pod_pvcs = pvcs
        self.conflicting_pvc_ref_count = count

    def update_with_pod(self, pod_info: PodInfo, multiplier: int) -> None:
        names = vu.pod_claim_names(pod_info.pod)
        self.conflicting_pvc_ref_count += multiplier * sum(1 for n in names if n in self.read_write_once_pod_pvcs)

    def clone(self) -> "_PreFilterState":
        return _PreFilterState(self.read_write_once_pod_pvcs, self.conflicting_pvc_ref_count)


class VolumeRestrictions(FilterEachNode):
    name = NAME

    def monotone_events(self, pod: Pod) -> Sequence[ClusterEvent]:
        """A pod added to a node only uses more of its volumes (MonotoneEventsPlugin)."""
        return (POD_ADDED,)

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """SignPlugin: a pod with volume claims is not signed (signed_unless_claims)."""
        return signed_unless_claims(pod)

    def __init__(self, handle: Handle, queueing_hints: bool) -> None:
        self._handle = handle
        self._queueing_hints = queueing_hints

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "VolumeRestrictions":
        features = handle.features if handle is not None else None
        return cls(handle, features.enabled("SchedulerQueueingHints") if features is not None else True)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_actions = ActionType.Add
        if not self._queueing_hints:
            node_actions |= ActionType.UpdateNodeTaint | ActionType.UpdateNodeLabel
        return [
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.Delete), self.is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent("Node", node_actions)),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.Add),
                                 self.is_schedulable_after_persistent_volume_claim_added),
        ]

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A deleted pod of the namespace held a disk the pod conflicts with, or a
        claim it names (which may be ReadWriteOncePod; the claim is not looked up)."""
        deleted, _ = as_objects(Pod, old, new)
        if deleted is None or deleted.namespace != pod.namespace:
            return QueueingHint.QueueSkip
        if not satisfy_volume_conflicts(pod, [PodInfo(deleted)]):
            return QueueingHint.Queue
        claims = set(vu.pod_claim_names(pod))
        if any(n in claims for n in vu.pod_claim_names(deleted)):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def is_schedulable_after_persistent_volume_claim_added(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """The new claim is one the pod names in a persistentVolumeClaim volume."""
        _, claim = as_objects(PersistentVolumeClaim, old, new)
        return vu.after_pod_claim_added(pod, None, claim)

    def _read_write_once_pod_pvcs(self, pod: Pod) -> tuple[frozenset[str], str | None]:
        names: set[str] = set()
        for claim in vu.pod_claim_names(pod):
            pvc = self._handle.get_object("PersistentVolumeClaim", pod.namespace, claim)
            if pvc is None:
                return frozenset(), vu.pvc_not_found(claim)
            if vu.READ_WRITE_ONCE_POD in pvc.access_modes:
                names.add(pvc.name)
        return frozenset(names), None

    def _is_pvc_used_by_pods(self, key: str) -> bool:
        return any(key in ni.pvc_ref_counts for ni in self._handle.snapshot().list())

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.volumes:  # nothing to check and no claim to count: the Skip below, sooner
            return None, SKIP
        needs_check = any(needs_restrictions_check(v) for v in vu.volumes(pod))
        pvcs, missing = self._read_write_once_pod_pvcs(pod)
        if missing is not None:
            return None, Status(Code.UnschedulableAndUnresolvable, missing)
        # At most one pod can use a ReadWriteOncePod claim, so count claims in use.
        count = sum(1 for name in pvcs if self._is_pvc_used_by_pods(f"{pod.namespace}/{name}"))
        if not needs_check and count == 0:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(pvcs, count))
        return None, None

    def pre_filter_extensions(self) -> "VolumeRestrictions":
        return self

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_add: PodInfo, node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_info_to_add, 1)

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_remove: PodInfo, node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_info_to_remove, -1)

    def _update(self, state: CycleState, pod_info: PodInfo, multiplier: int) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return Status(Code.Error, f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_info, multiplier)
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not satisfy_volume_conflicts(pod, node_info.pods):
            return Status(Code.Unschedulable, ERR_REASON_DISK_CONFLICT)
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return Status(Code.Error, f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        if s.conflicting_pvc_ref_count > 0:
            return Status(Code.Unschedulable, ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
        return None


# --- Queueing hints ---------------------------------------------------------------------------

PLUGINS = [VolumeRestrictions]
