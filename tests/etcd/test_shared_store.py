"""SharedStore over a real 3-member etcd cluster: two stores stand for two daemons."""
from __future__ import annotations

import asyncio
import json
from contextlib import AbstractAsyncContextManager

import pytest

from actors.store import StoreClient, WatchEvent
from actors.store.etcd import EtcdBackend, EtcdSettings, Fence, connect
from actors.store.messages import AlreadyExists, Conflict, Gone, NotFound
from actors.store.messages import TooLarge
from actors.store.shared import NotLeader, SharedStore
import actors.store.etcd as etcd_module
from tests.actors.store_helpers import pod, serving


def node(name: str, cpu: str = "4") -> dict:
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "pods": "110"}}}


def running(backend: EtcdBackend) -> AbstractAsyncContextManager[tuple[SharedStore, StoreClient]]:
    return serving(SharedStore(backend))


class Recorder:
    """A watch sink whose events tests can await by resourceVersion."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, int]] = []
        self._changed = asyncio.Event()

    def __call__(self, ev: WatchEvent) -> None:
        self.events.append((ev.type, ev.kind, ev.obj.key, ev.resource_version))
        self._changed.set()

    async def until_event(self, type_: str, key: str) -> None:
        while not any(e[0] == type_ and e[2] == key for e in self.events):
            self._changed.clear()
            await self._changed.wait()

    async def until(self, rv: int) -> list[tuple[str, str, str, int]]:
        while not self.events or self.events[-1][3] < rv:
            self._changed.clear()
            await self._changed.wait()
        return self.events


async def raw_get(settings: EtcdSettings, key: str) -> tuple[dict, int] | None:
    async with connect(settings) as client:
        got = await client.get(key.encode())
    return (json.loads(got.value), got.mod_revision) if got is not None else None


async def test_an_object_written_through_one_daemon_reaches_the_other_by_watch_at_its_etcd_mod_revision(
        make_backend, etcd_settings) -> None:
    async with running(make_backend()) as (_, a), running(make_backend()) as (_, b):
        seen = Recorder()
        await b.watch(seen, kinds=frozenset({"Pod"}))
        created = await a.create(pod("web-0"))
        rv = int(created["metadata"]["resourceVersion"])
        assert await seen.until(rv) == [("ADDED", "Pod", "default/web-0", rv)]
        stored, mod_revision = await raw_get(etcd_settings, f"{etcd_settings.prefix}/pods/default/web-0")
        assert mod_revision == rv
        assert "resourceVersion" not in stored["metadata"]  # as kube-apiserver stores it
        assert (await b.get("Pod", "default", "web-0"))["metadata"]["resourceVersion"] == str(rv)


async def test_objects_are_kept_at_the_keys_kube_apiserver_uses(make_backend, etcd_settings) -> None:
    async with running(make_backend()) as (_, a):
        await a.apply([node("n1"), pod("p", ns="team"),
                       {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}])
    for key in ("minions/n1", "pods/team/p", "priorityclasses/high"):
        assert await raw_get(etcd_settings, f"{etcd_settings.prefix}/{key}") is not None, key


async def test_a_stale_resource_version_is_a_conflict_when_the_newer_write_came_through_another_daemon(
        make_backend) -> None:
    async with running(make_backend()) as (_, a), running(make_backend()) as (sb, b):
        first = await a.create(node("n1"))
        # b writes on top of what it has seen (it catches up before answering its own write)
        newer = dict(first, metadata={**first["metadata"]}, spec={"unschedulable": True})
        second = await b.update(newer)
        assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
        stale = dict(first, spec={"unschedulable": False})
        with pytest.raises(Conflict, match="the object has been modified"):
            await a.update(stale)
        assert (await b.get("Node", "", "n1"))["spec"] == {"unschedulable": True}


async def test_two_daemons_creating_the_same_name_at_once_give_one_created_and_one_already_exists(
        make_backend) -> None:
    async with running(make_backend()) as (sa, a), running(make_backend()) as (sb, b):
        results = await asyncio.gather(a.create(pod("same")), b.create(pod("same")), return_exceptions=True)
        created = [r for r in results if isinstance(r, dict)]
        refused = [r for r in results if isinstance(r, AlreadyExists)]
        assert len(created) == 1 and len(refused) == 1, results


async def test_a_list_returns_the_revision_it_read_at_and_a_watch_from_it_gets_only_what_came_after(
        make_backend) -> None:
    async with running(make_backend()) as (_, a), running(make_backend()) as (_, b):
        await a.create(pod("before"))
        items, rv = await a.list("Pod")
        assert [i["metadata"]["name"] for i in items] == ["before"]
        after = await a.create(pod("after"))
        seen = Recorder()
        await b.watch(seen, kinds=frozenset({"Pod"}), from_rv=rv)
        events = await seen.until(int(after["metadata"]["resourceVersion"]))
        assert [e[2] for e in events] == ["default/after"]


async def test_a_binding_without_the_leader_fence_is_refused_and_the_pod_stays_unbound(
        make_backend, etcd_settings) -> None:
    held = Fence(f"{etcd_settings.prefix}/leases/kube-system/kube-scheduler", 1)  # a key that does not exist
    async with running(make_backend(fence=lambda: held)) as (store, a):
        await a.apply([node("n1"), pod("p")])
        with pytest.raises(NotLeader, match="no longer the leader"):
            await a.bind("default", "p", "n1")
        with pytest.raises(NotLeader):  # and it stays refused
            await a.bind("default", "p", "n1")
        assert "nodeName" not in (await a.get("Pod", "default", "p"))["spec"]
        assert store.fence_refusals == 2  # each refused binding once (ksched stats: fenceRefusals)


async def test_a_binding_under_a_held_fence_binds_once(make_backend, etcd_settings) -> None:
    key = f"{etcd_settings.prefix}/leases/kube-system/kube-scheduler"
    async with connect(etcd_settings) as client:
        await client.put(key.encode(), b"{}")
        created = (await client.get(key.encode())).create_revision
    async with running(make_backend(fence=lambda: Fence(key, created))) as (_, a):
        await a.apply([node("n1"), pod("p")])
        bound = await a.bind("default", "p", "n1")
        assert bound["spec"]["nodeName"] == "n1"
        with pytest.raises(Conflict, match="already assigned"):
            await a.bind("default", "p", "n1")


async def test_an_apply_larger_than_one_transaction_is_refused_whole(make_backend, etcd_settings) -> None:
    small = EtcdSettings(endpoints=etcd_settings.endpoints, prefix=etcd_settings.prefix, max_txn_ops=8)
    async with running(EtcdBackend(small)) as (_, a):
        with pytest.raises(TooLarge, match="exceed one etcd transaction"):
            await a.apply([pod(f"p{i}") for i in range(10)])
        assert (await a.list("Pod"))[0] == []
        # requests queued together are split between transactions at request boundaries
        done = await asyncio.gather(*(a.create(pod(f"q{i}")) for i in range(20)))
        assert len(done) == 20 and len((await a.list("Pod"))[0]) == 20


async def test_a_store_that_fell_behind_a_compaction_relists_and_old_watches_answer_expired(
        make_backend, etcd_settings, monkeypatch) -> None:
    monkeypatch.setattr(etcd_module, "LOAD_PAGE", 2)  # the relist reads several pages at one revision
    async with running(make_backend()) as (_, a):
        first = await a.create(pod("gone"))
        behind = SharedStore(make_backend())
        await behind.load()  # loaded now; its feed will start from here
        await a.delete("Pod", "default", "gone")
        last = None
        for i in range(5):
            last = await a.create(pod(f"p{i}"))
        async with connect(etcd_settings) as client:
            await client.compact(int(last["metadata"]["resourceVersion"]))
        async with asyncio.TaskGroup() as tg:
            tg.create_task(behind.run())
            client_b = StoreClient(behind)
            seen = Recorder()
            await client_b.watch(seen, kinds=frozenset({"Pod"}))
            await seen.until(int(last["metadata"]["resourceVersion"]))
            names = sorted(i["metadata"]["name"] for i in (await client_b.list("Pod"))[0])
            assert names == [f"p{i}" for i in range(5)]
            with pytest.raises(Gone, match="too old resource version"):
                await client_b.watch(lambda ev: None, from_rv=int(first["metadata"]["resourceVersion"]))
            behind.inbox.close()
        await behind.close()


async def test_a_delete_through_one_daemon_is_not_found_on_the_other(make_backend) -> None:
    async with running(make_backend()) as (_, a), running(make_backend()) as (_, b):
        created = await a.create(pod("p"))
        deleted = await b.delete("Pod", "default", "p")
        assert deleted["metadata"]["name"] == "p"
        seen = Recorder()
        await a.watch(seen, kinds=frozenset({"Pod"}), from_rv=int(created["metadata"]["resourceVersion"]))
        await seen.until_event("DELETED", "default/p")
        with pytest.raises(NotFound):
            await a.get("Pod", "default", "p")


def test_every_kind_has_a_key_that_maps_back_to_it() -> None:
    layout = etcd_module.KeyLayout("/registry")
    for kind, path in etcd_module.RESOURCE_PATHS.items():
        key = "ns/name" if etcd_module.KINDS[kind].namespaced else "name"
        assert layout.parse(layout.key(kind, key)) == (kind, key)
    assert layout.parse(b"/registry/leases/kube-system/kube-scheduler") is None
    assert layout.parse(b"/other/pods/a/b") is None



async def test_an_event_recorded_through_one_daemon_is_stored_in_etcd_and_counted_up_through_the_other(
        make_backend, etcd_settings) -> None:
    async with running(make_backend()) as (_, a), running(make_backend()) as (sb, b):
        seen = Recorder()
        await b.watch(seen, kinds=frozenset({"Event"}))
        made = await a.create(pod("p"))
        a.record_event("Pod", "default/p", "Warning", "FailedScheduling", "0/1 nodes are available")
        [event] = [e for e in await a.events("Pod", "default/p")]
        await seen.until_event("ADDED", f"default/{event.name}")
        stored, _ = await raw_get(etcd_settings, f"{etcd_settings.prefix}/events/default/{event.name}")
        assert stored["involvedObject"]["uid"] == made["metadata"]["uid"]
        b.record_event("Pod", "default/p", "Warning", "FailedScheduling", "0/1 nodes are available")
        assert [(e.name, e.count) for e in await b.events("Pod", "default/p")] == [(event.name, 2)]
