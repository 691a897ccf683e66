"""resource.k8s.io/v1 (DRA): DeviceClass, ResourceSlice, ResourceClaim and
ResourceClaimTemplate as kube-apiserver validates them on create
(pkg/apis/resource/validation: ValidateDeviceClass, ValidateResourceSlice,
ValidateResourceClaim, ValidateResourceClaimTemplate), with upstream's field paths and
messages. CEL selectors are compiled by framework.dra's evaluator and a compile error is
the field's Invalid message. The objects are closed (every field of the v1 types), so a
misspelled field is an unknown field under fieldValidation. Updates (immutable claim and
template specs, a slice's driver, pool and node, status.allocation) are
framework.api.schema.dra_update's."""
from __future__ import annotations

import json
import re
from typing import Any, Callable, Mapping

from framework.api.errors import ValidationError
from framework.api.schema.common import NODE_SELECTOR, STRINGS
from framework.api.schema.types import Any_, Bool, Ctx, Int, ListOf, MapOf, Obj, Quantity, Str, Time, join
from framework.api.validation import (
    duplicate, forbidden, invalid, is_dns1123_label, is_dns1123_subdomain, required, show,
)

GROUP_VERSION = "resource.k8s.io/v1"

# pkg/apis/resource/types.go limits
DEVICE_REQUESTS_MAX = 32
DEVICE_SELECTORS_MAX = 32
DEVICE_CONSTRAINTS_MAX = 32
DEVICE_CONFIG_MAX = 32
FIRST_AVAILABLE_MAX = 8
CEL_EXPRESSION_MAX_LENGTH = 10 * 1024
CEL_SELECTOR_MAX_COST = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost
SLICE_MAX_DEVICES = 128
POOL_NAME_MAX = 253
DRIVER_NAME_MAX = 63
ATTRIBUTE_VALUE_MAX = 64
ATTRIBUTES_AND_CAPACITIES_MAX = 32
DEVICE_ID_MAX = 32
OPAQUE_PARAMETERS_MAX = 10 * 1024
RESERVED_FOR_MAX = 256
ALLOCATION_RESULTS_MAX = 32
ALLOCATION_MODES = ("All", "ExactCount")
REQUEST_REF_MSG = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_C_IDENTIFIER_MSG = ("a valid C identifier must start with alphabetic character or '_', followed by a string of "
                     "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
                     "validation is '[A-Za-z_][A-Za-z0-9_]*')")
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?"
                     r"(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$")


def too_many(path: str, n: int, most: int) -> ValidationError:
    return ValidationError(path, f"Too many: {n}: must have at most {most} items")


def too_long(path: str, most: int) -> ValidationError:
    return ValidationError(path, f"Too long: may not be more than {most} bytes")


def _closed(fields: Mapping[str, Any], **kw: Any) -> Obj:
    return Obj(fields, more=frozenset(), **kw)


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


def bounded(value: Any, most: int, path: str, ctx: Ctx) -> list[tuple[str, Mapping[str, Any]]]:
    """validateSlice's first step: each item of the list `value` with its path, or none
    (after a Too many error) when it has more than `most` (checked no further, as upstream)."""
    items = _dicts(value)
    if len(items) > most:
        ctx.add(too_many(path, len(items), most))
        return []
    return [(f"{path}[{i}]", item) for i, item in enumerate(items)]


def named_set(value: Any, most: int, path: str, ctx: Ctx,
              check: Callable[[Mapping[str, Any], str, Ctx], None]) -> None:
    """validateSet keyed by name: every item checked, then a Duplicate for each repeated name."""
    items = bounded(value, most, path, ctx)
    for at, item in items:
        check(item, at, ctx)
    seen: set[str] = set()
    for at, item in items:
        name = _text(item, "name")
        if name in seen:
            ctx.add(duplicate(at, name))
        seen.add(name)


def label_name(item: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    """An item's required name, a DNS label (a request's, a subrequest's, a device's)."""
    name = _text(item, "name")
    if not name:
        ctx.add(required(join(path, "name")))
    else:
        _dns_label(name, join(path, "name"), ctx)


def _text(m: Mapping[str, Any], key: str) -> str:
    v = m.get(key)
    return v if isinstance(v, str) else ""


# --- names ----------------------------------------------------------------------------------


def _subdomains(name: str, parts: list[str], most: int, path: str, ctx: Ctx) -> None:
    """A required name of at most `most` bytes whose `parts` are DNS subdomains."""
    if not name:
        ctx.add(required(path))
        return
    if len(name) > most:
        ctx.add(too_long(path, most))
    if not ctx.strict:  # the conformance driver's mode: upstream's test objects keep their names
        return
    for part in parts:
        for msg in is_dns1123_subdomain(part):
            ctx.add(invalid(path, name if len(parts) == 1 else part, msg))


def driver_name(name: str, path: str, ctx: Ctx) -> None:
    """ValidateCSIDriverName: a DNS subdomain (any case) of at most 63 characters."""
    _subdomains(name, [name.lower()], DRIVER_NAME_MAX, path, ctx)


def pool_name(name: str, path: str, ctx: Ctx) -> None:
    """DNS subdomains separated by '/', at most 253 characters in all."""
    _subdomains(name, name.split("/"), POOL_NAME_MAX, path, ctx)


def _dns_label(name: str, path: str, ctx: Ctx) -> None:
    if not ctx.strict:
        return
    for msg in is_dns1123_label(name):
        ctx.add(invalid(path, name, msg))


def _c_identifier(name: str, path: str, ctx: Ctx) -> None:
    if len(name) > DEVICE_ID_MAX:
        ctx.add(too_long(path, DEVICE_ID_MAX))
    if not _C_IDENTIFIER.match(name):
        ctx.add(invalid(path, name, _C_IDENTIFIER_MSG))


def qualified_name(name: str, path: str, ctx: Ctx) -> None:
    """An attribute or capacity name: a C identifier, optionally after a driver-like domain and '/'."""
    parts = name.split("/")
    if len(parts) == 1:
        _c_identifier(name, path, ctx)
    elif len(parts) == 2:
        if not parts[0]:
            ctx.add(invalid(path, "", "the domain must not be empty"))
        else:
            driver_name(parts[0], path, ctx)
        if not parts[1]:
            ctx.add(invalid(path, "", "the name must not be empty"))
        else:
            _c_identifier(parts[1], path, ctx)
    else:
        ctx.add(invalid(path, name, "must not contain more than one slash"))


def fully_qualified_name(name: str, path: str, ctx: Ctx) -> None:
    qualified_name(name, path, ctx)
    if "/" not in name:
        ctx.add(invalid(path, name, "a fully qualified name must be a domain and a name separated by a slash"))


# --- selectors and configuration --------------------------------------------------------------


def cel_expression(expression: str, path: str, ctx: Ctx) -> None:
    """Compiled by framework.dra's CEL evaluator (cached per expression); a compile error is
    the field's Invalid message, in upstream's words, and an estimated cost over
    resourceapi.CELSelectorExpressionMaxCost is Forbidden, as validateCELSelector refuses it."""
    if len(expression) > CEL_EXPRESSION_MAX_LENGTH:
        ctx.add(too_long(path, CEL_EXPRESSION_MAX_LENGTH))
        return
    from framework.dra.cel_selector import CELCompileError, compile_selector  # framework.dra imports framework.api

    try:
        selector = compile_selector(expression)
    except CELCompileError as e:
        ctx.add(invalid(path, expression, str(e)))
        return
    if selector.estimated_cost > CEL_SELECTOR_MAX_COST:
        ctx.add(forbidden(path, "too complex, exceeds cost limit"))


def _selectors(selectors: Any, path: str, ctx: Ctx) -> None:
    for at, sel in bounded(selectors, DEVICE_SELECTORS_MAX, path, ctx):
        cel = sel.get("cel")
        if not isinstance(cel, dict):
            ctx.add(required(join(at, "cel")))
        elif isinstance(cel.get("expression"), str):
            cel_expression(cel["expression"], join(at, "cel.expression"), ctx)


def _opaque(config: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    opaque = config.get("opaque")
    at = join(path, "opaque")
    if not isinstance(opaque, dict):
        ctx.add(required(at))
        return
    driver_name(_text(opaque, "driver"), join(at, "driver"), ctx)
    raw_extension(opaque.get("parameters"), join(at, "parameters"), OPAQUE_PARAMETERS_MAX, ctx)


def raw_extension(value: Any, path: str, most: int, ctx: Ctx) -> None:
    """validateRawExtension: a required JSON object of at most `most` bytes (as JSON)."""
    if value is None:
        ctx.add(required(path))
    elif len(json.dumps(value, separators=(",", ":"))) > most:
        ctx.add(too_long(path, most))
    elif not isinstance(value, dict):
        ctx.add(invalid(path, "<value omitted>", "must be a valid JSON object"))


def _configs(configs: Any, path: str, ctx: Ctx, names: dict[str, set[str]] | None) -> None:
    for at, config in bounded(configs, DEVICE_CONFIG_MAX, path, ctx):
        if names is not None:
            _request_refs(config.get("requests"), join(at, "requests"), ctx, names)
        _opaque(config, at, ctx)


# --- claims -----------------------------------------------------------------------------------


def request_names(devices: Mapping[str, Any]) -> dict[str, set[str]]:
    """Each request's name -> its subrequests' names (empty for an `exactly` request)."""
    out: dict[str, set[str]] = {}
    for req in _dicts(devices.get("requests")):
        out[_text(req, "name")] = {_text(s, "name") for s in _dicts(req.get("firstAvailable"))}
    return out


def names_request(names: Mapping[str, set[str]], ref: str) -> bool:
    parts = ref.split("/")
    if len(parts) > 2 or parts[0] not in names:
        return False
    return len(parts) == 1 or parts[1] in names[parts[0]]


def request_ref(ref: str, path: str, ctx: Ctx, names: Mapping[str, set[str]]) -> None:
    parts = ref.split("/")
    if len(parts) > 2:
        ctx.add(invalid(path, ref, REQUEST_REF_MSG))
        return
    for part in parts:
        _dns_label(part, path, ctx)
    if not names_request(names, ref):
        ctx.add(invalid(path, ref, REQUEST_REF_MSG))


def _request_refs(refs: Any, path: str, ctx: Ctx, names: Mapping[str, set[str]]) -> None:
    items = refs if isinstance(refs, list) else []
    if len(items) > DEVICE_REQUESTS_MAX:
        ctx.add(too_many(path, len(items), DEVICE_REQUESTS_MAX))
        return
    seen: set[str] = set()
    for i, ref in enumerate(items):
        if not isinstance(ref, str):
            continue
        request_ref(ref, f"{path}[{i}]", ctx, names)
        if ref in seen:
            ctx.add(duplicate(f"{path}[{i}]", ref))
        seen.add(ref)


def _allocation_mode(req: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    """ExactCount (the default) needs a count above zero (1 by default); All takes none."""
    mode = req.get("allocationMode") or "ExactCount"
    count = req.get("count")
    if mode == "All":
        if count not in (None, 0):
            ctx.add(invalid(join(path, "count"), count, "must not be specified when allocationMode is 'All'"))
    elif mode == "ExactCount":
        if isinstance(count, int) and not isinstance(count, bool) and count <= 0:
            ctx.add(invalid(join(path, "count"), count, "must be greater than zero"))
    else:
        ctx.add(ValidationError(join(path, "allocationMode"), f"Unsupported value: {show(mode)}: supported values: "
                                + ", ".join(f'"{m}"' for m in ALLOCATION_MODES)))


def _device_class_ref(req: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    name, at = _text(req, "deviceClassName"), join(path, "deviceClassName")
    if not name:
        ctx.add(required(at))
    else:
        for msg in is_dns1123_subdomain(name):
            ctx.add(invalid(at, name, msg))


def _exact(req: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    _device_class_ref(req, path, ctx)
    _selectors(req.get("selectors"), join(path, "selectors"), ctx)
    _allocation_mode(req, path, ctx)


def _subrequest(sub: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    label_name(sub, path, ctx)
    _exact(sub, path, ctx)


def _request(req: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    label_name(req, path, ctx)
    subs, exactly = _dicts(req.get("firstAvailable")), req.get("exactly")
    if not subs and exactly is None:
        ctx.add(required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    elif subs and exactly is not None:
        ctx.add(invalid(path, None, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
    elif subs:
        named_set(subs, FIRST_AVAILABLE_MAX, join(path, "firstAvailable"), ctx, _subrequest)
    elif isinstance(exactly, dict):
        _exact(exactly, join(path, "exactly"), ctx)


def _constraints(constraints: Any, path: str, ctx: Ctx, names: Mapping[str, set[str]]) -> None:
    for at, c in bounded(constraints, DEVICE_CONSTRAINTS_MAX, path, ctx):
        _request_refs(c.get("requests"), join(at, "requests"), ctx, names)
        if isinstance(c.get("matchAttribute"), str):
            fully_qualified_name(c["matchAttribute"], join(at, "matchAttribute"), ctx)
        elif isinstance(c.get("distinctAttribute"), str):
            fully_qualified_name(c["distinctAttribute"], join(at, "distinctAttribute"), ctx)
        else:
            ctx.add(required(join(at, "matchAttribute")))


def check_device_claim(devices: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    """validateDeviceClaim: requests (unique DNS-label names, each `exactly` or
    `firstAvailable`), constraints and config naming existing requests."""
    names = request_names(devices)
    named_set(devices.get("requests"), DEVICE_REQUESTS_MAX, join(path, "requests"), ctx, _request)
    _constraints(devices.get("constraints"), join(path, "constraints"), ctx, names)
    _configs(devices.get("config"), join(path, "config"), ctx, names)


def _claim_spec(spec: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    devices = spec.get("devices")
    if isinstance(devices, dict):
        check_device_claim(devices, join(path, "devices"), ctx)


_CEL = _closed({"expression": Str()})
_SELECTORS = ListOf(_closed({"cel": _CEL}))
_OPAQUE = _closed({"driver": Str(), "parameters": Any_()})
_TOLERATIONS = ListOf(_closed({"key": Str(), "operator": Str(), "value": Str(), "effect": Str(),
                               "tolerationSeconds": Int(64)}))
_CAPACITY_REQUESTS = _closed({"requests": MapOf(Quantity())})
_EXACT_FIELDS = {"deviceClassName": Str(), "selectors": _SELECTORS, "allocationMode": Str(), "count": Int(64),
                 "tolerations": _TOLERATIONS, "capacity": _CAPACITY_REQUESTS}
DEVICE_CLAIM = _closed({
    "requests": ListOf(_closed({
        "name": Str(), "exactly": _closed({**_EXACT_FIELDS, "adminAccess": Bool()}),
        "firstAvailable": ListOf(_closed({"name": Str(), **_EXACT_FIELDS})),
    })),
    "constraints": ListOf(_closed({"requests": STRINGS, "matchAttribute": Str(), "distinctAttribute": Str()})),
    "config": ListOf(_closed({"requests": STRINGS, "opaque": _OPAQUE})),
})
CLAIM_SPEC = _closed({"devices": DEVICE_CLAIM}, checks=(_claim_spec,))

# --- status.allocation -------------------------------------------------------------------------

ALLOCATION = _closed({
    "devices": _closed({
        "results": ListOf(_closed({
            "request": Str(), "driver": Str(), "pool": Str(), "device": Str(), "adminAccess": Bool(),
            "tolerations": _TOLERATIONS, "bindingConditions": STRINGS, "bindingFailureConditions": STRINGS,
            "shareID": Str(), "consumedCapacity": MapOf(Quantity()),
        })),
        "config": ListOf(_closed({"source": Str(enum=("FromClass", "FromClaim")), "requests": STRINGS,
                                  "opaque": _OPAQUE})),
    }),
    "nodeSelector": NODE_SELECTOR, "allocationTimestamp": Time(),
})


def check_allocation(status: Mapping[str, Any], devices: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    """A new status.allocation (validateAllocationResult): each result names a request of the
    claim, a driver, pool and device; reservedFor needs an allocation."""
    allocation = status.get("allocation")
    reserved = _dicts(status.get("reservedFor"))
    if reserved and not isinstance(allocation, dict):
        ctx.add(forbidden(join(path, "reservedFor"), "may not be specified when `allocated` is not set"))
    if len(reserved) > RESERVED_FOR_MAX:
        ctx.add(too_many(join(path, "reservedFor"), len(reserved), RESERVED_FOR_MAX))
    uids: set[str] = set()
    for i, ref in enumerate(reserved):
        at = f"{join(path, 'reservedFor')}[{i}]"
        for key in ("resource", "name", "uid"):
            if not _text(ref, key):
                ctx.add(required(join(at, key)))
        if _text(ref, "uid") in uids:
            ctx.add(duplicate(at, _text(ref, "uid")))
        uids.add(_text(ref, "uid"))
    if not isinstance(allocation, dict) or not isinstance(allocation.get("devices"), dict):
        return
    names = request_names(devices)
    results, at = _dicts(allocation["devices"].get("results")), join(path, "allocation.devices.results")
    if len(results) > ALLOCATION_RESULTS_MAX:
        ctx.add(too_many(at, len(results), ALLOCATION_RESULTS_MAX))
        return
    for i, r in enumerate(results):
        r_at = f"{at}[{i}]"
        request_ref(_text(r, "request"), join(r_at, "request"), ctx, names)
        device_ref(r, r_at, ctx)


def device_ref(ref: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    """An allocation result's or a device status's driver, pool and device names."""
    driver_name(_text(ref, "driver"), join(path, "driver"), ctx)
    pool_name(_text(ref, "pool"), join(path, "pool"), ctx)
    device = _text(ref, "device")
    if not device:
        ctx.add(required(join(path, "device")))
    else:
        _dns_label(device, join(path, "device"), ctx)
