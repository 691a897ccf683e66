"""scheduling.k8s.io/v1alpha2 Workload and PodGroup (Kubernetes' own gang API, 1.36),
with the rules of their declarative validation tags (scheduling/v1alpha2/types.go:
+k8s:required, +k8s:minimum, +k8s:maxItems, +k8s:format, +k8s:unionMember) and the
object-meta rules of ValidateWorkload / ValidatePodGroup. Immutability on update is
framework.api.workload_api.update_errors; the feature gates are the store's."""
from __future__ import annotations

from typing import Any, Mapping

from framework.api.groups import PREFERRED_TOPOLOGY_ANNOTATION
from framework.api.schema.common import TYPE_META, conditions, object_meta
from framework.api.schema.types import _absent, Ctx, Int, ListOf, Obj, Str
from framework.api.validation import invalid, is_dns1123_label, is_dns1123_subdomain, is_qualified_name

MAX_POD_GROUP_TEMPLATES = 8  # WorkloadMaxPodGroupTemplates
MAX_RESOURCE_CLAIMS = 4  # MaxPodGroupResourceClaims
MAX_TOPOLOGY_CONSTRAINTS = 1
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
DISRUPTION_MODES = ("Pod", "PodGroup")
# KEP-5710's fields of a PodGroup and a template (gate WorkloadAwarePreemption):
# disruptionMode Pod|PodGroup, priorityClassName (k8s-long-name), priority (<= 1e9).
DISRUPTION_FIELDS = {
    "disruptionMode": Str(enum=DISRUPTION_MODES),
    "priorityClassName": Str(fmt=is_dns1123_subdomain),
    "priority": Int(32, hi=HIGHEST_USER_DEFINABLE_PRIORITY),
}


def is_path_segment_name(value: str) -> list[str]:
    """k8s-path-segment-name (IsValidPathSegmentName)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def _union(*members: str):
    """+k8s:unionMember: exactly one of `members` set (an empty object counts as set)."""
    listed = ", ".join(f"`{m}`" for m in members)

    def check(value: Mapping[str, Any], path: str, ctx: Ctx) -> None:
        have = [m for m in members if value.get(m) is not None]
        if len(have) > 1:
            ctx.add(invalid(path, "{" + ", ".join(have) + "}", f"must specify exactly one of: {listed}"))
        elif not have:
            ctx.add(invalid(path, "", f"must specify one of: {listed}"))
    return check


SCHEDULING_POLICY = Obj({
    "basic": Obj({}, more=frozenset()),
    "gang": Obj({"minCount": Int(32, lo=1, range_msg="must be greater than or equal to 1")},
                required=("minCount",), more=frozenset()),
}, checks=(_union("basic", "gang"),), more=frozenset())

SCHEDULING_CONSTRAINTS = Obj({
    "topology": ListOf(Obj({"key": Str(fmt=is_qualified_name, allow_empty_fmt=False)}, required=("key",),
                           more=frozenset()), max_items=MAX_TOPOLOGY_CONSTRAINTS),
}, more=frozenset())

RESOURCE_CLAIM = Obj({
    "name": Str(fmt=is_dns1123_label, allow_empty_fmt=False),
    "resourceClaimName": Str(fmt=is_dns1123_subdomain),
    "resourceClaimTemplateName": Str(fmt=is_dns1123_subdomain),
}, required=("name",), checks=(_union("resourceClaimName", "resourceClaimTemplateName"),), more=frozenset())
RESOURCE_CLAIMS = ListOf(RESOURCE_CLAIM, unique_key="name", max_items=MAX_RESOURCE_CLAIMS)

POD_GROUP_TEMPLATE = Obj({
    "name": Str(fmt=is_dns1123_label, allow_empty_fmt=False),
    "schedulingPolicy": SCHEDULING_POLICY,
    "schedulingConstraints": SCHEDULING_CONSTRAINTS,
    "resourceClaims": RESOURCE_CLAIMS,
    **DISRUPTION_FIELDS,
}, required=("name", "schedulingPolicy"), more=frozenset())


def _preferred_topology_key(obj: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    """ksched's preferred-level annotation names a node label key (a qualified name)."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    value = annotations.get(PREFERRED_TOPOLOGY_ANNOTATION) if isinstance(annotations, Mapping) else None
    if value is None:
        return
    at = f"metadata.annotations[{PREFERRED_TOPOLOGY_ANNOTATION}]"
    problems = is_qualified_name(value) if isinstance(value, str) and value else ["must be a node label key"]
    for problem in problems:
        ctx.add(invalid(at, value, problem))


def _spec_left_out(spec: Obj):
    """No spec is an empty spec (a Go struct): its required fields are still required."""
    def check(obj: Mapping[str, Any], path: str, ctx: Ctx) -> None:
        if _absent(obj.get("spec")):
            spec.check({}, f"{path}.spec" if path else "spec", ctx)
    return check


WORKLOAD_SPEC = Obj({
    "controllerRef": Obj({
        "apiGroup": Str(fmt=is_dns1123_subdomain),
        "kind": Str(fmt=is_path_segment_name), "name": Str(fmt=is_path_segment_name),
    }, required=("kind", "name"), more=frozenset()),
    "podGroupTemplates": ListOf(POD_GROUP_TEMPLATE, unique_key="name", max_items=MAX_POD_GROUP_TEMPLATES),
}, required=("podGroupTemplates",), more=frozenset())
WORKLOAD = Obj({"metadata": object_meta(), "spec": WORKLOAD_SPEC}, checks=(_spec_left_out(WORKLOAD_SPEC),),
               more=TYPE_META)

POD_GROUP_SPEC = Obj({
    "podGroupTemplateRef": Obj({
        "workload": Obj({
            "workloadName": Str(fmt=is_dns1123_subdomain, allow_empty_fmt=False),
            "podGroupTemplateName": Str(fmt=is_dns1123_label, allow_empty_fmt=False),
        }, required=("workloadName", "podGroupTemplateName"), more=frozenset()),
    }, checks=(_union("workload"),), more=frozenset()),
    "schedulingPolicy": SCHEDULING_POLICY,
    "schedulingConstraints": SCHEDULING_CONSTRAINTS,
    "resourceClaims": RESOURCE_CLAIMS,
    **DISRUPTION_FIELDS,
}, required=("schedulingPolicy",), more=frozenset())
POD_GROUP = Obj({
    "metadata": object_meta(),
    "spec": POD_GROUP_SPEC,
    "status": Obj({
        "conditions": conditions(),
        "resourceClaimStatuses": ListOf(Obj({"name": Str(), "resourceClaimName": Str(fmt=is_dns1123_subdomain)},
                                            required=("name",), more=frozenset()),
                                        unique_key="name", max_items=MAX_RESOURCE_CLAIMS),
    }, more=frozenset()),
}, checks=(_spec_left_out(POD_GROUP_SPEC), _preferred_topology_key), more=TYPE_META)

__all__ = ["DISRUPTION_MODES", "HIGHEST_USER_DEFINABLE_PRIORITY", "POD_GROUP", "WORKLOAD", "is_path_segment_name"]
