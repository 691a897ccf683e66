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


# Upstream's updatePodOther: a pod update none of the extractors below names. Only a
# plugin registered for every Pod update (Pod/Update, Pod/All, or a wildcard) hears it.
UPDATE_POD_OTHER = ActionType(int(ActionType.Update) & ~sum(
    int(a) for a in (ActionType.UpdateNodeAllocatable, ActionType.UpdateNodeLabel, ActionType.UpdateNodeTaint,
                     ActionType.UpdateNodeCondition, ActionType.UpdateNodeAnnotation, ActionType.UpdatePodLabel,
                     ActionType.UpdatePodScaleDown, ActionType.UpdatePodTolerations,
                     ActionType.UpdatePodSchedulingGatesEliminated, ActionType.UpdatePodGeneratedResourceClaim)))


def pod_update_actions(old: Pod, new: Pod) -> list[ActionType]:
    """What a pod update changed, one action per kind of change, in upstream's order
    (PodSchedulingPropertiesChange's extractors); [UPDATE_POD_OTHER] when none."""
    actions = []
    if old.labels != new.labels:
        actions.append(ActionType.UpdatePodLabel)
    if _scaled_down(old, new):
        actions.append(ActionType.UpdatePodScaleDown)
    if old.scheduling_gates and not new.scheduling_gates:
        actions.append(ActionType.UpdatePodSchedulingGatesEliminated)
    # Tolerations can only be added (API validation), so a count is enough.
    if len(old.tolerations) != len(new.tolerations):
        actions.append(ActionType.UpdatePodTolerations)
    if (old.raw.get("status") or {}).get("resourceClaimStatuses") != (new.raw.get("status") or {}).get(
            "resourceClaimStatuses"):
        actions.append(ActionType.UpdatePodGeneratedResourceClaim)  # the resourceclaim controller made a claim
    return actions or [UPDATE_POD_OTHER]


def assigned_pod_update_action(old: Pod, new: Pod) -> ActionType:
    """The actions of an assigned pod's update, together; 0 when none applies."""
    action = ActionType(0)
    for a in pod_update_actions(old, new):
        if a != UPDATE_POD_OTHER:
            action |= a
    return action


def _scaled_down(old: Pod, new: Pod) -> bool:
    """A request went down or went away (upstream's extractPodScaleDown)."""
    after = new.requests
    return any(name not in after or amount > after[name] for name, amount in old.requests.items())


# A kind's Add and Delete events, made once: a ClusterEvent is frozen, so one equal
# object serves every change of that kind (a bound pod's AssignedPodAdd, a deletion's).
_ADDED_OR_DELETED: dict[tuple[str, bool], ClusterEvent] = {}


def _added_or_deleted(kind: str, deleted: bool) -> ClusterEvent:
    resource = "AssignedPod" if kind == "Pod" else kind
    if deleted:
        return ClusterEvent(resource, ActionType.Delete, f"{resource}Delete")
    return ClusterEvent(resource, ActionType.Add, f"{resource}Add")


def event_for(kind: str, change: str, old: KubeObject | None, new: KubeObject | None) -> ClusterEvent | None:
    """The ClusterEvent for a store change, None when nothing schedulable changed."""
    if change == "DELETED" or change == "ADDED" or old is None:
        key = (kind, change == "DELETED")
        event = _ADDED_OR_DELETED.get(key)
        if event is None:
            event = _ADDED_OR_DELETED[key] = _added_or_deleted(*key)
        return event
    if kind == "Node":
        assert isinstance(old, Node) and isinstance(new, Node)
        action = node_update_action(old, new)
        return ClusterEvent("Node", action, "NodeUpdate") if action else None
    if kind == "Pod":
        assert isinstance(old, Pod) and isinstance(new, Pod)
        action = assigned_pod_update_action(old, new)
        return ClusterEvent("AssignedPod", action, "AssignedPodUpdate") if action else None
    return ClusterEvent(kind, ActionType.Update, f"{kind}Update")


def unscheduled_pod_update_events(old: Pod | None, new: Pod) -> list[ClusterEvent]:
    """The UnscheduledPod events of a pending pod's update (upstream's
    PodSchedulingPropertiesChange); with no old object, every kind of change."""
    actions = pod_update_actions(old, new) if old is not None else [ActionType.Update]
    return [ClusterEvent("UnschedulablePod", a, f"UnscheduledPod{a.name or 'UpdatePodOther'}") for a in actions]
