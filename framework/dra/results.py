"""A claim's AllocationResult from the devices the allocator chose: results, configs, node selector."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from framework.dra.capacity import quantity_text
from framework.dra.requests import DeviceResult


def build_result(claim: Mapping[str, Any], devices: Sequence[DeviceResult],
                 chosen: Sequence[tuple[str, Mapping[str, Any] | None, int]], *,
                 binding_conditions: bool = False, node_name: str = "") -> dict[str, Any]:
    """The claim's AllocationResult. With DRADeviceBindingConditions (binding_conditions) a
    device's binding conditions are copied into its result and a device that binds to a
    node ties the allocation to node_name, as a node-local device does."""
    results = []
    for d in devices:
        entry: dict[str, Any] = {"request": d.request, "driver": d.candidate.driver, "pool": d.candidate.pool,
                                 "device": d.candidate.name}
        if d.admin_access:
            entry["adminAccess"] = True
        if d.tolerations:  # the request's tolerations, as upstream records them
            entry["tolerations"] = [dict(t) for t in d.tolerations]
        if d.share_id:
            entry["shareID"] = d.share_id
        if d.consumed_capacity:
            entry["consumedCapacity"] = {k: quantity_text(v) for k, v in d.consumed_capacity.items()}
        if binding_conditions:
            for key in ("bindingConditions", "bindingFailureConditions"):
                if d.candidate.device.get(key):
                    entry[key] = list(d.candidate.device[key])
        results.append(entry)
    spec_devices = (claim.get("spec") or {}).get("devices") or {}
    config = _class_configs(chosen) + _claim_configs(spec_devices, chosen)
    out: dict[str, Any] = {"devices": {"results": results}}
    if config:
        out["devices"]["config"] = config
    selector = node_selector(devices, binds_to_node=binding_conditions, node_name=node_name)
    if selector is not None:
        out["nodeSelector"] = selector
    return out


def _class_configs(chosen: Sequence[tuple[str, Mapping[str, Any] | None, int]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: dict[str, tuple[int, int]] = {}
    for name, cls, _ in chosen:
        if cls is None:
            continue
        class_name = (cls.get("metadata") or {}).get("name", "")
        if class_name in seen:
            start, end = seen[class_name]
            for c in out[start:end]:
                c["requests"].append(name)
            continue
        start = len(out)
        for cfg in (cls.get("spec") or {}).get("config") or []:
            out.append({"source": "FromClass", "requests": [name], **_configuration(cfg)})
        seen[class_name] = (start, len(out))
    return out


def _claim_configs(spec_devices: Mapping[str, Any],
                   chosen: Sequence[tuple[str, Mapping[str, Any] | None, int]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    requests = spec_devices.get("requests") or []
    for cfg in spec_devices.get("config") or []:
        names = list(cfg.get("requests") or [])
        if not names:
            out.append({"source": "FromClaim", **_configuration(cfg)})
            continue
        for ri, request in enumerate(requests):
            if request.get("name") in names:
                out.append({"source": "FromClaim", "requests": names, **_configuration(cfg)})
                continue
            subs = request.get("firstAvailable") or []
            if not subs:
                continue
            sub = subs[chosen[ri][2]]
            if f"{request.get('name')}/{sub.get('name')}" in names:
                out.append({"source": "FromClaim", "requests": names, **_configuration(cfg)})
    return out


def _configuration(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in cfg.items() if k not in ("requests", "source")}


def node_selector(devices: Sequence[DeviceResult], *, binds_to_node: bool = False,
                  node_name: str = "") -> dict[str, Any] | None:
    """Where the allocation is usable: the node of a node-local device (or, when
    binds_to_node, of a device with `bindsToNode`), else the union of the
    network-attached devices' selector requirements, else everywhere (None)."""
    fields: list[dict[str, Any]] = []
    expressions: list[dict[str, Any]] = []
    for d in devices:
        spec = d.candidate.slice.get("spec") or {}
        source = d.candidate.device if spec.get("perDeviceNodeSelection") else spec
        if source.get("nodeName") or (binds_to_node and d.candidate.device.get("bindsToNode")):
            return {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node_name or source.get("nodeName")]}]}]}
        selector = source.get("nodeSelector")
        if selector is None:
            continue
        terms = selector.get("nodeSelectorTerms") or []
        if len(terms) > 1:
            raise ValueError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        if terms:
            _add_new(terms[0].get("matchFields") or [], fields)
            _add_new(terms[0].get("matchExpressions") or [], expressions)
    if not fields and not expressions:
        return None
    term: dict[str, Any] = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def _add_new(source: Sequence[Mapping[str, Any]], into: list[dict[str, Any]]) -> None:
    for req in source:
        if not any(r.get("key") == req.get("key") and r.get("operator") == req.get("operator")
                   and set(r.get("values") or []) == set(req.get("values") or []) for r in into):
            into.append(dict(req))
