"""OpenAPI v3 schemas of the kinds ksched validates, made from the store's own
declarative schemas (framework.api.schema), so /openapi/v3 describes each served
built-in kind field by field: `kubectl explain pod.spec.containers` reads them.

The fields a schema knows without checking them (Obj.more: fields ksched keeps but
does not read) are listed as free-form values, apiVersion and kind as strings.
Kinds without a schema there (Kueue's, PodGroup's own checks aside) get none.
kubectl's client-side apply does not read these: the PATCH operations leave out
strategic-merge-patch (openapi.py), so it keeps its compiled-in patch metadata.
"""
from __future__ import annotations

from typing import Any

from framework.api.schema import SCHEMAS
from framework.api.schema.types import (
    Any_, Bool, Int, IntOrString, ListOf, MapOf, Obj, Quantity, Remembered, Str, Time,
)
from framework.api.api_resources import Resource

_FREE: dict[str, Any] = {"x-kubernetes-preserve-unknown-fields": True}
_QUANTITY: dict[str, Any] = {"oneOf": [{"type": "string"}, {"type": "number"}]}  # as kube-openapi writes Quantity
_TYPE_META = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}}


def schema_of(rule: Any) -> dict[str, Any]:
    """The OpenAPI v3 schema of one framework.api.schema rule."""
    match rule:
        case Remembered(rule=inner):
            return schema_of(inner)
        case Obj():
            props = {name: schema_of(r) for name, r in rule.fields.items()}
            for name in sorted(rule.more or ()):
                props.setdefault(name, _TYPE_META.get(name, _FREE))
            out: dict[str, Any] = {"type": "object", "properties": props}
            required = [f for f in (*rule.required, *rule.strict_required) if f in props]
            if required:
                out["required"] = list(dict.fromkeys(required))
            return out
        case ListOf(item=item):
            return {"type": "array", "items": schema_of(item)}
        case MapOf(value=value):
            return {"type": "object", "additionalProperties": schema_of(value)}
        case Str(enum=enum):
            return {"type": "string", "enum": list(enum)} if enum else {"type": "string"}
        case Int(bits=bits):
            return {"type": "integer", "format": f"int{bits}"}
        case Bool():
            return {"type": "boolean"}
        case Time():
            return {"type": "string", "format": "date-time"}
        case IntOrString():
            return {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}
        case Quantity():
            return dict(_QUANTITY)
        case Any_():
            return dict(_FREE)
    if type(rule).__name__ == "_ResourceQuantity":  # a resource list's entry (common.py)
        return dict(_QUANTITY)
    return dict(_FREE)


def component_name(r: Resource) -> str:
    """As upstream names its definitions: io.k8s.api.core.v1.Pod, io.k8s.api.apps.v1.ReplicaSet,
    io.x-k8s.scheduling.v1alpha1.PodGroup."""
    if not r.group:
        return f"io.k8s.api.core.{r.version}.{r.api_kind}"
    if r.group.endswith(".k8s.io"):
        return f"io.k8s.api.{r.group.split('.')[0]}.{r.version}.{r.api_kind}"
    return ".".join(reversed(r.group.split("."))) + f".{r.version}.{r.api_kind}"


def components(resources: tuple[Resource, ...]) -> dict[str, Any]:
    """components.schemas for the kinds among `resources` that have a schema, each tagged
    with its group-version-kind (what kubectl explain looks a kind up by)."""
    out: dict[str, Any] = {}
    for r in resources:
        rule = SCHEMAS.get(r.kind) if r.stored else None
        if rule is None:
            continue
        schema = schema_of(rule)
        schema["properties"] = {**_TYPE_META, **schema["properties"]}
        schema["x-kubernetes-group-version-kind"] = [{"group": r.group, "kind": r.api_kind, "version": r.version}]
        out[component_name(r)] = schema
    return out
