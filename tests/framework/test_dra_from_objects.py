"""Stored DRA objects allocate as the conformance inputs do: each allocator case's
classes, slices and claims go through a real Store (SQLite), then
framework.dra.from_objects turns the stored objects into the allocator's inputs (the
devices in use held by a claim's status.allocation), and the outcome is the case's."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from actors.store.sqlite import SQLiteBackend
from actors.store.write_chain import AS_WRITTEN
from conformance.dra_allocator_cases import allocator_mismatches, features_of, run_allocator_case
from framework.api.dra_kinds import DeviceClass, ResourceClaim, ResourceSlice
from framework.dra.allocator import AllocationError
from framework.dra.from_objects import allocated_devices, allocator_inputs, claims_to_allocate
from tests import dra_manifests as m
from tests.actors.store_helpers import running

CASES = Path(os.environ.get("KSCHED_CONFORMANCE_DIR", "/work/shared/conformance")) / "incoming/dra/allocator-cases.json"


def _cases() -> list[dict[str, Any]]:
    if not CASES.exists():
        return []
    data = json.loads(CASES.read_text())
    return [c for c in (data if isinstance(data, list) else data["cases"]) if c["expect"]["outcome"] != "error"]


def _typed(kind: str, raw: dict[str, Any], i: int, ns: str = "") -> dict[str, Any]:
    """The case's object as a manifest: named by its place (upstream's tests reuse names),
    an All request without the count upstream's test objects carry (the API refuses it)."""
    meta = dict(raw.get("metadata") or {}, name=f"{kind.lower()}-{i}", **({"namespace": ns} if ns else {}))
    out = {**raw, "apiVersion": m.V1, "kind": kind, "metadata": meta}
    if kind == "ResourceClaim":
        out["spec"] = json.loads(json.dumps(raw["spec"]))
        for req in out["spec"]["devices"].get("requests") or []:
            for exact in [req.get("exactly") or {}, *(req.get("firstAvailable") or [])]:
                if exact.get("allocationMode") == "All":
                    exact.pop("count", None)
    return out


def _holder(devices: list[str]) -> dict[str, Any]:
    """A claim whose allocation holds `devices` ("driver/pool/device"): the devices in use."""
    results = [dict(zip(("driver", "pool", "device"), d.split("/")), request="held") for d in devices]
    return {"apiVersion": m.V1, "kind": "ResourceClaim", "metadata": {"name": "holder", "namespace": "in-use"},
            "spec": {"devices": {"requests": [{"name": "held", "exactly": {"deviceClassName": "any"}}]}},
            "status": {"allocation": {"devices": {"results": results}}}}


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["name"])
async def test_stored_objects_allocate_as_the_conformance_inputs_do(case: dict[str, Any], tmp_path) -> None:
    classes = {c["metadata"]["name"]: c for c in case.get("deviceClasses") or []}  # referred to by name
    manifests = ([{**_typed("DeviceClass", c, 0), "metadata": {"name": name}} for name, c in classes.items()]
                 + [_typed("ResourceSlice", s, i) for i, s in enumerate(case.get("resourceSlices") or [])]
                 + [_typed("ResourceClaim", c, i, "claims") for i, c in enumerate(case.get("claims") or [])])
    if case.get("allocatedDevices"):
        manifests.append(_holder(case["allocatedDevices"]))
    # rules=AS_WRITTEN: the conformance driver's store (upstream's test objects use names
    # such as "subReq-0"); every other rule of the kinds applies
    async with running(SQLiteBackend(str(tmp_path)), rules=AS_WRITTEN) as (store, c):
        await c.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in ("claims", "in-use")])
        await c.apply(manifests)
        stored = {kind: [o for o in store._objects[kind].values()]  # noqa: SLF001 - what the store holds
                  for kind in ("DeviceClass", "ResourceSlice", "ResourceClaim")}
    claims = [o for o in stored["ResourceClaim"] if isinstance(o, ResourceClaim) and o.namespace == "claims"]
    claims.sort(key=lambda o: int(o.name.rsplit("-", 1)[1]))
    inputs = allocator_inputs([o for o in stored["DeviceClass"] if isinstance(o, DeviceClass)],
                              [o for o in stored["ResourceSlice"] if isinstance(o, ResourceSlice)],
                              [o for o in stored["ResourceClaim"] if isinstance(o, ResourceClaim)])
    assert inputs.allocated == frozenset(case.get("allocatedDevices") or [])
    expected = run_allocator_case(case)
    features = features_of(case)
    try:
        results = inputs.allocator(features).allocate(case.get("node"), claims_to_allocate(claims))
        actual = {"outcome": "allocated", "results": results} if results or not claims else {"outcome": "unschedulable"}
    except AllocationError as e:
        actual = {"outcome": "error", "error": str(e)}
    assert allocator_mismatches(case["expect"], actual) == [] and actual["outcome"] == expected["outcome"]




def test_admin_access_results_hold_no_device() -> None:
    claim = m.resource_claim()
    claim["status"] = {"allocation": m.allocation()}
    claim["status"]["allocation"]["devices"]["results"].append(
        {"request": "gpu", "driver": m.DRIVER, "pool": "node-1", "device": "gpu-1", "adminAccess": True})
    assert allocated_devices([ResourceClaim(claim), ResourceClaim(m.resource_claim("free"))]) == frozenset(
        {"gpu.example.com/node-1/gpu-0"})
