"""resource.k8s.io/v1 DeviceClass and ResourceSlice as kube-apiserver validates them on
create (ValidateDeviceClass, ValidateResourceSlice in pkg/apis/resource/validation):
a class's CEL selectors compile and its config is opaque driver parameters; a slice
names its driver and pool, picks exactly one of nodeName, nodeSelector, allNodes and
perDeviceNodeSelection, and lists uniquely named devices whose attributes hold exactly
one typed value each."""
from __future__ import annotations

from typing import Any, Mapping

from framework.api.schema.common import NODE_SELECTOR, TAINT, TYPE_META, object_meta
from framework.api.schema.dra import (
    ATTRIBUTE_VALUE_MAX, ATTRIBUTES_AND_CAPACITIES_MAX, SLICE_MAX_DEVICES, _SELECTORS, _OPAQUE,
    _SEMVER, _closed, _configs, _dicts, _selectors, _text, driver_name, label_name, named_set, pool_name,
    qualified_name, too_long,
)
from framework.api.schema.types import Any_, Bool, Ctx, Int, ListOf, MapOf, Obj, Quantity, Str, join
from framework.api.validation import invalid, is_dns1123_subdomain, is_qualified_name, required

# --- DeviceClass ------------------------------------------------------------------------------


def _class_spec(spec: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    _selectors(spec.get("selectors"), join(path, "selectors"), ctx)
    _configs(spec.get("config"), join(path, "config"), ctx, None)
    ext = spec.get("extendedResourceName")
    if isinstance(ext, str) and not _extended_resource_name(ext):
        ctx.add(invalid(join(path, "extendedResourceName"), ext, "must be a valid extended resource name"))


def _extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: not native (it has a domain outside kubernetes.io), not
    `requests.`-prefixed, and a qualified name with that prefix."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


DEVICE_CLASS = Obj({
    "metadata": object_meta(namespaced=False),
    "spec": _closed({"selectors": _SELECTORS, "config": ListOf(_closed({"opaque": _OPAQUE})),
                     "extendedResourceName": Str()}, checks=(_class_spec,)),
}, more=TYPE_META)

# --- ResourceSlice ----------------------------------------------------------------------------

_NODE_SELECTION = ("`nodeName`", "`nodeSelector`", "`allNodes`", "`perDeviceNodeSelection`")
_EXACTLY_ONE = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
_PER_DEVICE = ("exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` "
               "is set to true in the ResourceSlice spec")


def _node_name(name: str, path: str, ctx: Ctx) -> None:
    for msg in is_dns1123_subdomain(name):
        ctx.add(invalid(path, name, msg))


def _only_true(spec: Mapping[str, Any], key: str, path: str, ctx: Ctx) -> bool:
    """A *bool that may be left out or true (false is refused); True when set to true."""
    value = spec.get(key)
    if value is False:
        ctx.add(invalid(join(path, key), False, "must be either unset or set to true"))
    return value is True


def _node_selection(spec: Mapping[str, Any], path: str, ctx: Ctx,
                    empty_name: str = "must be either unset or set to a non-empty string") -> list[str]:
    """Which of nodeName, nodeSelector and allNodes `spec` (a slice or a device) sets;
    `empty_name` is upstream's message for nodeName "" (a device's differs from a slice's)."""
    chosen: list[str] = []
    name = spec.get("nodeName")
    if isinstance(name, str):
        if name:
            chosen.append("`nodeName`")
            _node_name(name, join(path, "nodeName"), ctx)
        else:
            ctx.add(invalid(join(path, "nodeName"), "", empty_name))
    if isinstance(spec.get("nodeSelector"), dict):
        chosen.append("`nodeSelector`")
    if _only_true(spec, "allNodes", path, ctx):
        chosen.append("`allNodes`")
    return chosen


def _slice_spec(spec: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    driver_name(_text(spec, "driver"), join(path, "driver"), ctx)
    pool = spec.get("pool") if isinstance(spec.get("pool"), dict) else {}
    pool_name(_text(pool, "name"), join(path, "pool.name"), ctx)
    count = pool.get("resourceSliceCount")
    if not isinstance(count, int) or count <= 0:
        ctx.add(invalid(join(path, "pool.resourceSliceCount"), count if count is not None else 0,
                        "must be greater than zero"))
    generation = pool.get("generation")
    if isinstance(generation, int) and generation < 0:
        ctx.add(invalid(join(path, "pool.generation"), generation, "must be greater than or equal to zero"))
    chosen = _node_selection(spec, path, ctx)
    selector = spec.get("nodeSelector")
    if isinstance(selector, dict) and len(_dicts(selector.get("nodeSelectorTerms"))) != 1:
        ctx.add(invalid(join(path, "nodeSelector.nodeSelectorTerms"), selector.get("nodeSelectorTerms"),
                        "must have exactly one node selector term"))
    per_device = _only_true(spec, "perDeviceNodeSelection", path, ctx)
    if per_device:
        chosen.append("`perDeviceNodeSelection`")
    if not chosen:
        ctx.add(required(path, _EXACTLY_ONE))
    elif len(chosen) > 1:
        ctx.add(invalid(path, "{" + ", ".join(chosen) + "}", _EXACTLY_ONE + ", but multiple fields are set"))
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        ctx.add(invalid(path, "", "only one of `sharedCounters` or `devices` is allowed"))
    named_set(spec.get("devices"), SLICE_MAX_DEVICES, join(path, "devices"), ctx,
              lambda device, at, c: _device(device, at, c, per_device))


def _device(device: Mapping[str, Any], path: str, ctx: Ctx, per_device: bool) -> None:
    label_name(device, path, ctx)
    attributes = device.get("attributes") if isinstance(device.get("attributes"), dict) else {}
    capacity = device.get("capacity") if isinstance(device.get("capacity"), dict) else {}
    total = len(attributes) + len(capacity)
    if total > ATTRIBUTES_AND_CAPACITIES_MAX:
        ctx.add(invalid(path, total, "the total number of attributes and capacities must not exceed "
                                     f"{ATTRIBUTES_AND_CAPACITIES_MAX}"))
    for key, attr in attributes.items():
        qualified_name(key, join(path, "attributes"), ctx)
        if isinstance(attr, dict):
            _attribute(attr, f"{join(path, 'attributes')}[{key}]", ctx)
    for key in capacity:
        qualified_name(key, join(path, "capacity"), ctx)
    if per_device:
        chosen = _node_selection(device, path, ctx, "must not be empty")
        if len(chosen) == 0:
            ctx.add(required(path, _PER_DEVICE))
        elif len(chosen) > 1:
            ctx.add(invalid(path, "{" + ", ".join(chosen) + "}", _PER_DEVICE))
    elif any(device.get(k) is not None for k in ("nodeName", "nodeSelector", "allNodes")):
        ctx.add(invalid(path, None, "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                                    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"))


_ATTRIBUTE_KINDS = ("bool", "int", "string", "version")


def _attribute(attr: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    set_ = [k for k in _ATTRIBUTE_KINDS if attr.get(k) is not None]
    text = attr.get("string")
    if isinstance(text, str) and len(text) > ATTRIBUTE_VALUE_MAX:
        ctx.add(too_long(join(path, "string"), ATTRIBUTE_VALUE_MAX))
    version = attr.get("version")
    if isinstance(version, str):
        if not _SEMVER.match(version):
            ctx.add(invalid(join(path, "version"), version, "must be a string compatible with semver.org spec 2.0.0"))
        if len(version) > ATTRIBUTE_VALUE_MAX:
            ctx.add(too_long(join(path, "version"), ATTRIBUTE_VALUE_MAX))
    if not set_:
        ctx.add(invalid(path, "", "exactly one value must be specified"))
    elif len(set_) > 1:
        ctx.add(invalid(path, dict(attr), "exactly one value must be specified"))


_COUNTERS = MapOf(_closed({"value": Quantity()}))
DEVICE = _closed({
    "name": Str(),
    "attributes": MapOf(_closed({"int": Int(64), "bool": Bool(), "string": Str(), "version": Str()})),
    "capacity": MapOf(_closed({"value": Quantity(), "requestPolicy": Any_()})),
    "consumesCounters": ListOf(_closed({"counterSet": Str(), "counters": _COUNTERS})),
    "nodeName": Str(), "nodeSelector": NODE_SELECTOR, "allNodes": Bool(),
    "taints": ListOf(Obj({**TAINT.fields}, more=frozenset())), "bindsToNode": Bool(),
    "bindingConditions": ListOf(Str()), "bindingFailureConditions": ListOf(Str()),
    "allowMultipleAllocations": Bool(),
})
RESOURCE_SLICE = Obj({
    "metadata": object_meta(namespaced=False),
    "spec": _closed({
        "driver": Str(), "pool": _closed({"name": Str(), "generation": Int(64), "resourceSliceCount": Int(64)}),
        "nodeName": Str(), "nodeSelector": NODE_SELECTOR, "allNodes": Bool(), "perDeviceNodeSelection": Bool(),
        "devices": ListOf(DEVICE), "sharedCounters": ListOf(_closed({"name": Str(), "counters": _COUNTERS})),
    }, checks=(_slice_spec,)),
}, required=("spec",), more=TYPE_META)
