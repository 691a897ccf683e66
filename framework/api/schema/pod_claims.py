"""A pod's device claims (issue 30): spec.resourceClaims and the containers'
resources.claims that name them, as upstream's validatePodResourceClaims and
validateResourceClaimNames check them (pkg/apis/core/validation)."""
from __future__ import annotations

from typing import Any, Mapping

from framework.api.errors import ValidationError
from framework.api.schema.types import Ctx, Obj, Str, join
from framework.api.validation import (
    duplicate, invalid, is_dns1123_label, is_dns1123_subdomain, required, show,
)

POD_RESOURCE_CLAIM = Obj({"name": Str(), "resourceClaimName": Str(), "resourceClaimTemplateName": Str()})

_ONE_SOURCE = "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"
_AT_MOST_ONE = "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"


def _items(value: Any) -> list[Mapping[str, Any]]:
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


def _pod_claim(claim: Mapping[str, Any], names: set[str], path: str, ctx: Ctx) -> None:
    name = claim.get("name")
    if not isinstance(name, str):
        name = ""
    if not name:
        ctx.add(required(join(path, "name")))
    elif name in names:
        ctx.add(duplicate(join(path, "name"), name))
    else:
        if ctx.strict:
            for detail in is_dns1123_label(name):
                ctx.add(invalid(join(path, "name"), name, detail))
        names.add(name)
    has_claim = claim.get("resourceClaimName") is not None
    has_template = claim.get("resourceClaimTemplateName") is not None
    if has_claim and has_template:
        ctx.add(invalid(path, dict(claim), _AT_MOST_ONE))
    if not has_claim and not has_template:
        ctx.add(invalid(path, dict(claim), _ONE_SOURCE))
    for key in ("resourceClaimName", "resourceClaimTemplateName"):
        value = claim.get(key)
        if ctx.strict and isinstance(value, str):
            for detail in is_dns1123_subdomain(value):
                ctx.add(invalid(join(path, key), value, detail))


def _container_claims(claims: list[Mapping[str, Any]], pod_names: set[str], path: str, ctx: Ctx) -> None:
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        at = f"{path}[{i}]"
        name = claim.get("name") if isinstance(claim.get("name"), str) else ""
        if not name:
            ctx.add(required(at))
            continue
        key = name
        request = claim.get("request")
        if isinstance(request, str) and request:
            if ctx.strict:
                for detail in is_dns1123_label(request):
                    ctx.add(invalid(join(at, "request"), request, detail))
            key = f"{name}/{request}"
        if key in seen:
            ctx.add(duplicate(at, key))
        seen.add(key)
        if name not in pod_names:
            listed = f": {', '.join(sorted(pod_names))}" if pod_names else " which is empty"
            ctx.add(ValidationError(at, f"Not found: {show(name)}: must be one of the names in "
                                        f"pod.spec.resourceClaims{listed}"))


def check_resource_claims(spec: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    """spec.resourceClaims: named (DNS labels, unique), each from exactly one of a claim or a
    template; every container claim names one of them (once per name and request)."""
    names: set[str] = set()
    for i, claim in enumerate(_items(spec.get("resourceClaims"))):
        _pod_claim(claim, names, join(path, f"resourceClaims[{i}]"), ctx)
    for key in ("containers", "initContainers"):
        for i, c in enumerate(_items(spec.get(key))):
            resources = c.get("resources")
            claims = resources.get("claims") if isinstance(resources, dict) else None
            if isinstance(claims, list):
                _container_claims(_items(claims), names, join(path, f"{key}[{i}].resources.claims"), ctx)
