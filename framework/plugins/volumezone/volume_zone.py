"""VolumeZone: a pod whose bound PersistentVolumes carry zone/region labels fits
only nodes in those zones/regions.

Upstream: pkg/scheduler/framework/plugins/volumezone. A PV label value may list
several zones joined by "__". A node without any topology label fits (single-zone
clusters). ksched stores no StorageClass objects, so an unbound claim that names
a class is rejected with the class's NotFound message, as upstream does when the
class is missing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable

from framework.api.objects import Pod
from framework.cache import NodeInfo
from framework.interface import (SKIP, ActionType, ClusterEvent, ClusterEventWithHint, Code, CycleState, Handle,
                                 PreFilterResult, SignPurpose, Status)
from framework.plugins.helper import volume as vu
from framework.plugins.helper import FilterEachNode
from framework.plugins.selectorspread.selector_spread import (LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_TOPOLOGY_REGION, LABEL_TOPOLOGY_ZONE)
from framework.plugins.helper.signing import signed_unless_claims

NAME = "VolumeZone"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON_CONFLICT = "node(s) had no available volume zone"

TOPOLOGY_LABELS = (
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_REGION,
)
_GA_LABEL = {LABEL_FAILURE_DOMAIN_BETA_ZONE: LABEL_TOPOLOGY_ZONE, LABEL_FAILURE_DOMAIN_BETA_REGION: LABEL_TOPOLOGY_REGION}
MULTI_ZONE_DELIMITER = "__"


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """The zones a label value lists; None when one of them is empty (LabelZonesToSet)."""
    zones = [z.strip() for z in value.split(MULTI_ZONE_DELIMITER)]
    if any(not z for z in zones):
        return None
    return frozenset(zones)


class _StateData:
    __slots__ = ("pod_pv_topologies",)

    def __init__(self, topologies: list[PVTopology]) -> None:
        self.pod_pv_topologies = topologies

    def clone(self) -> "_StateData":
        return self


class VolumeZone(FilterEachNode):
    name = NAME

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """SignPlugin: a pod with volume claims is not signed (signed_unless_claims)."""
        return signed_unless_claims(pod)

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "VolumeZone":
        return cls(handle)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("StorageClass", ActionType.Add)),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.Add | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint)),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.Add | ActionType.Update), vu.after_pod_claim_added),
            ClusterEventWithHint(ClusterEvent("PersistentVolume", ActionType.Add | ActionType.Update)),
        ]

    def _pv_topologies(self, pod: Pod) -> tuple[list[PVTopology], Status | None]:
        out: list[PVTopology] = []
        for claim in vu.pod_claim_names(pod):
            if not claim:
                return [], Status(Code.UnschedulableAndUnresolvable, "PersistentVolumeClaim had no name")
            pvc = self._handle.get_object("PersistentVolumeClaim", pod.namespace, claim)
            if pvc is None:
                return [], Status(Code.UnschedulableAndUnresolvable, vu.pvc_not_found(claim))
            if not pvc.volume_name:
                class_name = pvc.storage_class
                if not class_name:
                    return [], Status(Code.UnschedulableAndUnresolvable, "PersistentVolumeClaim had no pv name and storageClass name")
                sc = self._handle.get_object("StorageClass", "", class_name)
                if sc is None:
                    return [], Status(Code.UnschedulableAndUnresolvable, vu.storage_class_not_found(class_name))
                mode = vu.volume_binding_mode(sc)
                if mode is None:
                    return [], Status(Code.UnschedulableAndUnresolvable, f'VolumeBindingMode not set for StorageClass "{class_name}"')
                if mode == "WaitForFirstConsumer":
                    # Not bound yet: VolumeBinding picks a volume for the node.
                    continue
                return [], Status(Code.UnschedulableAndUnresolvable, "PersistentVolume had no name")
            pv = self._handle.get_object("PersistentVolume", "", pvc.volume_name)
            if pv is None:
                return [], Status(Code.UnschedulableAndUnresolvable, vu.pv_not_found(pvc.volume_name))
            for key in TOPOLOGY_LABELS:
                value = pv.labels.get(key)
                if value is None:
                    continue
                zones = label_zones_to_set(value)
                if zones is not None:  # an unparsable label is ignored
                    out.append(PVTopology(pv.name, key, zones))
        return out, None

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.volumes:  # no claim, so no topology: the Skip below, sooner
            return None, SKIP
        topologies, status = self._pv_topologies(pod)
        if status is not None:
            return None, status
        if not topologies:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _StateData(topologies))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.volumes:
            return None
        data = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(data, _StateData):
            topologies = data.pod_pv_topologies
        else:
            topologies, status = self._pv_topologies(pod)
            if status is not None:
                return status
        labels = node_info.node.labels if node_info.node is not None else {}
        if not any(k in labels for k in TOPOLOGY_LABELS):
            return None
        for t in topologies:
            v = labels.get(t.key)
            if v is None:
                # A PV's beta label also matches the node's GA label.
                v = labels.get(_GA_LABEL.get(t.key, t.key))
            if v is None or v not in t.values:
                return Status(Code.UnschedulableAndUnresolvable, ERR_REASON_CONFLICT)
        return None


PLUGINS = [VolumeZone]
