"""DRA allocator cases (incoming/dra/allocator-cases*.json): Allocate(node, claims) through
framework/dra with the case's feature gates, classes, slices and devices in use. The outcome
(allocated results, unschedulable, or an error) is reported, then compared as upstream does."""
from __future__ import annotations

import json
from typing import Any

from framework.api.quantity import parse_quantity_text
from framework.dra.allocator import AllocationError, Allocator, Features


def is_allocator_case(case: dict[str, Any]) -> bool:
    return "claims" in case and "featureGates" in case


def features_of(case: dict[str, Any]) -> Features:
    """The allocator's features from the case's feature gates."""
    gates = case.get("featureGates") or {}
    return Features(
        admin_access=bool(gates.get("DRAAdminAccess")), prioritized_list=bool(gates.get("DRAPrioritizedList")),
        partitionable_devices=bool(gates.get("DRAPartitionableDevices")),
        device_taints=bool(gates.get("DRADeviceTaints")), consumable_capacity=bool(gates.get("DRAConsumableCapacity")),
        binding_conditions=bool(gates.get("DRADeviceBindingConditions"))
        and bool(gates.get("DRAResourceClaimDeviceStatus")))


def run_allocator_case(case: dict[str, Any]) -> dict[str, Any]:
    features = features_of(case)
    classes = {(c.get("metadata") or {}).get("name", ""): c for c in case.get("deviceClasses") or []}
    claims = case.get("claims") or []
    try:
        allocator = Allocator(features=features, classes=classes, slices=case.get("resourceSlices") or [],
                              allocated=set(case.get("allocatedDevices") or []),
                              aggregated_capacity={device: {name: parse_quantity_text(str(q)) for name, q in caps.items()}
                                                   for device, caps in _allocated_capacity(case).items()})
        results = allocator.allocate(case.get("node"), claims)
    except AllocationError as e:
        return {"outcome": "error", "error": str(e)}
    if claims and not results:
        return {"outcome": "unschedulable"}
    return {"outcome": "allocated", "results": results}


def _allocated_capacity(case: dict[str, Any]) -> dict[str, Any]:
    """DRAConsumableCapacity's capacity already consumed per shared device: this
    repository's `allocatedCapacity`, or upstream's own field name."""
    return case.get("allocatedCapacity") or case.get("allocatedCapacityDevices") or {}


def allocator_mismatches(expect: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    if expect.get("outcome") != actual.get("outcome"):
        return [f"outcome: expected {expect.get('outcome')!r}, got {actual!r}"]
    if "errorContains" in expect and expect["errorContains"] not in (actual.get("error") or ""):
        return [f"error: expected to contain {expect['errorContains']!r}, got {actual.get('error')!r}"]
    if "results" in expect:
        want = sorted(_canonical(r) for r in expect["results"])
        got = sorted(_canonical(r) for r in actual.get("results") or [])
        if want != got:
            return [f"results: expected {expect['results']!r}, got {actual.get('results')!r}"]
    return []


def _canonical(result: dict[str, Any]) -> str:
    """One AllocationResult as upstream's matcher sees it: device results unordered unless the
    result carries configs; node selector terms, requirements and values unordered."""
    devices = dict(result.get("devices") or {})
    devices["results"] = [_device_result(r) for r in devices.get("results") or []]
    if not devices.get("config"):
        devices.pop("config", None)
        devices["results"] = sorted(devices.get("results") or [], key=lambda d: json.dumps(d, sort_keys=True))
    out = {"devices": devices}
    if result.get("nodeSelector"):
        out["nodeSelector"] = sorted(json.dumps(_term(t), sort_keys=True)
                                     for t in result["nodeSelector"].get("nodeSelectorTerms") or [])
    return json.dumps(out, sort_keys=True)


def _device_result(r: dict[str, Any]) -> dict[str, Any]:
    """As upstream's test reads a result: any share ID stands for its fixed one, and
    consumed capacities are amounts (not spellings)."""
    out = dict(r)
    if out.get("shareID"):
        out["shareID"] = "<share>"
    if out.get("consumedCapacity"):
        out["consumedCapacity"] = {k: str(parse_quantity_text(str(v))) for k, v in out["consumedCapacity"].items()}
    return out


def _term(term: dict[str, Any]) -> dict[str, Any]:
    return {k: sorted(json.dumps(dict(r, values=sorted(r.get("values") or [])), sort_keys=True)
                      for r in term.get(k) or [])
            for k in ("matchExpressions", "matchFields") if term.get(k)}
