"""EvictPods: preemption's evictions of a group of victims in one store write, each
victim as upstream's PreemptPod writes it (the DisruptionTarget condition, the
delete, the Preempted event), a victim already gone skipped quietly."""
from __future__ import annotations

import asyncio

from actors.store import WatchEvent
from actors.store.messages import StoreError
from actors.store.sqlite import SQLiteBackend
from tests.actors.store_helpers import pod, running

CONDITION = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
             "message": "default-scheduler: preempting to accommodate a higher priority pod"}


def history(seen: list[WatchEvent]) -> list[tuple[str, str, bool]]:
    """(type, pod name, whether it carries the DisruptionTarget condition) per watch event."""
    return [(ev.type, ev.obj.name, any(c.get("type") == "DisruptionTarget" for c in ev.obj.conditions))
            for ev in seen]


async def test_a_group_is_evicted_in_one_commit_condition_then_delete_then_event_per_victim(tmp_path) -> None:
    seen: list[WatchEvent] = []
    last_gone = asyncio.Event()  # the store answers a write before it has told every watcher

    def sink(ev: WatchEvent) -> None:
        seen.append(ev)
        if ev.type == "DELETED" and ev.obj.name == "c":
            last_gone.set()

    async with running(SQLiteBackend(tmp_path)) as (store, c):
        made = {name: await c.create(pod(name)) for name in ("a", "b", "c")}
        await c.watch(sink, kinds=frozenset({"Pod"}), from_rv=store._rv)
        uid = {name: m["metadata"]["uid"] for name, m in made.items()}
        before = store.backend.commits
        evicted = await c.evict_pods([("default", "a", uid["a"]), ("default", "b", "another-uid"),
                                      ("default", "c", uid["c"])], condition=CONDITION, event_reason="Preempted",
                                     event_message="Preempted by pod u-high on node n1")
        assert evicted == (True, False, True)
        assert store.backend.commits == before + 1
        await asyncio.wait_for(last_gone.wait(), 10)
        assert history(seen) == [("MODIFIED", "a", True), ("DELETED", "a", True),
                                 ("MODIFIED", "c", True), ("DELETED", "c", True)]
        rvs = [ev.resource_version for ev in seen]
        assert rvs == sorted(set(rvs))  # each step its own resourceVersion
        for name, expected in (("a", [("Preempted", "Preempted by pod u-high on node n1")]), ("b", []),
                               ("c", [("Preempted", "Preempted by pod u-high on node n1")])):
            assert [(e.reason, e.message) for e in store.events_for("Pod", f"default/{name}")] == expected
        kept = await c.get("Pod", "default", "b")
        assert not any(cond.get("type") == "DisruptionTarget" for cond in kept["status"].get("conditions", []))
    async with running(SQLiteBackend(tmp_path)) as (store, c):
        assert [p["metadata"]["name"] for p in (await c.list("Pod"))[0]] == ["b"]


async def test_a_group_whose_every_victim_is_gone_writes_nothing(tmp_path) -> None:
    async with running(SQLiteBackend(tmp_path)) as (store, c):
        await c.create(pod("a"))
        await c.delete("Pod", "default", "a")
        rv = store._rv
        assert await c.evict_pods([("default", "a", "")], condition=CONDITION, event_reason="Preempted",
                                  event_message="m") == (False,)
        assert store._rv == rv and store.events_for("Pod", "default/a") == []


async def test_a_failed_eviction_undoes_the_whole_group() -> None:
    """A write that fails (here a condition the store cannot encode) fails the
    message and undoes what it wrote; no victim of the group is evicted."""
    async with running() as (store, c):
        made = {name: await c.create(pod(name)) for name in ("a", "b")}
        rv = store._rv
        bad = {**CONDITION, "message": {"not", "encodable"}}
        try:
            await c.evict_pods([("default", "a", made["a"]["metadata"]["uid"]),
                                ("default", "b", made["b"]["metadata"]["uid"])],
                               condition=bad, event_reason="Preempted", event_message="m")
        except StoreError:
            pass
        else:
            raise AssertionError("the store took a condition it cannot encode")
        assert store._rv == rv
        assert {p["metadata"]["name"] for p in (await c.list("Pod"))[0]} == {"a", "b"}
