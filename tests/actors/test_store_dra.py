"""DRA's kinds at the store: created with upstream's defaults, refused with upstream's
messages, updates held to the immutability rules, watched, and kept in SQLite across a
restart."""
from __future__ import annotations

import pytest

from actors.store import Store
from actors.store.messages import BadRequest, Invalid
from actors.store.sqlite import SQLiteBackend
from tests import dra_manifests as m
from tests.actors.store_helpers import running


async def test_every_dra_kind_is_stored_defaulted_and_kept_across_a_restart(tmp_path) -> None:
    async with running(SQLiteBackend(str(tmp_path))) as (_, c):
        for raw in (m.device_class(), m.resource_slice(), m.claim_template(), m.resource_claim()):
            await c.create(raw, field_validation="Strict")
    reloaded = Store(SQLiteBackend(str(tmp_path)))
    await reloaded.load()
    try:
        claim = reloaded.peek("ResourceClaim", "default", "one-gpu").raw
        assert claim["spec"]["devices"]["requests"][0]["exactly"] == {
            "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}
        template = reloaded.peek("ResourceClaimTemplate", "default", "one-gpu").raw
        assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
        assert reloaded.peek("DeviceClass", "", "gpu.example.com") is not None
        assert len(reloaded.peek("ResourceSlice", "", "node-1-gpus").raw["spec"]["devices"]) == 4
    finally:
        await reloaded.close()


async def test_a_bad_selector_is_refused_naming_the_field_and_nothing_is_stored() -> None:
    async with running() as (store, c):
        with pytest.raises(Invalid) as e:
            await c.create(m.device_class(expression="device.driver =="))
        assert e.value.field == "spec.selectors[0].cel.expression"
        assert "compilation failed" in e.value.message
        assert store.peek("DeviceClass", "", "gpu.example.com") is None


async def test_a_selector_over_the_cost_limit_is_refused_on_create_and_update_and_nothing_changes() -> None:
    async with running() as (store, c):
        with pytest.raises(Invalid) as e:
            await c.create(m.device_class(expression=m.nested_all(6)))
        path = "spec.selectors[0].cel.expression"
        assert (e.value.field, e.value.message) == (path, f"{path}: Forbidden: too complex, exceeds cost limit")
        assert store.peek("DeviceClass", "", "gpu.example.com") is None
        stored = await c.create(m.device_class())
        with pytest.raises(Invalid) as e:
            await c.update({**stored, "spec": {"selectors": [{"cel": {"expression": m.nested_all(6)}}]}})
        assert e.value.message.endswith("Forbidden: too complex, exceeds cost limit")
        assert store.peek("DeviceClass", "", "gpu.example.com").raw["spec"] == stored["spec"]


async def test_a_misspelled_field_is_an_unknown_field_under_strict_validation() -> None:
    async with running() as (_, c):
        raw = m.resource_claim()
        raw["spec"]["devices"]["requests"][0]["exactly"]["deviceClass"] = "gpu"
        with pytest.raises(BadRequest) as e:
            await c.create(raw, field_validation="Strict")
        assert 'unknown field "spec.devices.requests[0].exactly.deviceClass"' in e.value.message


async def test_a_claims_spec_cannot_change_and_its_allocation_once_set_cannot_either() -> None:
    async with running() as (_, c):
        stored = await c.create(m.resource_claim())
        changed = {**stored, "spec": m.claim_spec(count=2)}
        with pytest.raises(Invalid) as e:
            await c.update(changed)
        assert e.value.field == "spec" and e.value.message.endswith("field is immutable")
        allocated = await c.update({**stored, "status": {"allocation": m.allocation()}})
        assert allocated["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
        with pytest.raises(Invalid) as e:
            await c.update({**allocated, "status": {"allocation": m.allocation(device="gpu-1")}})
        assert e.value.field == "status.allocation"
        reserved = await c.update({**allocated, "status": {**allocated["status"], "reservedFor": [
            {"resource": "pods", "name": "trainer", "uid": "u-1"}]}})
        assert reserved["status"]["reservedFor"][0]["name"] == "trainer"


async def test_a_slice_cannot_move_to_another_node() -> None:
    async with running() as (_, c):
        stored = await c.create(m.resource_slice())
        moved = {**stored, "spec": {**stored["spec"], "nodeName": "node-2"}}
        with pytest.raises(Invalid) as e:
            await c.update(moved)
        assert e.value.field == "spec.nodeName"


async def test_watchers_see_claims_change() -> None:
    async with running() as (_, c):
        seen: list = []
        await c.watch(seen.append, kinds=frozenset({"ResourceClaim"}))
        stored = await c.create(m.resource_claim())
        await c.update({**stored, "status": {"allocation": m.allocation()}})
        await c.delete("ResourceClaim", "default", "one-gpu")
        await c.list("Namespace")  # the store hands out a turn's events before it takes the next request
        assert [e.type for e in seen if e.obj.kind == "ResourceClaim"][-3:] == ["ADDED", "MODIFIED", "DELETED"]


async def test_deallocating_a_claim_drops_the_device_statuses_of_the_devices_it_no_longer_holds() -> None:
    async with running() as (store, c):
        stored = await c.create(m.resource_claim())
        allocation = m.allocation("node-1", "gpu-0")
        gpu0 = {"driver": m.DRIVER, "pool": "node-1", "device": "gpu-0", "data": {"health": "ok"}}
        stored = await c.update({**stored, "status": {"allocation": allocation, "devices": [gpu0]}})
        # the same status written again keeps the entry: the device is still allocated
        stored = await c.update({**stored, "status": {**stored["status"], "reservedFor": [
            {"resource": "pods", "name": "p", "uid": "p-uid"}]}})
        assert stored["status"]["devices"] == [gpu0]
        released = await c.update({**stored, "status": {"devices": [gpu0]}})  # a client unaware of device status
        assert released["status"] == {}
        assert store.peek("ResourceClaim", "default", "one-gpu").raw["status"] == {}
