"""Pieces several kinds share: ObjectMeta, label selectors, node selectors, affinity
terms, tolerations, resource lists, conditions (upstream's ValidateObjectMeta,
ValidateLabelSelector, ValidateNodeSelector, validateAffinity, validateTolerations,
ValidateResourceRequirements)."""
from __future__ import annotations

from typing import Any, Mapping

from framework.api.schema.types import (
    Any_, Bool, Ctx, Int, ListOf, MapOf, Obj, Quantity, Remembered, Rule, Str, Time, join, quantity_value,
)
from framework.api.validation import (
    forbidden, invalid, is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value, required,
)

LABEL_KEY = Str(fmt=is_qualified_name, allow_empty_fmt=False)
LABEL_VALUE = Str(fmt=is_valid_label_value)
LABELS = MapOf(LABEL_VALUE, key=is_qualified_name, values_at_map=True)
STRINGS = ListOf(Str())
STRING_MAP = MapOf(Str())
MAX_ANNOTATIONS_BYTES = 256 * 1024


def _annotations_size(meta: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    ann = meta.get("annotations")
    if isinstance(ann, dict):
        size = sum(len(str(k)) + len(str(v)) for k, v in ann.items())
        if size > MAX_ANNOTATIONS_BYTES:
            from framework.api.errors import ValidationError

            ctx.add(ValidationError(join(path, "annotations"),
                                    f"Too long: may not be more than {MAX_ANNOTATIONS_BYTES} bytes"))


OWNER_REFERENCE = Obj({
    "apiVersion": Str(), "kind": Str(), "name": Str(), "uid": Str(),
    "controller": Bool(), "blockOwnerDeletion": Bool(),
}, required=("apiVersion", "kind", "name", "uid"))


def _annotation_key(key: str) -> list[str]:
    """ValidateAnnotations checks keys as qualified names, case-insensitively."""
    return is_qualified_name(key.lower())


def _name_or_generate_name(meta: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    if ctx.strict and not meta.get("name") and not meta.get("generateName"):
        ctx.add(required(join(path, "name"), "name or generateName is required"))


_REMEMBERED_LABELS = Remembered(LABELS)  # objects of one template share their labels


def object_meta(name_check: Any = is_dns1123_subdomain, namespaced: bool = True, named: bool = True) -> Obj:
    """metadata: the name's format depends on the kind (ValidateObjectMeta's nameFn);
    a cluster-scoped kind's namespace is ignored (ksched drops it rather than refuse).
    named=False: a template's metadata (a pod template's, a claim template's), where
    upstream requires no name (the controller makes one)."""
    return Obj({
        "name": Str(fmt=name_check), "generateName": Str(),
        "namespace": Str(fmt=is_dns1123_label) if namespaced else Any_(),
        "uid": Str(), "resourceVersion": Str(), "generation": Int(64),
        "labels": _REMEMBERED_LABELS, "annotations": MapOf(Str(), key=_annotation_key),
        "creationTimestamp": Time(), "deletionTimestamp": Time(), "deletionGracePeriodSeconds": Int(64),
        "ownerReferences": ListOf(OWNER_REFERENCE), "finalizers": STRINGS, "managedFields": Any_(),
    }, checks=((_name_or_generate_name,) if named else ()) + (_annotations_size,), more=OBJECT_META_MORE)


OBJECT_META_MORE = frozenset({"selfLink"})  # ObjectMeta's one field not in object_meta's rules
# Every kind's top level: TypeMeta's two fields besides the ones a kind's schema lists.
TYPE_META = frozenset({"apiVersion", "kind"})


# --- selectors ------------------------------------------------------------------------------

SET_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _values_for_operator(req: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    """An In/NotIn requirement needs values, Exists/DoesNotExist none, Gt/Lt one integer."""
    op, values = req.get("operator"), req.get("values")
    n = len(values) if isinstance(values, list) else 0
    at = join(path, "values")
    if op in ("In", "NotIn") and n == 0:
        ctx.add(required(at, "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist") and n > 0:
        ctx.add(forbidden(at, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if n != 1:
            ctx.add(required(at, "must be specified single value when `operator` is 'Lt' or 'Gt'"))
        elif isinstance(values[0], str) and not _is_int64(values[0]):
            ctx.add(invalid(f"{at}[0]", values[0], "must be an integer"))


def _is_int64(text: str) -> bool:
    try:
        return -(2**63) <= int(text, 10) < 2**63
    except ValueError:
        return False


def _requirement(ops: tuple[str, ...], key: Rule) -> Obj:
    return Obj({"key": key, "operator": Str(enum=ops, enum_msg="not a valid selector operator"), "values": STRINGS},
               required=("key", "operator"), checks=(_values_for_operator,))


LABEL_SELECTOR = Obj({
    "matchLabels": LABELS,
    "matchExpressions": ListOf(_requirement(SET_OPS, LABEL_KEY)),
})

NODE_SELECTOR_TERM = Obj({
    "matchExpressions": ListOf(_requirement(NODE_OPS, LABEL_KEY)),
    "matchFields": ListOf(_requirement(NODE_OPS, Str(enum=("metadata.name",)))),
})


def _at_least_one_term(sel: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    # ValidateNodeSelector: missing and empty are the same one error (no bare "Required value")
    if not sel.get("nodeSelectorTerms"):
        ctx.add(required(join(path, "nodeSelectorTerms"), "must have at least one node selector term"))


NODE_SELECTOR = Obj({"nodeSelectorTerms": ListOf(NODE_SELECTOR_TERM)}, checks=(_at_least_one_term,))

# --- affinity -------------------------------------------------------------------------------

WEIGHT = Int(32, lo=1, hi=100, range_msg="must be in the range 1-100")

POD_AFFINITY_TERM = Obj({
    "labelSelector": LABEL_SELECTOR, "namespaceSelector": LABEL_SELECTOR,
    "namespaces": ListOf(Str(fmt=is_dns1123_label)), "topologyKey": LABEL_KEY,
    "matchLabelKeys": ListOf(LABEL_KEY), "mismatchLabelKeys": ListOf(LABEL_KEY),
}, required=("topologyKey",), required_detail={"topologyKey": "can not be empty"})

_POD_AFFINITY = Obj({
    "requiredDuringSchedulingIgnoredDuringExecution": ListOf(POD_AFFINITY_TERM),
    "preferredDuringSchedulingIgnoredDuringExecution": ListOf(
        Obj({"weight": WEIGHT, "podAffinityTerm": POD_AFFINITY_TERM}, required=("weight", "podAffinityTerm"))),
})

AFFINITY = Obj({
    "nodeAffinity": Obj({
        "requiredDuringSchedulingIgnoredDuringExecution": NODE_SELECTOR,
        "preferredDuringSchedulingIgnoredDuringExecution": ListOf(
            Obj({"weight": WEIGHT, "preference": NODE_SELECTOR_TERM}, required=("weight", "preference"))),
    }),
    "podAffinity": _POD_AFFINITY,
    "podAntiAffinity": _POD_AFFINITY,
})

# --- taints and tolerations -----------------------------------------------------------------

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPS = ("Equal", "Exists", "Lt", "Gt")


def _toleration_rules(t: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    op, key, value = t.get("operator") or "Equal", t.get("key") or "", t.get("value") or ""
    if not key and op != "Exists":
        ctx.add(invalid(join(path, "operator"), op,
                        'operator must be Exists when `key` is empty, which means "match all values and all keys"'))
    if t.get("tolerationSeconds") is not None and t.get("effect") != "NoExecute":
        ctx.add(invalid(join(path, "effect"), t.get("effect") or "",
                        "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    if op == "Exists" and value:
        ctx.add(invalid(join(path, "operator"), value, "value must be empty when `operator` is 'Exists'"))
    elif op == "Equal" and ctx.strict and isinstance(value, str):
        errs = is_valid_label_value(value)
        if errs:
            ctx.add(invalid(join(path, "operator"), value, ";".join(errs)))


TOLERATION = Obj({
    "key": LABEL_KEY, "operator": Str(enum=TOLERATION_OPS), "value": Str(),
    "effect": Str(enum=("", *TAINT_EFFECTS)), "tolerationSeconds": Int(64),
}, checks=(_toleration_rules,))

TAINT = Obj({"key": LABEL_KEY, "value": LABEL_VALUE, "effect": Str(enum=TAINT_EFFECTS), "timeAdded": Time()},
            required=("key", "effect"))

# --- resources ------------------------------------------------------------------------------


def _resource_name(name: str, path: str, ctx: Ctx) -> None:
    if not name:
        ctx.add(invalid(path, name, "resource name may not be empty"))


class _ResourceQuantity:
    """The quantity rule for one entry of a resource list (cpu: MilliValue bound)."""

    __slots__ = ()

    def check(self, value: Any, path: str, ctx: Ctx) -> None:
        Quantity(milli=path.endswith("[cpu]")).check(value, path, ctx)


# A ResourceList: cpu counts in milli-units, everything else in whole units.
RESOURCE_LIST = MapOf(_ResourceQuantity(), key=is_qualified_name, always_key=_resource_name)


def _requests_within_limits(res: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    requests, limits = res.get("requests"), res.get("limits")
    if not isinstance(requests, dict) or not isinstance(limits, dict):
        return
    probe = Ctx(strict=ctx.strict, semantic=ctx.semantic)
    for name, want in requests.items():
        cap = limits.get(name)
        if cap is None:
            continue
        a, b = quantity_value(want, "", probe), quantity_value(cap, "", probe)
        if a is not None and b is not None and a > b:
            ctx.add(invalid(f"{join(path, 'requests')}[{name}]", want,
                            f"must be less than or equal to {name} limit of {cap}"))


RESOURCE_REQUIREMENTS = Obj({"requests": RESOURCE_LIST, "limits": RESOURCE_LIST, "claims": ListOf(Obj({"name": Str(), "request": Str()}))},
                            checks=(_requests_within_limits,), more=frozenset())

CONDITION_STATUS = Str(enum=("True", "False", "Unknown"))


def conditions(extra: Mapping[str, Rule] | None = None) -> ListOf:
    """status.conditions: each an object with a type and a True/False/Unknown status."""
    return ListOf(Obj({
        "type": Str(), "status": CONDITION_STATUS, "reason": Str(), "message": Str(),
        "lastTransitionTime": Time(), "lastProbeTime": Time(), "lastHeartbeatTime": Time(),
        "observedGeneration": Int(64, lo=0), **(extra or {}),
    }, required=("type", "status")))
