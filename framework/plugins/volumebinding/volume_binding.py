"""VolumeBinding: a pod's PersistentVolumeClaims must exist, must not be going
away, and, once bound, must be bound to a PersistentVolume whose node affinity
the node satisfies; claims of a WaitForFirstConsumer class must find, per node, a
free PV that fits (FindMatchingVolume) or be provisionable there (provisioner,
allowedTopologies, CSIStorageCapacity when the CSIDriver publishes capacity).

Upstream: pkg/scheduler/framework/plugins/volumebinding (volume_binding.go and the
parts of binder.go that decide a node). ksched's store holds no StorageClass
objects yet, so in the daemon every claim that is not fully bound counts as an
immediate-binding claim and PreFilter rejects the pod until the claim is bound,
as upstream does for a claim whose class does not exist. Binding delayed claims
(assuming PVs, provisioning) is not done: a pod feasible only through such a
binding fails at PreBind with an error saying so. Score runs only with the
StorageCapacityScoring gate, which ksched does not implement, so PreScore always
answers Skip.
"""
from __future__ import annotations

from typing import Any, Hashable

from framework.api.errors import ValidationError
from framework.api.labels import LabelSelector
from framework.api.objects import PersistentVolume, PersistentVolumeClaim, Pod
from framework.api.quantity import parse_quantity, value
from framework.cache import NodeInfo
from framework.interface import (SKIP, MAX_NODE_SCORE, ActionType, ClusterEvent, ClusterEventWithHint, Code, CycleState,
                                 Handle, PreFilterResult, QueueingHint, SignPurpose, Status)
from framework.plugins.helper import volume as vu
from framework.plugins.helper import FilterEachNode
from framework.plugins.noderesources.requested_to_capacity_ratio import (MAX_CUSTOM_PRIORITY_SCORE, MAX_UTILIZATION,
    build_broken_linear_function, go_round)
from framework.plugins.helper.signing import signed_unless_claims

NAME = "VolumeBinding"
STATE_KEY = NAME
DEFAULT_BIND_TIMEOUT_SECONDS = 600

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
BETA_PV_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"

MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


class _StateData:
    """Written at PreFilter, filled per node at Filter, read at Reserve/PreBind."""

    __slots__ = ("bound_claims", "unbound_claims_delay_binding", "pod_volumes_by_node", "all_bound",
                 "nodes_needing_binding", "static_bindings")

    def __init__(self, bound: list[PersistentVolumeClaim] | None = None,
                 delayed: list[PersistentVolumeClaim] | None = None) -> None:
        self.bound_claims = bound or []
        self.unbound_claims_delay_binding = delayed or []
        # node name -> the claims this pod would use there (all bound here).
        self.pod_volumes_by_node: dict[str, list[PersistentVolumeClaim]] = {}
        self.all_bound = False
        self.nodes_needing_binding: set[str] = set()  # feasible only by binding delayed claims
        # node -> (claim, the free PV it would bind to there), for StorageCapacityScoring
        self.static_bindings: dict[str, list[tuple[PersistentVolumeClaim, PersistentVolume]]] = {}

    def clone(self) -> "_StateData":
        # Upstream shares the state between clones too (Filter results accumulate).
        return self


class VolumeBinding(FilterEachNode):
    name = NAME

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """SignPlugin: a pod with volume claims is not signed (signed_unless_claims)."""
        return signed_unless_claims(pod)

    def __init__(self, handle: Handle, bind_timeout_seconds: int, queueing_hints: bool,
                 shape: list[tuple[int, int]] | None = None) -> None:
        self._handle = handle
        self.bind_timeout_seconds = bind_timeout_seconds
        self._queueing_hints = queueing_hints
        # StorageCapacityScoring: utilization -> score, scores scaled to [0, 100]; None: no scorer.
        self._scorer = None if shape is None else build_broken_linear_function(
            [(u, sc * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, sc in shape])

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "VolumeBinding":
        args = args or {}
        timeout = args.get("bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS)
        if isinstance(timeout, bool) or not isinstance(timeout, int):
            raise ValidationError("bindTimeoutSeconds", "must be an integer")
        if timeout < 0:
            raise ValidationError("bindTimeoutSeconds", "invalid BindTimeoutSeconds, should not be a negative value")
        features = handle.features if handle is not None else None
        capacity_scoring = features is not None and features.enabled("StorageCapacityScoring")
        if args.get("shape") is not None and not capacity_scoring:
            raise ValidationError(
                "shape", "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring")
        shape = _shape(args.get("shape")) if capacity_scoring else None
        hints = features.enabled("SchedulerQueueingHints") if features is not None else True
        return cls(handle, timeout, hints, shape)

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
        claims, reason = self._pod_claims(pod) if pod.volumes else ([], None)  # no volume: no claim
        if reason is not None:
            return None, Status(Code.UnschedulableAndUnresolvable, reason)
        if not claims:
            state.write(STATE_KEY, _StateData())
            return None, SKIP
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

    def _unbound_claims_fit(self, claims: list[PersistentVolumeClaim], node_info: NodeInfo) -> tuple[bool, bool]:
        """(every delayed claim matches a free PV or can be provisioned on the node,
        enough storage capacity): upstream's findMatchingVolumes then checkVolumeProvisions."""
        labels = node_info.node.labels if node_info.node is not None else {}
        chosen: set[str] = set()
        to_provision: list[PersistentVolumeClaim] = []
        static: list[tuple[PersistentVolumeClaim, PersistentVolume]] = []
        self._static_bindings = static
        for pvc in sorted(claims, key=_requested_storage):  # smallest request first
            pv = self._find_matching_volume(pvc, labels, chosen)
            if pv is None:
                to_provision.append(pvc)
            else:
                chosen.add(pv.name)
                static.append((pvc, pv))
        for pvc in to_provision:
            sc = self._handle.get_object("StorageClass", "", pvc.storage_class) if pvc.storage_class else None
            if sc is None:
                return False, True
            raw_sc = vu.raw_of(sc)
            provisioner = str(raw_sc.get("provisioner") or "")
            if provisioner in ("", NOT_SUPPORTED_PROVISIONER) or not _topology_allows(raw_sc, labels):
                return False, True
            if not self._has_enough_capacity(provisioner, pvc, raw_sc, labels):
                return True, False
        return True, True

    def _find_matching_volume(self, pvc: PersistentVolumeClaim, labels: dict[str, str],
                              chosen: set[str]) -> PersistentVolume | None:
        """upstream's FindMatchingVolume (scheduler path): a PV pre-bound to the claim,
        else the smallest Available PV of the claim's class that fits the request,
        selector, access modes, volume mode and the node."""
        raw_pvc = vu.raw_of(pvc)
        spec = raw_pvc.get("spec") or {}
        requested = _requested_storage(pvc)
        selector = LabelSelector.parse(spec.get("selector"), "spec.selector") if spec.get("selector") else None
        best: tuple[int, PersistentVolume] | None = None
        for pv in self._handle.list_objects("PersistentVolume"):
            if pv.name in chosen:
                continue
            raw = vu.raw_of(pv)
            pv_spec = raw.get("spec") or {}
            ref = pv_spec.get("claimRef")
            bound_to_claim = isinstance(ref, dict) and ref.get("name") == pvc.name and \
                (ref.get("namespace") or "default") == pvc.namespace and ref.get("uid", "") in ("", pvc.meta.uid)
            if ref is not None and not bound_to_claim:
                continue
            size = _quantity(((pv_spec.get("capacity") or {}).get("storage")))
            if size < requested or (pv_spec.get("volumeMode") or "Filesystem") != (spec.get("volumeMode") or "Filesystem"):
                continue
            if pv.meta.deletion_timestamp is not None:
                continue
            affinity_ok = pv.required_node_affinity is None or pv.required_node_affinity.matches(labels, "")
            if bound_to_claim:
                return pv if affinity_ok else None
            if ((raw.get("status") or {}).get("phase")) != "Available":
                continue
            if selector is not None and not selector.matches(pv.labels):
                continue
            pv_class = pv.meta.annotations.get(BETA_PV_STORAGE_CLASS_ANNOTATION, pv.storage_class_name)
            if pv_class != pvc.storage_class or not affinity_ok:
                continue
            if not set(pvc.access_modes) <= set(pv_spec.get("accessModes") or []):
                continue
            if best is None or size < best[0]:
                best = (size, pv)
        return best[1] if best is not None else None

    def _has_enough_capacity(self, provisioner: str, pvc: PersistentVolumeClaim, sc: Any, labels: dict[str, str]) -> bool:
        """upstream's hasEnoughCapacity: only drivers that publish storage capacity
        (CSIDriver.spec.storageCapacity) are checked, against CSIStorageCapacity objects."""
        driver = self._handle.get_object("CSIDriver", "", provisioner)
        if driver is None or not (vu.raw_of(driver).get("spec") or {}).get("storageCapacity"):
            return True
        requested = _requested_storage(pvc)
        class_name = (vu.raw_of(sc).get("metadata") or {}).get("name", "")
        for cap in self._handle.list_objects("CSIStorageCapacity"):
            raw = vu.raw_of(cap)
            if raw.get("storageClassName") != class_name:
                continue
            topology = LabelSelector.parse(raw.get("nodeTopology"), "nodeTopology")
            if topology is None or not topology.matches(labels):
                continue
            limit = raw.get("maximumVolumeSize") or raw.get("capacity")
            if limit is not None and _quantity(limit) >= requested:
                return True
        return False

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _StateData):
            return Status(Code.Error, f'reading "{STATE_KEY}" from cycleState: not found')
        bound_ok, pvs_found = True, True
        if data.bound_claims:
            bound_ok, pvs_found = self._check_bound_claims(data.bound_claims, node_info)
        unbound_ok, enough_space = True, True
        self._static_bindings = []
        if data.unbound_claims_delay_binding:
            unbound_ok, enough_space = self._unbound_claims_fit(data.unbound_claims_delay_binding, node_info)
        reasons: list[str] = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not enough_space:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        if reasons:
            return Status(Code.UnschedulableAndUnresolvable, *reasons)
        data.pod_volumes_by_node[node_info.name] = list(data.bound_claims)
        if data.unbound_claims_delay_binding:
            data.nodes_needing_binding.add(node_info.name)
            data.static_bindings[node_info.name] = list(self._static_bindings)
        return None

    # --- Score -------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        if self._scorer is None:
            return SKIP  # no scorer without StorageCapacityScoring
        data = state.get(STATE_KEY)
        if not isinstance(data, _StateData):
            return Status(Code.Error, f'reading "{STATE_KEY}" from cycleState: not found')
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        """Per storage class, requested / capacity of the PVs the claims would bind
        to on this node, through the shape; the mean over classes, rounded.
        (Dynamic provisioning has no capacity here: ksched has no CSIStorageCapacity
        in its store, so only static bindings score.)"""
        data = state.get(STATE_KEY)
        if self._scorer is None or not isinstance(data, _StateData):
            return 0, None
        per_class: dict[str, list[int]] = {}
        for pvc, pv in data.static_bindings.get(node_info.name, []):
            acc = per_class.setdefault(pvc.storage_class, [0, 0])
            acc[0] += _requested_storage(pvc)
            acc[1] += _quantity(((vu.raw_of(pv).get("spec") or {}).get("capacity") or {}).get("storage"))
        if not per_class:
            return 0, None
        total = 0
        for requested, capacity in per_class.values():
            util = MAX_UTILIZATION if capacity == 0 or requested > capacity else requested * MAX_UTILIZATION // capacity
            total += self._scorer(util)
        return go_round(total / len(per_class)), None

    def score_extensions(self) -> None:
        return None

    # --- Reserve / PreBind -----------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        data = state.get(STATE_KEY)
        if not isinstance(data, _StateData):
            return Status(Code.Error, f'reading "{STATE_KEY}" from cycleState: not found')
        # Binding a delayed claim (static PV or provisioning) through the API is not
        # done by ksched yet: PreBind fails such a pod instead of running it unbound.
        data.all_bound = node_name not in data.nodes_needing_binding
        if not data.all_bound:
            return None  # PreBind reports it
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
        if node_name in data.nodes_needing_binding:
            return Status(Code.Error, f'binding PersistentVolumeClaims of pod {pod.namespace}/{pod.name} to volumes '
                                      f'on node "{node_name}" is not supported yet')
        return Status(Code.Error, f'no pod volumes found for node "{node_name}"')


def _shape(raw: Any) -> list[tuple[int, int]]:
    """VolumeBindingArgs.shape (default {0: 10, 100: 0}), sorted by utilization."""
    if raw is None:
        return [(0, 10), (100, 0)]
    if not isinstance(raw, list) or not raw:
        raise ValidationError("shape", "at least one point must be specified")
    points = []
    for i, p in enumerate(raw):
        if not isinstance(p, dict) or not all(isinstance(p.get(k), int) for k in ("utilization", "score")):
            raise ValidationError(f"shape[{i}]", "utilization and score must be integers")
        if not 0 <= p["utilization"] <= 100:
            raise ValidationError(f"shape[{i}].utilization", "must be in the range [0, 100]")
        if not 0 <= p["score"] <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ValidationError(f"shape[{i}].score", "must be in the range [0, 10]")
        if points and p["utilization"] <= points[-1][0]:
            raise ValidationError(f"shape[{i}].utilization", "values must be sorted in increasing order")
        points.append((p["utilization"], p["score"]))
    return points


def _quantity(raw: Any) -> int:
    try:
        return value(parse_quantity(raw)) if raw is not None else 0
    except ValidationError:
        return 0


def _requested_storage(pvc: PersistentVolumeClaim) -> int:
    spec = vu.raw_of(pvc).get("spec") or {}
    return _quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage"))


def _topology_allows(sc: Any, labels: dict[str, str]) -> bool:
    """v1helper.MatchTopologySelectorTerms: no terms, or one term whose every
    expression has the node's label among its values."""
    terms = sc.get("allowedTopologies") or []
    if not terms:
        return True
    for term in terms:
        exprs = (term or {}).get("matchLabelExpressions") or []
        if all(labels.get(e.get("key")) in (e.get("values") or []) for e in exprs):
            return True
    return False


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
