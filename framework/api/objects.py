"""Typed, validated views of Kubernetes objects.

Each class is built from the object's JSON dict (kept as `raw`, never mutated) and
parses once what the scheduler reads on the hot path. Bad input raises
ValidationError naming the field path. Objects are immutable: a change is a new
object built from a new dict.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from framework.api.errors import ValidationError
from framework.api.groups import kind_key
from framework.api.labels import LabelSelector, Taint
# The object modules beside this one; their public names are importable from here, as
# they were when this module held them all (out-of-tree plugins import them so).
from framework.api.meta import DEFAULT_NAMESPACE, KubeObject, ObjectMeta, _list, _map, _opt_int, _str
from framework.api.pod import DEFAULT_SCHEDULER_NAME, POD_GROUP_LABEL, Container, ContainerPort, Pod, PodResources
from framework.api.resources import Resource, parse_resource_list
from framework.api.storage import (
    BETA_STORAGE_CLASS_ANNOTATION,
    CSIDriver,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    StorageObject,
    VolumeAttachment,
)

__all__ = [
    "BETA_STORAGE_CLASS_ANNOTATION", "DEFAULT_NAMESPACE", "DEFAULT_SCHEDULER_NAME", "KINDS", "POD_GROUP_LABEL",
    "CSIDriver", "CSINode", "Container", "ContainerPort", "KubeObject", "Namespace", "Node", "ObjectMeta",
    "PersistentVolume", "PersistentVolumeClaim", "Pod", "PodDisruptionBudget", "PodGroup", "PodResources",
    "PriorityClass", "ReplicaSet", "ReplicationController", "SelectorObject", "Service", "StatefulSet",
    "StorageClass", "StorageObject", "VolumeAttachment", "parse_as", "parse_object",
]


class Node(KubeObject):
    kind = "Node"
    namespaced = False

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        status = _map(raw, "status", "")
        unsched = spec.get("unschedulable", False)
        if not isinstance(unsched, bool):
            raise ValidationError("spec.unschedulable", "must be a boolean")
        self.unschedulable = unsched
        self.taints: list[Taint] = []
        for i, t in enumerate(_list(spec, "taints", "spec")):
            f = f"spec.taints[{i}]"
            if not isinstance(t, Mapping):
                raise ValidationError(f, "must be an object")
            key = _str(t, "key", f)
            if not key:
                raise ValidationError(f"{f}.key", "is required")
            effect = _str(t, "effect", f)
            if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                raise ValidationError(f"{f}.effect", f"unsupported effect {effect!r}")
            self.taints.append(Taint(key, _str(t, "value", f), effect))
        self.capacity = parse_resource_list(status.get("capacity"), "status.capacity")
        self.allocatable_list = parse_resource_list(status.get("allocatable"), "status.allocatable")
        self.allocatable = Resource.from_list(self.allocatable_list)
        self.images: list[tuple[list[str], int]] = []
        for i, img in enumerate(_list(status, "images", "status")):
            f = f"status.images[{i}]"
            if not isinstance(img, Mapping):
                raise ValidationError(f, "must be an object")
            names = img.get("names") or []
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ValidationError(f"{f}.names", "must be a list of strings")
            self.images.append((names, _opt_int(img, "sizeBytes", f) or 0))


class PodGroup(KubeObject):
    kind = "PodGroup"

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        mm = _opt_int(spec, "minMember", "spec")
        if mm is None:
            mm = 0
        if mm < 0:
            raise ValidationError("spec.minMember", "must be greater than or equal to 0")
        self.min_member = mm
        self.min_resources = parse_resource_list(spec.get("minResources"), "spec.minResources") if spec.get("minResources") is not None else None
        t = _opt_int(spec, "scheduleTimeoutSeconds", "spec")
        if t is not None and t < 0:
            raise ValidationError("spec.scheduleTimeoutSeconds", "must be greater than or equal to 0")
        self.schedule_timeout_seconds = t
        self.status = _map(raw, "status", "")


class PriorityClass(KubeObject):
    kind = "PriorityClass"
    namespaced = False

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        v = raw.get("value")
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValidationError("value", "must be an integer")
        if v > 1_000_000_000 and not self.name.startswith("system-"):
            raise ValidationError("value", "must be at most 1000000000 for user priority classes")
        self.value = v
        gd = raw.get("globalDefault", False)
        if not isinstance(gd, bool):
            raise ValidationError("globalDefault", "must be a boolean")
        self.global_default = gd
        self.preemption_policy = _str(raw, "preemptionPolicy", "") or "PreemptLowerPriority"


class SelectorObject(KubeObject):
    """Service, ReplicationController, ReplicaSet, StatefulSet: what SelectorSpread reads."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        sel = spec.get("selector")
        self.selector: LabelSelector | None
        if sel is None:
            self.selector = None
        elif self.kind in ("Service", "ReplicationController"):
            if not isinstance(sel, Mapping) or not all(isinstance(v, str) for v in sel.values()):
                raise ValidationError("spec.selector", "must be a map of strings to strings")
            self.selector = LabelSelector.from_map(sel) if sel else None
        else:
            self.selector = LabelSelector.parse(sel, "spec.selector")


class Service(SelectorObject):
    kind = "Service"


class ReplicationController(SelectorObject):
    kind = "ReplicationController"


class ReplicaSet(SelectorObject):
    kind = "ReplicaSet"


class StatefulSet(SelectorObject):
    kind = "StatefulSet"


class PodDisruptionBudget(KubeObject):
    kind = "PodDisruptionBudget"

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        self.selector = LabelSelector.parse(spec.get("selector"), "spec.selector")
        status = _map(raw, "status", "")
        self.disruptions_allowed = _opt_int(status, "disruptionsAllowed", "status") or 0
        self.disrupted_pods = _map(status, "disruptedPods", "status")


class Namespace(KubeObject):
    kind = "Namespace"
    namespaced = False


KINDS: dict[str, type[KubeObject]] = {
    cls.kind: cls
    for cls in (Pod, Node, PodGroup, PriorityClass, Service, ReplicationController, ReplicaSet, StatefulSet,
                PodDisruptionBudget, Namespace, PersistentVolumeClaim, PersistentVolume, StorageClass, CSINode,
                CSIDriver, VolumeAttachment)
}


def parse_object(raw: Mapping[str, Any]) -> KubeObject:
    """Build the typed object for `raw["kind"]`."""
    return parse_as(kind_key(raw), raw)  # a group-qualified key for the kinds framework.api.groups names


def parse_as(kind: str | None, raw: Mapping[str, Any]) -> KubeObject:
    """Build the typed object of kind key `kind` (kind_key of `raw`, decided by the caller)."""
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise ValidationError("", "object must be a map")
    cls = KINDS.get(kind) if kind is not None else None
    if cls is None:
        raise ValidationError("kind", f"unsupported kind {kind!r}; expected one of {', '.join(sorted(KINDS))}")
    try:
        return cls(raw)
    except ValidationError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError, RecursionError) as e:
        # The schema (framework.api.schema) refuses bad shapes first; this keeps the
        # contract for callers that parse without it: bad input is a ValidationError.
        raise ValidationError("", f"{kind} cannot be parsed: {type(e).__name__}: {e}") from None
