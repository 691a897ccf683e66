"""A claim's status written through the status subresource (actors/store/status_writes.py):
DynamicResources' allocation and reservedFor, alone (UpdateStatus) or with the binding
(BindWithUpdates). The stored spec and metadata are kept as stored, whatever was sent
with the status; the status is judged with upstream's rules and messages; the
resourceVersion precondition, NotFound and the watch events are as Update's."""
from __future__ import annotations

from typing import Any

import pytest

from actors.store import Conflict, Store
from actors.store.messages import Invalid, NotFound
from actors.store.sqlite import SQLiteBackend
from framework.bind_writes import StatusWrite
from tests import dra_manifests as m
from tests.actors.store_helpers import pod, running

FINALIZER = "resource.kubernetes.io/delete-protection"


def _reserved(uid: str = "p-uid", name: str = "trainer") -> list[dict[str, str]]:
    return [{"resource": "pods", "name": name, "uid": uid}]


async def test_a_spec_and_labels_sent_with_a_status_write_are_not_applied_and_the_status_is() -> None:
    async with running() as (store, c):
        claim = await c.create(m.resource_claim())
        before = store.peek("ResourceClaim", "default", "one-gpu")
        sent = {**claim, "metadata": {**claim["metadata"], "labels": {"touched": "yes"}},
                "spec": m.claim_spec(count=2), "status": {"allocation": m.allocation(), "reservedFor": _reserved()}}
        written = await c.update_status(sent)
        assert written["spec"] == claim["spec"] and "labels" not in written["metadata"]
        assert written["status"] == {"allocation": m.allocation(), "reservedFor": _reserved()}
        assert int(written["metadata"]["resourceVersion"]) > int(claim["metadata"]["resourceVersion"])
        # the stored spec is kept as stored, not walked and copied again
        assert store.peek("ResourceClaim", "default", "one-gpu").raw["spec"] is before.raw["spec"]


async def test_a_bad_status_is_refused_with_the_whole_updates_message_and_nothing_changes() -> None:
    async with running() as (store, c):
        claim = await c.create(m.resource_claim())
        cases = [
            {"reservedFor": _reserved()},  # reserved without an allocation
            {"allocation": m.allocation(request="tpu")},  # a result naming no request of the claim
            {"allocation": m.allocation(), "reservedFor": _reserved() * 2},  # one consumer twice
            {"allocation": m.allocation(), "devices": [  # a device status for a device not allocated
                {"driver": m.DRIVER, "pool": "node-1", "device": "gpu-3"}]},
            {"allocation": m.allocation(), "reservedFor": [{"resource": "pods", "name": "trainer"}]},
        ]
        rv = store.resource_version
        for status in cases:
            with pytest.raises(Invalid) as by_status:
                await c.update_status({**claim, "status": status})
            with pytest.raises(Invalid) as by_update:
                await c.update({**claim, "status": status})
            assert by_status.value.field.startswith("status.")
            assert (by_status.value.field, by_status.value.message) == (by_update.value.field, by_update.value.message)
        assert store.resource_version == rv


async def test_an_allocation_once_set_cannot_change_through_the_status_either() -> None:
    async with running() as (_, c):
        claim = await c.create(m.resource_claim())
        allocated = await c.update_status({**claim, "status": {"allocation": m.allocation()}})
        with pytest.raises(Invalid) as e:
            await c.update_status({**allocated, "status": {"allocation": m.allocation(device="gpu-1")}})
        assert e.value.field == "status.allocation" and e.value.message.endswith("field is immutable")


async def test_a_stale_resource_version_is_a_conflict_and_a_missing_claim_not_found() -> None:
    async with running() as (store, c):
        claim = await c.create(m.resource_claim())
        await c.update({**claim, "metadata": {**claim["metadata"], "labels": {"touched": "yes"}}})
        rv = store.resource_version
        with pytest.raises(Conflict) as e:
            await c.update_status({**claim, "status": {"allocation": m.allocation()}})
        assert e.value.message.startswith('Operation cannot be fulfilled on ResourceClaim "default/one-gpu"')
        with pytest.raises(NotFound) as gone:
            await c.update_status({**m.resource_claim("other"), "status": {"allocation": m.allocation()}})
        assert gone.value.message == 'ResourceClaim "default/other" not found'
        assert store.resource_version == rv


async def test_the_binding_carries_the_status_and_exactly_the_finalizer_in_one_commit_kept_across_a_restart(
        tmp_path) -> None:
    async with running(SQLiteBackend(str(tmp_path))) as (store, c):
        claim = await c.create(m.resource_claim())
        p = await c.create(pod("trainer"))
        uid = p["metadata"]["uid"]
        seen: list[Any] = []
        await c.watch(seen.append, kinds=frozenset({"Pod", "ResourceClaim"}))
        commits = store.commits
        sent = {**claim, "spec": m.claim_spec(count=2), "metadata": {**claim["metadata"], "labels": {"x": "y"}},
                "status": {"allocation": m.allocation(), "reservedFor": _reserved(uid)}}
        [written], bound = await c.bind_with_updates("default", "trainer", "node-1", uid,
                                                     [StatusWrite(obj=sent, finalizer=FINALIZER)])
        await c.get("Pod", "default", "trainer")  # a round trip: the turn's events are out
        assert store.commits == commits + 1 and bound["spec"]["nodeName"] == "node-1"
        assert written["metadata"]["finalizers"] == [FINALIZER] and "labels" not in written["metadata"]
        assert written["spec"] == claim["spec"] and written["status"]["reservedFor"] == _reserved(uid)
        assert [(e.kind, e.type) for e in seen if e.type == "MODIFIED"] == [("ResourceClaim", "MODIFIED"),
                                                                           ("Pod", "MODIFIED")]
    reloaded = Store(SQLiteBackend(str(tmp_path)))
    await reloaded.load()
    try:
        raw = reloaded.peek("ResourceClaim", "default", "one-gpu").raw
        assert raw["status"]["allocation"] == m.allocation() and raw["metadata"]["finalizers"] == [FINALIZER]
    finally:
        await reloaded.close()


async def test_a_claim_being_deleted_takes_neither_the_finalizer_nor_a_new_consumer_and_the_pod_stays_unbound() -> None:
    async with running() as (store, c):
        raw = m.resource_claim()
        raw["metadata"]["finalizers"] = ["example.com/keep"]
        claim = await c.create(raw)
        p = await c.create(pod("trainer"))
        uid = p["metadata"]["uid"]
        await c.delete("ResourceClaim", "default", "one-gpu")
        deleting = await c.get("ResourceClaim", "default", "one-gpu")
        status = {"allocation": m.allocation(), "reservedFor": _reserved(uid)}
        with pytest.raises(Invalid) as e:
            await c.bind_with_updates("default", "trainer", "node-1", uid,
                                      [StatusWrite(obj={**deleting, "status": status}, finalizer=FINALIZER)])
        assert e.value.field == "metadata.finalizers"
        with pytest.raises(Invalid) as e:
            await c.bind_with_updates("default", "trainer", "node-1", uid,
                                      [StatusWrite(obj={**deleting, "status": status})])
        assert e.value.field == "status.reservedFor" and "new entries may not be added" in e.value.message
        assert not (await c.get("Pod", "default", "trainer"))["spec"].get("nodeName")
        assert store.peek("ResourceClaim", "default", "one-gpu").raw.get("status") == claim.get("status")
