"""What kube-apiserver checks when a DRA object is replaced (ValidateResourceClaimUpdate,
ValidateResourceClaimStatusUpdate, ValidateResourceClaimTemplateUpdate,
ValidateResourceSliceUpdate), and the defaults its v1 types get before validation
(SetDefaults_ExactDeviceRequest, SetDefaults_DeviceSubRequest): a claim's and a
template's spec never change; a claim's status.allocation, once set, never changes, and
a claim being deleted takes no new consumers; a slice keeps its driver, pool name and
node name. Pure functions over JSON dicts."""
from __future__ import annotations

from typing import Any, Mapping

from framework.api.errors import ValidationError
from framework.api.validation import forbidden, invalid

IMMUTABLE = "field is immutable"


def _section(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    v = raw.get(key)
    if type(v) is dict:  # (asked first, and None below: typing's Mapping in isinstance costs ~20 times more)
        return v
    return v if v is not None and isinstance(v, Mapping) else {}


def _immutable(path: str, new: Any, old: Any) -> list[ValidationError]:
    return [] if new == old else [invalid(path, new, IMMUTABLE)]


def _claim_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[ValidationError]:
    status, old_status = _section(new, "status"), _section(old, "status")
    errors: list[ValidationError] = []
    deleting = bool(_section(new, "metadata").get("deletionTimestamp"))
    if deleting and status.get("allocation"):
        had = {(r.get("uid"), r.get("name")) for r in old_status.get("reservedFor") or [] if isinstance(r, Mapping)}
        if any((r.get("uid"), r.get("name")) not in had for r in status.get("reservedFor") or []
               if isinstance(r, Mapping)):
            errors.append(forbidden("status.reservedFor", "new entries may not be added while "
                                                          "`deallocationRequested` or `deletionTimestamp` are set"))
    if old_status.get("allocation") is not None and status.get("allocation") is not None:
        errors += _immutable("status.allocation", status["allocation"], old_status["allocation"])
    return errors


def claim_status_update_errors(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[ValidationError]:
    """The update rules of a claim's status alone (its status subresource's)."""
    return _claim_status_update(new, old)


def validate_dra_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[ValidationError]:
    """The update rules of `new`'s kind against the stored `old` ([] for other kinds)."""
    kind = new.get("kind")
    if kind in ("ResourceClaim", "ResourceClaimTemplate"):
        errors = _immutable("spec", new.get("spec"), old.get("spec"))
        return errors + (_claim_status_update(new, old) if kind == "ResourceClaim" else [])
    if kind == "ResourceSlice":
        spec, old_spec = _section(new, "spec"), _section(old, "spec")
        return (_immutable("spec.pool.name", _section(spec, "pool").get("name"), _section(old_spec, "pool").get("name"))
                + _immutable("spec.driver", spec.get("driver"), old_spec.get("driver"))
                + _immutable("spec.nodeName", spec.get("nodeName"), old_spec.get("nodeName")))
    return []


def _default_request(req: Any) -> Any:
    if not isinstance(req, dict):
        return req
    out = dict(req)
    if not out.get("allocationMode"):
        out["allocationMode"] = "ExactCount"
    if out["allocationMode"] == "ExactCount" and not out.get("count"):
        out["count"] = 1
    return out


def _defaulted_claim_spec(spec: Any) -> Any:
    if not isinstance(spec, dict) or not isinstance(spec.get("devices"), dict):
        return spec
    requests = spec["devices"].get("requests")
    if not isinstance(requests, list):
        return spec
    out = []
    for req in requests:
        if isinstance(req, dict):
            req = dict(req)
            if isinstance(req.get("exactly"), dict):
                req["exactly"] = _default_request(req["exactly"])
            if isinstance(req.get("firstAvailable"), list):
                req["firstAvailable"] = [_default_request(s) for s in req["firstAvailable"]]
        out.append(req)
    return {**spec, "devices": {**spec["devices"], "requests": out}}


def dra_defaults(raw: dict[str, Any]) -> dict[str, Any]:
    """A ResourceClaim or ResourceClaimTemplate with its requests' allocationMode (ExactCount)
    and count (1 for ExactCount) filled in where left out; other objects as they are."""
    kind = raw.get("kind")
    if kind == "ResourceClaim":
        spec = _defaulted_claim_spec(raw.get("spec"))
        return raw if spec is raw.get("spec") else {**raw, "spec": spec}
    if kind == "ResourceClaimTemplate" and isinstance(raw.get("spec"), dict):
        inner = _defaulted_claim_spec(raw["spec"].get("spec"))
        return raw if inner is raw["spec"].get("spec") else {**raw, "spec": {**raw["spec"], "spec": inner}}
    return raw
