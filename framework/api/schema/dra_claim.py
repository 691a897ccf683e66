"""The ResourceClaim and ResourceClaimTemplate schemas (resource.k8s.io/v1): the spec
and allocation rules of dra.py, and status.devices (dra_status.py)."""
from __future__ import annotations

from typing import Any, Mapping

from framework.api.schema.common import TYPE_META, conditions, object_meta
from framework.api.schema.dra import ALLOCATION, CLAIM_SPEC, _closed, check_allocation
from framework.api.schema.dra_status import check_device_statuses
from framework.api.errors import ValidationError
from framework.api.schema.types import Any_, Ctx, ListOf, Obj, Str, join


def _claim_status(claim: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    status = claim.get("status")
    if isinstance(status, dict):
        spec = claim.get("spec") if isinstance(claim.get("spec"), dict) else {}
        devices = spec.get("devices") if isinstance(spec.get("devices"), dict) else {}
        check_allocation(status, devices, join(path, "status"), ctx)
        check_device_statuses(status, join(path, "status"), ctx)


CLAIM_STATUS = _closed({
    "allocation": ALLOCATION,
    "reservedFor": ListOf(_closed({"apiGroup": Str(), "resource": Str(), "name": Str(), "uid": Str()})),
    "devices": ListOf(Obj({"driver": Str(), "pool": Str(), "device": Str(), "shareID": Str(),
                           "conditions": conditions(), "data": Any_(), "networkData": Any_()})),
})

RESOURCE_CLAIM = Obj({"metadata": object_meta(), "spec": CLAIM_SPEC, "status": CLAIM_STATUS},
                     checks=(_claim_status,), more=TYPE_META)


def claim_status_errors(status: Any, spec: Mapping[str, Any], strict: bool = True) -> list[ValidationError]:
    """What the claim schema finds wrong with `status` alone, against the claim's stored
    `spec` (the status subresource: kube-apiserver's ValidateResourceClaimStatusUpdate
    walks the status only), with the same paths and messages as the whole claim's walk."""
    ctx = Ctx(strict=strict)
    CLAIM_STATUS.check(status, "status", ctx)
    _claim_status({"spec": spec, "status": status}, "", ctx)
    return ctx.errors


RESOURCE_CLAIM_TEMPLATE = Obj({
    "metadata": object_meta(),
    "spec": _closed({"metadata": object_meta(named=False), "spec": CLAIM_SPEC}),
}, more=TYPE_META)
