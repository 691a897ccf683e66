"""BindWithUpdates: a claim's status and its pod's binding in one store write, both or
neither, committed together and kept in SQLite."""
from __future__ import annotations

from typing import Any

import pytest

from actors.store import Conflict, Store
from actors.store.messages import NotFound
from actors.store.sqlite import SQLiteBackend
from framework.api.dra_kinds import ResourceClaim
from framework.bind_writes import StatusWrite
from tests import dra_manifests as m
from tests.actors.store_helpers import pod, running


def _allocated(claim: dict[str, Any], pod_name: str, uid: str) -> dict[str, Any]:
    status = {"allocation": m.allocation(), "reservedFor": [{"resource": "pods", "name": pod_name, "uid": uid}]}
    return {**claim, "status": status}


async def test_the_claim_status_and_the_binding_are_one_commit_and_both_survive_a_restart(tmp_path) -> None:
    async with running(SQLiteBackend(str(tmp_path))) as (store, c):
        claim = await c.create(m.resource_claim())
        p = await c.create(pod("trainer"))
        commits = store.commits
        seen: list[Any] = []
        await c.watch(seen.append, kinds=frozenset({"Pod", "ResourceClaim"}))
        [written], bound = await c.bind_with_updates("default", "trainer", "node-1", p["metadata"]["uid"],
                                                     [_allocated(claim, "trainer", p["metadata"]["uid"])])
        await c.get("Pod", "default", "trainer")  # a round trip: the turn's events are out
        assert store.commits == commits + 1
        assert written["status"]["allocation"] == m.allocation() and bound["spec"]["nodeName"] == "node-1"
        assert [(e.kind, e.type) for e in seen if e.type == "MODIFIED"] == [("ResourceClaim", "MODIFIED"),
                                                                           ("Pod", "MODIFIED")]
    reloaded = Store(SQLiteBackend(str(tmp_path)))
    await reloaded.load()
    try:
        assert reloaded.peek("ResourceClaim", "default", "one-gpu").raw["status"]["allocation"] == m.allocation()
        assert reloaded.peek("Pod", "default", "trainer").raw["spec"]["nodeName"] == "node-1"
    finally:
        await reloaded.close()


async def test_a_binding_the_store_refuses_leaves_the_claim_unwritten() -> None:
    async with running() as (store, c):
        claim = await c.create(m.resource_claim())
        p = await c.create(pod("trainer"))
        rv = store.resource_version
        with pytest.raises(NotFound):  # the pod's uid is not the one the scheduler saw: another pod of that name
            await c.bind_with_updates("default", "trainer", "node-1", "another-uid",
                                      [_allocated(claim, "trainer", p["metadata"]["uid"])])
        with pytest.raises(NotFound):
            await c.bind_with_updates("default", "gone", "node-1", "", [_allocated(claim, "gone", "x")])
        assert store.resource_version == rv
        assert not ((await c.get("ResourceClaim", "default", "one-gpu")).get("status") or {}).get("allocation")


async def test_a_stale_claim_refuses_the_binding_too() -> None:
    async with running() as (store, c):
        claim = await c.create(m.resource_claim())
        p = await c.create(pod("trainer"))
        await c.update({**claim, "metadata": {**claim["metadata"], "labels": {"touched": "yes"}}})
        with pytest.raises(Conflict):
            await c.bind_with_updates("default", "trainer", "node-1", p["metadata"]["uid"],
                                      [_allocated(claim, "trainer", p["metadata"]["uid"])])
        assert not (await c.get("Pod", "default", "trainer"))["spec"].get("nodeName")


async def test_the_claim_the_bind_answers_restates_as_the_stores_own_object_and_a_copy_is_parsed() -> None:
    async with running() as (store, c):
        claim = ResourceClaim(await c.create(m.resource_claim()))
        p = await c.create(pod("trainer"))
        [written], _ = await c.bind_with_updates("default", "trainer", "node-1", p["metadata"]["uid"], [
            StatusWrite(obj=_allocated(claim.raw, "trainer", p["metadata"]["uid"]))])
        stored = store.peek("ResourceClaim", "default", "one-gpu")
        assert written is stored.raw
        assert claim.restated(written) is stored  # the scheduler holds the object its view will be handed
        copy = claim.restated({**written})
        assert copy is not stored and copy.allocated == stored.allocated and copy.reserved_for == stored.reserved_for
        assert copy.meta.resource_version == stored.meta.resource_version != claim.meta.resource_version
