"""The Priority admission plugin's work, done by the Store on its write path
(upstream's plugin/pkg/admission/priority).

- A new pod naming spec.priorityClassName gets that class's value as spec.priority
  and its preemptionPolicy (when the pod gives none); a pod with no class name gets
  the globalDefault class's name, value and policy when one exists. A class that
  does not exist, or a pod whose own priority or preemptionPolicy disagrees with the
  class's, is refused naming the field, with upstream's message.
- ksched has no admission chain in front of it, so a pod with neither a class name
  nor a default class to fall back on keeps the spec.priority it gives (0 when it
  gives none) where upstream would refuse a non-zero one (docs/decisions.md).
- The built-in classes system-cluster-critical and system-node-critical always
  resolve. Only one PriorityClass may be globalDefault; a class's value and
  preemptionPolicy cannot change in an update; a user class may not take a
  `system-` name with another value.

- A new scheduling.k8s.io PodGroup (and each template of a new Workload) is admitted
  the same way for its spec.priorityClassName / spec.priority (KEP-5710; only while
  WorkloadAwarePreemption is on): the class's value, or the globalDefault class's name
  and value; a missing class or a differing given priority is refused. With neither,
  the priority stays unset and the members' own priorities count (docs/decisions.md).

`mutated` is the write chain's mutating-admission stage for a new object, entered
once: the pod's priority then Kueue's pod defaults (framework.kueue.pods), or a
PodGroup's or Workload's priority. `check_priority_class` is its validating stage.
Pure functions over the store's current PriorityClasses (and, for Kueue's pod
defaults, its PodGroups); errors are ValidationError.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Iterable

from framework.api.errors import ValidationError
from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY
from framework.api.objects import PriorityClass
from framework.api.validation import forbidden, invalid
from framework.kueue.pods import kueue_pod_defaults

PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
SYSTEM_PREFIX = "system-"
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}


@dataclass(frozen=True, slots=True)
class Resolved:
    name: str
    value: int
    preemption_policy: str


def _resolve(name: str, classes: Mapping[str, PriorityClass], at: str = "spec") -> Resolved:
    if name in SYSTEM_PRIORITY_CLASSES:
        return Resolved(name, SYSTEM_PRIORITY_CLASSES[name], PREEMPT_LOWER_PRIORITY)
    pc = classes.get(name)
    if pc is None:
        raise ValidationError(f"{at}.priorityClassName", f"no PriorityClass with name {name} was found")
    return Resolved(pc.name, pc.value, pc.preemption_policy)


def default_class(classes: Iterable[PriorityClass]) -> PriorityClass | None:
    """The globalDefault class; should several exist, the lowest value wins (as upstream)."""
    defaults = [pc for pc in classes if pc.global_default]
    return min(defaults, key=lambda pc: pc.value) if defaults else None


def priority_basis(spec: Mapping[str, Any], classes: Mapping[str, PriorityClass]) -> tuple[Any, ...] | None:
    """All that admit_pod reads of `classes` for a pod with this spec: the named class's
    name, value and policy; () when it reads none (no class name, a given priority);
    the globalDefault class's, or ("",) for none. None when the named class does not
    exist (the pod is refused). Two pods with equal specs and equal bases get equal
    admissions (the write chain's memo of pod specs keys on it)."""
    name = spec.get("priorityClassName") or ""
    if name:
        if type(name) is not str:
            return None  # the schema refuses it
        if name in SYSTEM_PRIORITY_CLASSES:
            return (name,)
        pc = classes.get(name)
        return None if pc is None else (pc.name, pc.value, pc.preemption_policy)
    if spec.get("priority") is not None:
        return ()
    fallback = default_class(classes.values())
    return ("",) if fallback is None else (fallback.name, fallback.value, fallback.preemption_policy)


def admit_pod(raw: Mapping[str, Any], classes: Mapping[str, PriorityClass]) -> dict[str, Any]:
    """A new pod with spec.priority, spec.preemptionPolicy (and a defaulted
    spec.priorityClassName) resolved; the input is not changed."""
    spec = dict(raw.get("spec") or {})
    name = spec.get("priorityClassName") or ""
    given = spec.get("priority")
    if name:
        resolved = _resolve(name, classes)
    else:
        fallback = default_class(classes.values())
        if fallback is None or given is not None:
            spec["priority"] = given if given is not None else 0
            spec.setdefault("preemptionPolicy", PREEMPT_LOWER_PRIORITY)
            return {**raw, "spec": spec}
        resolved = Resolved(fallback.name, fallback.value, fallback.preemption_policy)
        spec["priorityClassName"] = resolved.name
    if given is not None and given != resolved.value:
        raise ValidationError("spec.priority", f"the integer value of priority ({given}) must not be provided in pod "
                              f"spec; priority admission controller computed {resolved.value} from the given "
                              "PriorityClass name")
    policy = spec.get("preemptionPolicy")
    if policy and policy != resolved.preemption_policy:
        raise ValidationError("spec.preemptionPolicy", f"the string value of PreemptionPolicy ({policy}) must not be "
                              f"provided in pod spec; priority admission controller computed "
                              f"{resolved.preemption_policy} from the given PriorityClass name")
    spec["priority"] = resolved.value
    spec["preemptionPolicy"] = resolved.preemption_policy
    return {**raw, "spec": spec}


def _admit_group_priority(spec: Mapping[str, Any], classes: Mapping[str, PriorityClass], at: str) -> dict[str, Any]:
    out = dict(spec)
    name = out.get("priorityClassName") or ""
    given = out.get("priority")
    if name:
        resolved = _resolve(name, classes, at)
    else:
        fallback = default_class(classes.values())
        if fallback is None or given is not None:
            return out
        resolved = Resolved(fallback.name, fallback.value, fallback.preemption_policy)
        out["priorityClassName"] = resolved.name
    if given is not None and given != resolved.value:
        raise ValidationError(f"{at}.priority", f"the integer value of priority ({given}) must not be provided in "
                              f"pod group spec; priority admission controller computed {resolved.value} from the "
                              "given PriorityClass name")
    out["priority"] = resolved.value
    return out


def admit_pod_group(raw: Mapping[str, Any], classes: Mapping[str, PriorityClass]) -> dict[str, Any]:
    """A new scheduling.k8s.io PodGroup with spec.priority resolved (a copy)."""
    return {**raw, "spec": _admit_group_priority(raw.get("spec") or {}, classes, "spec")}


def admit_workload(raw: Mapping[str, Any], classes: Mapping[str, PriorityClass]) -> dict[str, Any]:
    """A new scheduling.k8s.io Workload with each template's priority resolved (a copy)."""
    spec = dict(raw.get("spec") or {})
    spec["podGroupTemplates"] = [
        _admit_group_priority(t, classes, f"spec.podGroupTemplates[{i}]") if isinstance(t, Mapping) else t
        for i, t in enumerate(spec.get("podGroupTemplates") or [])]
    return {**raw, "spec": spec}


def mutated(key: str, raw: Mapping[str, Any], classes: Mapping[str, PriorityClass],
            pod_groups: Mapping[str, Any], group_priority: bool) -> Mapping[str, Any]:
    """A new object of kind key `key` through mutating admission (a copy when changed):
    a pod gets its priority (admit_pod), then Kueue's pod defaults (`pod_groups`: the
    stored ksched PodGroups); a scheduling.k8s.io PodGroup or Workload its priority
    while `group_priority` (WorkloadAwarePreemption) is on. Other kinds pass as they are."""
    if group_priority and key == POD_GROUP_KEY:
        return admit_pod_group(raw, classes)
    if group_priority and key == WORKLOAD_KEY:
        return admit_workload(raw, classes)
    if key != "Pod":
        return raw
    return kueue_pod_defaults(admit_pod(raw, classes), pod_groups)


def kept_group_priority(raw: Mapping[str, Any], current: Mapping[str, Any]) -> Mapping[str, Any]:
    """An update of a PodGroup that leaves out the priority admission set keeps it
    (as a pod's server-set fields are kept), so the immutability check compares like
    with like."""
    spec, have = raw.get("spec"), current.get("spec") or {}
    if not isinstance(spec, Mapping) or have.get("priority") is None or spec.get("priority") is not None:
        return raw
    kept = {**spec, "priority": have["priority"]}
    if not spec.get("priorityClassName") and have.get("priorityClassName"):
        kept["priorityClassName"] = have["priorityClassName"]
    return {**raw, "spec": kept}


def _not_a_system_class(pc: PriorityClass) -> str:
    """Why a `system-` class is not one of the built-ins ("" when it is one)."""
    known = SYSTEM_PRIORITY_CLASSES.get(pc.name)
    if known is None:
        return f"{pc.name} is not a known system priority class"
    if pc.value != known:
        return f"value of {pc.name} PriorityClass must be {known}"
    if pc.global_default:
        return f"globalDefault of {pc.name} PriorityClass must be false"
    return ""


def check_priority_class(pc: PriorityClass, current: PriorityClass | None,
                         classes: Mapping[str, PriorityClass]) -> None:
    """A PriorityClass create (current None) or update, against the stored classes."""
    reason = _not_a_system_class(pc) if pc.name.startswith(SYSTEM_PREFIX) else ""
    if reason:
        raise forbidden("metadata.name", f"priority class names with '{SYSTEM_PREFIX}' prefix are reserved for "
                                         f"system use only. error: {reason}")
    if current is not None:
        if pc.value != current.value:
            raise forbidden("value", "may not be changed in an update.")
        if pc.preemption_policy != current.preemption_policy:
            raise invalid("preemptionPolicy", pc.preemption_policy, "field is immutable")
    if pc.global_default:
        other = default_class(c for c in classes.values() if c.name != pc.name)
        if other is not None:
            raise ValidationError("globalDefault", f"PriorityClass {other.name} is already marked as default. "
                                                   "Only one default can exist")
