"""scheduling.k8s.io/v1alpha2 Workload and PodGroup as typed objects (Kubernetes'
own gang API, KEP-4671 as 1.36 serves it), keyed by group (framework.api.groups:
`Workload.scheduling.k8s.io`, `PodGroup.scheduling.k8s.io`) beside Kueue's Workload
and Coscheduling's PodGroup. Shapes and formats are checked by their schema
(framework.api.schema.workload) before parsing; `update_errors` is upstream's
ValidateWorkloadUpdate / ValidatePodGroupUpdate immutability. No I/O."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

from framework.api.errors import ValidationError
from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY, api_kind, kind_key
from framework.api.meta import KubeObject, _list, _map, _opt_int, _str
from framework.api.objects import KINDS
from framework.api.validation import invalid

API_VERSION = "scheduling.k8s.io/v1alpha2"
# PodGroup status: condition types and PodGroupScheduled's reasons (v1alpha2 types.go)
POD_GROUP_SCHEDULED = "PodGroupScheduled"
DISRUPTION_TARGET = "DisruptionTarget"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
# the feature gates of these kinds and of their topology constraints (framework.features)
GENERIC_WORKLOAD = "GenericWorkload"
TOPOLOGY_AWARE = "TopologyAwareWorkloadScheduling"
WORKLOAD_AWARE_PREEMPTION = "WorkloadAwarePreemption"
# spec.disruptionMode (KEP-5710, 1.36): Pod (the default) lets members be preempted one
# by one; PodGroup evicts the whole group or none of it.
DISRUPTION_MODE_POD = "Pod"
DISRUPTION_MODE_POD_GROUP = "PodGroup"
# the fields WorkloadAwarePreemption serves on a PodGroup and on a Workload's templates
DISRUPTION_FIELDS = ("disruptionMode", "priorityClassName", "priority")


@dataclass(frozen=True, slots=True)
class SchedulingPolicy:
    """basic ({}) or gang {minCount}: min_count is None for basic."""

    min_count: int | None = None

    @property
    def gang(self) -> bool:
        return self.min_count is not None

    @property
    def name(self) -> str:
        return "Gang" if self.gang else "Basic"


@dataclass(frozen=True, slots=True)
class PodGroupTemplate:
    name: str
    policy: SchedulingPolicy
    topology_keys: tuple[str, ...] = ()


def _policy(spec: Mapping[str, Any], field: str) -> SchedulingPolicy:
    policy = _map(spec, "schedulingPolicy", field)
    gang = _map(policy, "gang", f"{field}.schedulingPolicy")
    if "gang" in policy and policy.get("gang") is not None:
        return SchedulingPolicy(min_count=_opt_int(gang, "minCount", f"{field}.schedulingPolicy.gang") or 0)
    return SchedulingPolicy()


def _topology_keys(spec: Mapping[str, Any], field: str) -> tuple[str, ...]:
    constraints = _map(spec, "schedulingConstraints", field)
    at = f"{field}.schedulingConstraints" if field else "schedulingConstraints"
    return tuple(_str(t, "key", f"{at}.topology[{i}]") if isinstance(t, Mapping) else ""
                 for i, t in enumerate(_list(constraints, "topology", at)))


class SchedulingWorkload(KubeObject):
    """scheduling.k8s.io/v1alpha2 Workload: the pod group templates of one workload."""

    __slots__ = ("templates", "controller_ref")
    kind = WORKLOAD_KEY

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        self.controller_ref: Mapping[str, Any] = _map(spec, "controllerRef", "spec")
        templates: list[PodGroupTemplate] = []
        for i, t in enumerate(_list(spec, "podGroupTemplates", "spec")):
            at = f"spec.podGroupTemplates[{i}]"
            if not isinstance(t, Mapping):
                raise ValidationError(at, "must be an object")
            templates.append(PodGroupTemplate(_str(t, "name", at), _policy(t, at), _topology_keys(t, at)))
        self.templates: Sequence[PodGroupTemplate] = tuple(templates)

    def template(self, name: str) -> PodGroupTemplate | None:
        return next((t for t in self.templates if t.name == name), None)


class SchedulingPodGroup(KubeObject):
    """scheduling.k8s.io/v1alpha2 PodGroup: one runtime group of pods (members name it
    in spec.schedulingGroup.podGroupName), its policy and topology constraint, and the
    PodGroupScheduled condition the scheduler writes."""

    __slots__ = ("policy", "topology_keys", "workload_name", "template_name", "conditions", "disruption_mode",
                 "priority", "priority_class_name")
    kind = POD_GROUP_KEY

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        spec = _map(raw, "spec", "")
        self.policy = _policy(spec, "spec")
        self.topology_keys = _topology_keys(spec, "spec")
        ref = _map(_map(spec, "podGroupTemplateRef", "spec"), "workload", "spec.podGroupTemplateRef")
        self.workload_name = _str(ref, "workloadName", "spec.podGroupTemplateRef.workload")
        self.template_name = _str(ref, "podGroupTemplateName", "spec.podGroupTemplateRef.workload")
        self.conditions: Sequence[Any] = _list(_map(raw, "status", ""), "conditions", "status")
        self.disruption_mode = _str(spec, "disruptionMode", "spec") or DISRUPTION_MODE_POD
        # None: no class resolved one (ksched then counts the members' own priorities)
        self.priority: int | None = _opt_int(spec, "priority", "spec")
        self.priority_class_name = _str(spec, "priorityClassName", "spec")

    @property
    def disrupted_whole(self) -> bool:
        """disruptionMode PodGroup: preemption evicts every member or none."""
        return self.disruption_mode == DISRUPTION_MODE_POD_GROUP

    @property
    def min_count(self) -> int:
        """The gang's minCount; 1 for a basic group (each pod on its own)."""
        return self.policy.min_count if self.policy.min_count is not None else 1

    def condition(self, kind: str) -> Mapping[str, Any] | None:
        return next((c for c in self.conditions if isinstance(c, Mapping) and c.get("type") == kind), None)


# Spec fields upstream makes immutable (+k8s:immutable; ValidateWorkloadUpdate, ValidatePodGroupUpdate).
_IMMUTABLE: dict[str, tuple[str, ...]] = {
    WORKLOAD_KEY: ("controllerRef", "podGroupTemplates"),
    POD_GROUP_KEY: ("podGroupTemplateRef", "schedulingPolicy", "schedulingConstraints", "resourceClaims",
                    *DISRUPTION_FIELDS),
}


def update_errors(raw: Mapping[str, Any], current: Mapping[str, Any]) -> list[ValidationError]:
    """What an update of a Workload or PodGroup may not change (`field is immutable`,
    as ValidateImmutableField words it); [] for other kinds."""
    fields = _IMMUTABLE.get(kind_key(raw) or "", ())
    spec, have = raw.get("spec") or {}, current.get("spec") or {}
    return [invalid(f"spec.{f}", spec.get(f), "field is immutable")
            for f in fields if spec.get(f) != have.get(f)]


def gate_of(key: str) -> str | None:
    """The feature gate that serves a kind (GenericWorkload for these), None for others."""
    return GENERIC_WORKLOAD if key in (WORKLOAD_KEY, POD_GROUP_KEY) else None


def gated_off(enabled: Callable[[str], bool]) -> frozenset[str]:
    """The kinds (store keys) whose gate `enabled` says is off: neither served nor discovered."""
    return frozenset(k for k in KINDS if (gate := gate_of(k)) is not None and not enabled(gate))


def not_served_message(key: str) -> str:
    return (f"{api_kind(key)} in {API_VERSION} is not served: the {GENERIC_WORKLOAD} feature gate is off "
            f"(--feature-gates {GENERIC_WORKLOAD}=true)")


KINDS.update({SchedulingWorkload.kind: SchedulingWorkload, SchedulingPodGroup.kind: SchedulingPodGroup})

__all__ = ["API_VERSION", "DISRUPTION_FIELDS", "DISRUPTION_MODE_POD", "DISRUPTION_MODE_POD_GROUP", "DISRUPTION_TARGET", "GENERIC_WORKLOAD", "POD_GROUP_SCHEDULED", "PodGroupTemplate",
           "REASON_PREEMPTION_BY_SCHEDULER", "REASON_SCHEDULER_ERROR", "REASON_UNSCHEDULABLE", "SchedulingPodGroup",
           "SchedulingPolicy", "SchedulingWorkload", "TOPOLOGY_AWARE", "WORKLOAD_AWARE_PREEMPTION", "gate_of", "gated_off", "not_served_message",
           "update_errors"]
