"""VolumeBinding: a pod's PersistentVolumeClaims must exist, must not be going
away, and, once bound, must be bound to a PersistentVolume whose node affinity
the node satisfies.

Upstream: pkg/scheduler/framework/plugins/volumebinding (volume_binding.go and the
parts of binder.go that decide a node). ksched stores no StorageClass objects, so
in practice every claim that is not fully bound counts as an immediate-binding
claim and PreFilter rejects the pod until the claim is bound, as upstream does
for a claim whose class does not exist. Should a StorageClass with
volumeBindingMode WaitForFirstConsumer be found, its unbound claims pass
PreFilter, but Filter neither matches static PVs nor plans dynamic provisioning:
it rejects every node with "node(s) didn't find available persistent volumes to
bind". Score runs only with the StorageCapacityScoring gate, which ksched does
not implement, so PreScore always answers Skip.
"""
from __future__ import annotations

from typing import Any

from framework.api.errors import ValidationError
from framework.api.objects import PersistentVolumeClaim, Pod
from framework.api.quantity import parse_quantity, value
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

NAME = "VolumeBinding"
STATE_KEY = NAME
DEFAULT_BIND_TIMEOUT_SECONDS = 600

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"

MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


class _StateData:
    """Written at PreFilter, filled per node at Filter, read at Reserve/PreBind."""

    __slots__ = ("bound_claims", "unbound_claims_delay_binding", "pod_volumes_by_node", "all_bound")

    def __init__(self, bound: list[PersistentVolumeClaim] | None = None,
                 delayed: list[PersistentVolumeClaim] | None = None) -> None:
        self.bound_claims = bound or []
        self.unbound_claims_delay_binding = delayed or []
        # node name -> the claims this pod would use there (all bound here).
        self.pod_volumes_by_node: dict[str, list[PersistentVolumeClaim]] = {}
        self.all_bound = False

    def clone(self) -> "_StateData":
        # Upstream shares the state between clones too (Filter results accumulate).
        return self


class VolumeBinding(FilterEachNode):
    name = NAME

    def __init__(self, handle: Handle, bind_timeout_seconds: int, queueing_hints: bool) -> None:
        self._handle = handle
        self.bind_timeout_seconds = bind_timeout_seconds
        self._queueing_hints = queueing_hints

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "VolumeBinding":
        args = args or {}
        timeout = args.get("bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS)
        if isinstance(timeout, bool) or not isinstance(timeout, int):
            raise ValidationError("bindTimeoutSeconds", "must be an integer")
        if timeout < 0:
            raise ValidationError("bindTimeoutSeconds", "invalid BindTimeoutSeconds, should not be a negative value")
        features = handle.features if handle is not None else None
        if args.get("shape") is not None:
            raise ValidationError(
                "shape", "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring")
        hints = features.enabled("SchedulerQueueingHints") if features is not None else True
        return cls(handle, timeout, hints)

    # --- EnqueueExtensions -------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_actions = ActionType.Add | ActionType.UpdateNodeLabel
        if not self._queueing_hints:
            node_actions |= ActionType.UpdateNodeTaint
        return [
            ClusterEventWithHint(ClusterEvent("StorageClass", ActionType.Add | ActionType.Update),
                                 _after_storage_class_change),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.Add | ActionType.Update),
                                 vu.after_claim_of_pod_changed),
            ClusterEventWithHint(ClusterEvent("PersistentVolume", ActionType.Add | ActionType.Update)),
            ClusterEventWithHint(ClusterEvent("Node", node_actions)),
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.Add | ActionType.Update), _after_csi_node_change),
            ClusterEventWithHint(ClusterEvent("CSIDriver", ActionType.Update), _after_csi_driver_change),
            ClusterEventWithHint(ClusterEvent("CSIStorageCapacity", ActionType.Add | ActionType.Update),
                                 _after_csi_storage_capacity_change),
        ]

    # --- PreFilter ------------------------------------------------------------------------

    def _pod_claims(self, pod: Pod) -> tuple[list[PersistentVolumeClaim], str | None]:
        """The pod's claims, or the first reason one of them is unusable
        (upstream's podHasPVCs)."""
        claims: list[PersistentVolumeClaim] = []
        for v in vu.volumes(pod):
            ref = vu.pvc_volume_claim(pod, v)
            if ref is None:
                continue
            claim_name, ephemeral = ref
            pvc = self._handle.get_object("PersistentVolumeClaim", pod.namespace, claim_name)
            if pvc is None:
                if ephemeral:
                    return claims, f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{claim_name}"'
                return claims, vu.pvc_not_found(claim_name)
            if pvc.phase == vu.CLAIM_LOST:
                return claims, f'persistentvolumeclaim "{pvc.name}" bound to non-existent persistentvolume "{pvc.volume_name}"'
            if pvc.meta.deletion_timestamp is not None:
                return claims, f'persistentvolumeclaim "{pvc.name}" is being deleted'
            if ephemeral:
                err = vu.volume_is_for_pod(pod, pvc)
                if err is not None:
                    return claims, err
            claims.append(pvc)
        return claims, None

    def _is_delay_binding_mode(self, pvc: PersistentVolumeClaim) -> tuple[bool, str | None]:
        class_name = pvc.storage_class
        if not class_name:
            return False, None
        sc = self._handle.get_object("StorageClass", "", class_name)
        if sc is None:
            return False, None
        mode = vu.volume_binding_mode(sc)
        if mode is None:
            return False, f'VolumeBindingMode not set for StorageClass "{class_name}"'
        return mode == WAIT_FOR_FIRST_CONSUMER, None

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        claims, reason = self._pod_claims(pod)
        if reason is not None:
            return None, Status(Code.UnschedulableAndUnresolvable, reason)
        if not claims:
            state.write(STATE_KEY, _StateData())
            return None, Status(Code.Skip)
        bound: list[PersistentVolumeClaim] = []
        delayed: list[PersistentVolumeClaim] = []
        immediate = 0
        for pvc in claims:
            if vu.is_pvc_fully_bound(pvc):
                bound.append(pvc)
                continue
            delay, err = self._is_delay_binding_mode(pvc)
            if err is not None:
                return None, Status(Code.Error, err)
            # A claim pre-bound to a volume waits for the PV controller, like an immediate one.
            if delay and not pvc.volume_name:
                delayed.append(pvc)
            else:
                immediate += 1
        if immediate:
            return None, Status(Code.UnschedulableAndUnresolvable, ERR_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, _StateData(bound, delayed))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    # --- Filter ------------------------------------------------------------------------------

    def _check_bound_claims(self, claims: list[PersistentVolumeClaim], node_info: NodeInfo) -> tuple[bool, bool]:
        """(node affinity satisfied, every PV found), stopping at the first miss."""
        labels = node_info.node.labels if node_info.node is not None else {}
        for pvc in claims:
            pv = self._handle.get_object("PersistentVolume", "", pvc.volume_name)
            if pv is None:
                return True, False
            # Upstream checks the PV's affinity against the node's labels only.
            if pv.required_node_affinity is not None and not pv.required_node_affinity.matches(labels, ""):
                return False, True
        return True, True

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _StateData):
            return Status(Code.Error, f'reading "{STATE_KEY}" from cycleState: not found')
        bound_ok, pvs_found = True, True
        if data.bound_claims:
            bound_ok, pvs_found = self._check_bound_claims(data.bound_claims, node_info)
        unbound_ok = not data.unbound_claims_delay_binding
        reasons: list[str] = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        if reasons:
            return Status(Code.UnschedulableAndUnresolvable, *reasons)
        data.pod_volumes_by_node[node_info.name] = list(data.bound_claims)
        return None

    # --- Score -------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        # No scorer without StorageCapacityScoring.
        return Status(Code.Skip)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        return 0, None

    def score_extensions(self) -> None:
        return None

    # --- Reserve / PreBind -----------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _StateData):
            return Status(Code.Error, f'reading "{STATE_KEY}" from cycleState: not found')
        # Only fully bound claims ever pass Filter here, so nothing is left to bind.
        data.all_bound = True
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        # Nothing was assumed in Reserve.
        return None

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _StateData):
            return Status(Code.Error, f'reading "{STATE_KEY}" from cycleState: not found')
        if data.all_bound:
            return None
        return Status(Code.Error, f'no pod volumes found for node "{node_name}"')


# --- Queueing hints ---------------------------------------------------------------------------

def _after_storage_class_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QueueingHint.Queue
    if vu.raw_of(old).get("allowedTopologies") != vu.raw_of(new).get("allowedTopologies"):
        return QueueingHint.Queue
    return QueueingHint.QueueSkip


def _annotation(obj: Any, key: str) -> str:
    meta = vu.raw_of(obj).get("metadata") or {}
    return (meta.get("annotations") or {}).get(key, "")


def _after_csi_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QueueingHint.Queue
    if _annotation(old, MIGRATED_PLUGINS_ANNOTATION) != _annotation(new, MIGRATED_PLUGINS_ANNOTATION):
        return QueueingHint.Queue
    return QueueingHint.QueueSkip


def _storage_capacity_on(driver: Any) -> bool:
    return (vu.raw_of(driver).get("spec") or {}).get("storageCapacity") is True


def _after_csi_driver_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    name = (vu.raw_of(new).get("metadata") or {}).get("name")
    for v in vu.volumes(pod):
        csi = v.get("csi")
        if not isinstance(csi, dict) or csi.get("driver") != name:
            continue
        if _storage_capacity_on(old) and not _storage_capacity_on(new):
            return QueueingHint.Queue
    return QueueingHint.QueueSkip


def _volume_limit(capacity: Any) -> int | None:
    """maximumVolumeSize when set (it is more precise), else capacity."""
    raw = vu.raw_of(capacity)
    q = raw.get("maximumVolumeSize")
    if q is None:
        q = raw.get("capacity")
    return value(parse_quantity(q)) if q is not None else None


def _after_csi_storage_capacity_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if old is None:
        return QueueingHint.Queue
    old_limit, new_limit = _volume_limit(old), _volume_limit(new)
    if new_limit is not None and (old_limit is None or new_limit > old_limit):
        return QueueingHint.Queue
    return QueueingHint.QueueSkip


PLUGINS = [VolumeBinding]
