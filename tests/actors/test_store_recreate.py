"""Recreate: an object deleted and created anew in one write, all or nothing; no
reader sees the name absent, and a refused replacement changes nothing."""
from __future__ import annotations

import pytest

from actors.store import Conflict, StoreError
from actors.base import new_reply
from actors.store.messages import AlreadyExists, BadRequest, Recreate
from actors.store.sqlite import SQLiteBackend
from actors.store import Store

from tests.actors.store_helpers import pod, running


def gated(name: str) -> dict:
    p = pod(name)
    p["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    return p


async def test_a_recreated_pod_has_a_new_uid_and_its_watchers_see_the_delete_and_the_add_together(tmp_path) -> None:
    backend = SQLiteBackend(str(tmp_path / "s.db"))
    async with running(backend) as (store, client):
        old = await client.create(pod("p"))
        seen = []
        await client.watch(seen.append, kinds=frozenset({"Pod"}))
        new = await client.recreate(gated("p"), resource_version=old["metadata"]["resourceVersion"])
        await client.get("Pod", "default", "p")  # a round trip: the store hands out a turn's events after its replies
        assert new["metadata"]["uid"] != old["metadata"]["uid"] and new["spec"]["schedulingGates"]
        changes = [(e.type, e.obj.raw["metadata"]["uid"]) for e in seen if e.type != "ADDED" or e.old is None]
        assert changes[-2:] == [("DELETED", old["metadata"]["uid"]), ("ADDED", new["metadata"]["uid"])]
    reloaded = Store(SQLiteBackend(str(tmp_path / "s.db")))
    await reloaded.load()
    assert reloaded.peek("Pod", "default", "p").raw["metadata"]["uid"] == new["metadata"]["uid"]
    await reloaded.close()


async def test_a_stale_precondition_refuses_the_recreate_and_keeps_the_pod() -> None:
    async with running() as (store, client):
        old = await client.create(pod("p"))
        await client.update_pod_status("default", "p", phase="Succeeded")
        with pytest.raises(Conflict):
            await client.recreate(gated("p"), resource_version=old["metadata"]["resourceVersion"])
        now = await client.get("Pod", "default", "p")
        assert now["metadata"]["uid"] == old["metadata"]["uid"] and now["status"]["phase"] == "Succeeded"


async def test_a_replacement_the_store_refuses_undoes_the_delete() -> None:
    async with running() as (store, client):
        old = await client.create(pod("p"))
        rv = store.resource_version
        bad = gated("p")
        bad["spec"]["containers"] = []  # invalid: a pod needs a container
        with pytest.raises(StoreError):
            await client.recreate(bad)
        assert (await client.get("Pod", "default", "p"))["metadata"]["uid"] == old["metadata"]["uid"]
        assert store.resource_version == rv


async def test_a_pod_kept_by_a_finalizer_is_not_replaced() -> None:
    async with running() as (store, client):
        kept = pod("p")
        kept["metadata"]["finalizers"] = ["example.com/keep"]
        old = await client.create(kept)
        with pytest.raises(AlreadyExists):
            await client.recreate(gated("p"))
        now = await client.get("Pod", "default", "p")
        assert now["metadata"]["uid"] == old["metadata"]["uid"] and "deletionTimestamp" not in now["metadata"]


async def test_a_replacement_must_name_the_object_it_replaces() -> None:
    async with running() as (store, client):
        await client.create(pod("p"))
        with pytest.raises(BadRequest, match='the replacement must be the Pod "p"'):
            await client._store.ask(Recreate(kind="Pod", namespace="default", name="p", obj=gated("q"),
                                             reply=new_reply()))
        assert await client.get("Pod", "default", "p")
