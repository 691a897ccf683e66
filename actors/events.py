"""Cluster events (framework.interface.ClusterEvent) derived from store changes,
as upstream's informer handlers name them (eventhandlers.go, events.go)."""
from __future__ import annotations

from framework.api.objects import KubeObject, Node, Pod
from framework.interface import ActionType, ClusterEvent


def node_update_action(old: Node, new: Node) -> ActionType:
    """Which parts of a node changed (upstream's nodeSchedulingPropertiesChange)."""
    action = ActionType(0)
    if old.allocatable_list != new.allocatable_list:
        action |= ActionType.UpdateNodeAllocatable
    if old.labels != new.labels:
        action |= ActionType.UpdateNodeLabel
    if old.unschedulable != new.unschedulable or [(t.key, t.value, t.effect) for t in old.taints] != [
            (t.key, t.value, t.effect) for t in new.taints]:
        action |= ActionType.UpdateNodeTaint
    if (old.raw.get("status") or {}).get("conditions") != (new.raw.get("status") or {}).get("conditions"):
        action |= ActionType.UpdateNodeCondition
    if old.meta.annotations != new.meta.annotations:
        action |= ActionType.UpdateNodeAnnotation
    return action


def assigned_pod_update_action(old: Pod, new: Pod) -> ActionType:
    action = ActionType(0)
    if old.labels != new.labels:
        action |= ActionType.UpdatePodLabel
    if _smaller(new, old):
        action |= ActionType.UpdatePodScaleDown
    if old.spec.get("tolerations") != new.spec.get("tolerations"):
        action |= ActionType.UpdatePodTolerations
    return action


def _smaller(new: Pod, old: Pod) -> bool:
    a, b = new.resource, old.resource
    return a.milli_cpu < b.milli_cpu or a.memory < b.memory


def event_for(kind: str, change: str, old: KubeObject | None, new: KubeObject | None) -> ClusterEvent | None:
    """The ClusterEvent for a store change, None when nothing schedulable changed."""
    if change == "DELETED":
        resource = "AssignedPod" if kind == "Pod" else kind
        return ClusterEvent(resource, ActionType.Delete, f"{resource}Delete")
    if change == "ADDED" or old is None:
        resource = "AssignedPod" if kind == "Pod" else kind
        return ClusterEvent(resource, ActionType.Add, f"{resource}Add")
    if kind == "Node":
        assert isinstance(old, Node) and isinstance(new, Node)
        action = node_update_action(old, new)
        return ClusterEvent("Node", action, "NodeUpdate") if action else None
    if kind == "Pod":
        assert isinstance(old, Pod) and isinstance(new, Pod)
        action = assigned_pod_update_action(old, new)
        return ClusterEvent("AssignedPod", action, "AssignedPodUpdate") if action else None
    return ClusterEvent(kind, ActionType.Update, f"{kind}Update")
