"""The page's devices per node (issue 30): of a ResourceSlice, the node it is on and its
devices as "<driver>/<pool>/<device>" (the allocator's device ids); of a ResourceClaim,
the devices its status.allocation holds and the pods in its status.reservedFor. The
page joins them per node (nodes.js). Only these views travel: a slice's attributes and
capacities and a claim's spec stay on the server."""
from __future__ import annotations

from typing import Any, Mapping


def _dicts(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def resource_slice_view(raw: Mapping[str, Any]) -> dict[str, Any]:
    spec = raw.get("spec") if isinstance(raw.get("spec"), Mapping) else {}
    pool = spec.get("pool") if isinstance(spec.get("pool"), Mapping) else {}
    driver, pool_name = str(spec.get("driver", "")), str(pool.get("name", ""))
    return {"node": str(spec.get("nodeName") or ""),
            "devices": [f"{driver}/{pool_name}/{d.get('name', '')}" for d in _dicts(spec.get("devices"))]}


def resource_claim_view(raw: Mapping[str, Any]) -> dict[str, Any]:
    status = raw.get("status") if isinstance(raw.get("status"), Mapping) else {}
    allocation = status.get("allocation") if isinstance(status.get("allocation"), Mapping) else {}
    devices = allocation.get("devices") if isinstance(allocation.get("devices"), Mapping) else {}
    results = _dicts(devices.get("results"))
    return {"devices": [f"{r.get('driver', '')}/{r.get('pool', '')}/{r.get('device', '')}" for r in results],
            "pods": [str(r.get("name", "")) for r in _dicts(status.get("reservedFor")) if r.get("resource") == "pods"]}


VIEWS = {"ResourceSlice": resource_slice_view, "ResourceClaim": resource_claim_view}
