"""Events are stored objects: recorded through the store's group commit, folded by
repeat (count), about one life of an object (its uid), expired after the TTL on the
injected clock (watchers see DELETED), bounded in all and per object (oldest first),
and kept by a durable backend across a restart."""
from __future__ import annotations

import asyncio
from typing import Any

from actors.clock import FakeClock
from actors.store.history import EVENTS_PER_OBJECT
from actors.store.limits import StoreLimits
from actors.store.memory import InMemoryBackend
from actors.store.messages import WatchEvent
from actors.store.sqlite import SQLiteBackend

from tests.actors.store_helpers import pod, running


class Seen:
    """A watch sink the test awaits (no sleeps)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[WatchEvent] = asyncio.Queue()

    def __call__(self, ev: WatchEvent) -> None:
        self.queue.put_nowait(ev)

    async def next(self) -> WatchEvent:
        return await asyncio.wait_for(self.queue.get(), 10)


async def test_a_recorded_event_is_a_core_v1_event_object_listed_and_watched() -> None:
    async with running() as (store, c):
        seen = Seen()
        await c.watch(seen, kinds=frozenset({"Event"}))
        created = await c.create(pod("p"))
        c.record_event("Pod", "default/p", "Normal", "Scheduled", "Successfully assigned default/p to n1")
        ev = await seen.next()
        assert ev.type == "ADDED" and ev.kind == "Event"
        raw = ev.obj.raw
        assert raw["metadata"]["name"].startswith("p.") and raw["metadata"]["namespace"] == "default"
        assert raw["involvedObject"] == {"kind": "Pod", "namespace": "default", "name": "p",
                                         "uid": created["metadata"]["uid"], "apiVersion": "v1"}
        assert (raw["reason"], raw["type"], raw["count"]) == ("Scheduled", "Normal", 1)
        assert raw["source"] == {"component": "default-scheduler"} and raw["reportingComponent"] == "default-scheduler"
        assert raw["firstTimestamp"] == raw["lastTimestamp"]
        items, _ = await c.list("Event", "default", field_selector="involvedObject.name=p,reason=Scheduled")
        assert [i["metadata"]["name"] for i in items] == [raw["metadata"]["name"]]
        assert (await c.list("Event", "default", field_selector="involvedObject.name=q"))[0] == []


async def test_a_repeat_of_the_same_event_on_the_same_object_counts_up_instead_of_adding_one() -> None:
    clock = FakeClock(1000.0)
    async with running(clock=clock) as (store, c):
        await c.create(pod("p"))
        for _ in range(3):
            c.record_event("Pod", "default/p", "Warning", "FailedScheduling", "0/3 nodes are available")
        await c.events("Pod", "default/p")  # taken (the store reads the clock when it takes them)
        clock.advance(30)
        c.record_event("Pod", "default/p", "Warning", "FailedScheduling", "0/3 nodes are available")
        c.record_event("Pod", "default/p", "Warning", "FailedScheduling", "0/4 nodes are available")
        events = await c.events("Pod", "default/p")
        assert [(e.message, e.count) for e in events] == [("0/3 nodes are available", 4),
                                                            ("0/4 nodes are available", 1)]
        assert (events[0].first_time, events[0].time) == (1000.0, 1030.0)
        assert len(store.peek_all("Event")) == 2


def _fields(ev: Any) -> tuple[Any, ...]:
    """Every parsed field of a stored Event and of its metadata."""
    from framework.api.event import Event
    from framework.api.meta import KubeObject, ObjectMeta
    return (tuple(getattr(ev, s) for s in (*KubeObject.__slots__, *Event.__slots__) if s != "meta"),
            tuple(getattr(ev.meta, s) for s in ObjectMeta.__slots__))


async def test_a_repeated_event_is_stored_as_parsing_its_object_whole_would_give() -> None:
    from framework.api.objects import parse_object
    clock = FakeClock(1000.0)
    async with running(clock=clock) as (store, c):
        await c.create(pod("p"))
        for step in range(3):
            c.record_event("Pod", "default/p", "Warning", "FailedScheduling", "0/3 nodes are available")
            await c.events("Pod", "default/p")
            clock.advance(7.5)
            [stored] = store.peek_all("Event")
            assert stored.count == step + 1
            assert _fields(stored) == _fields(parse_object(stored.raw))


async def test_a_new_event_is_stored_as_parsing_its_object_whole_would_give() -> None:
    from framework.api.objects import parse_object
    clock = FakeClock(1000.25)
    async with running(clock=clock) as (store, c):
        await c.create(pod("p"))
        c.record_event("Pod", "default/p", "Normal", "Scheduled", "Successfully assigned default/p to n1")
        c.record_event("Node", "n1", "Warning", "NodeNotReady", "the node is not ready", "node-uid")
        await c.events("Pod", "default/p")
        stored = store.peek_all("Event")
        assert sorted(e.involved_kind for e in stored) == ["Node", "Pod"]
        for ev in stored:
            assert ev.meta.resource_version and ev.meta.uid and ev.first_seen == 1000.0
            assert _fields(ev) == _fields(parse_object(ev.raw))


async def test_a_pod_created_again_under_its_name_shows_only_the_new_lifes_events() -> None:
    async with running() as (store, c):
        old = await c.create(pod("p"))
        c.record_event("Pod", "default/p", "Warning", "FailedScheduling", "no nodes")
        await c.delete("Pod", "default", "p")
        # reported after the delete, with the uid the sender saw (the preemption actor's victims)
        c.record_event("Pod", "default/p", "Normal", "Preempted", "gone", uid=old["metadata"]["uid"])
        assert [e.reason for e in await c.events("Pod", "default/p")] == ["FailedScheduling", "Preempted"]
        new = await c.create(pod("p"))
        c.record_event("Pod", "default/p", "Warning", "FailedScheduling", "no nodes")
        events = await c.events("Pod", "default/p")
        assert [(e.reason, e.uid) for e in events] == [("FailedScheduling", new["metadata"]["uid"])]
        items, _ = await c.list("Event", "default", field_selector=f"involvedObject.uid={old['metadata']['uid']}")
        assert sorted(i["reason"] for i in items) == ["FailedScheduling", "Preempted"]


async def test_events_expire_after_the_ttl_from_their_last_write_and_watchers_see_them_deleted() -> None:
    clock = FakeClock(0.0)
    async with running(limits=StoreLimits(event_ttl_seconds=60), clock=clock) as (store, c):
        seen = Seen()
        await c.watch(seen, kinds=frozenset({"Event"}))
        c.record_event("Node", "n1", "Normal", "Quiet", "first")
        assert (await seen.next()).type == "ADDED"
        clock.advance(50)
        c.record_event("Node", "n2", "Normal", "Busy", "first")
        assert (await seen.next()).type == "ADDED"
        clock.advance(5)
        c.record_event("Node", "n2", "Normal", "Busy", "first")  # a repeat: its TTL starts again
        assert (await seen.next()).type == "MODIFIED"
        clock.advance(6)  # 61 s: n1's event is due
        gone = await seen.next()
        assert (gone.type, gone.obj.raw["involvedObject"]["name"]) == ("DELETED", "n1")
        assert await c.events("Node", "n1") == [] and [e.count for e in await c.events("Node", "n2")] == [2]
        clock.advance(54)  # 115 s: n2's repeat was 60 s ago
        gone = await seen.next()
        assert (gone.type, gone.obj.raw["involvedObject"]["name"]) == ("DELETED", "n2")
        assert store.peek_all("Event") == []


async def test_the_oldest_events_go_first_beyond_the_bound_in_all_and_per_object() -> None:
    clock = FakeClock(0.0)
    async with running(limits=StoreLimits(max_events=5), clock=clock) as (store, c):
        seen = Seen()
        await c.watch(seen, kinds=frozenset({"Event"}))
        for i in range(8):
            clock.advance(1)
            c.record_event("Pod", f"default/p{i}", "Normal", "Scheduled", "bound")
        deleted = [ev.obj.raw["involvedObject"]["name"] for ev in [await seen.next() for _ in range(11)]
                   if ev.type == "DELETED"]
        assert deleted == ["p0", "p1", "p2"]
        names = sorted(e.raw["involvedObject"]["name"] for e in store.peek_all("Event"))
        assert names == ["p3", "p4", "p5", "p6", "p7"]
    async with running(clock=FakeClock(0.0)) as (store, c):
        seen = Seen()
        await c.watch(seen, kinds=frozenset({"Event"}))
        c.record_event("Pod", "default/quiet", "Normal", "Scheduled", "bound")
        for i in range(EVENTS_PER_OBJECT + 20):
            c.record_event("Pod", "default/noisy", "Warning", "FailedScheduling", f"attempt {i}")
        changes = [await seen.next() for _ in range(1 + EVENTS_PER_OBJECT + 20 + 20)]
        assert sum(ev.type == "DELETED" for ev in changes) == 20
        noisy = await c.events("Pod", "default/noisy")
        assert len(noisy) == EVENTS_PER_OBJECT and noisy[0].message == "attempt 20"
        assert [e.reason for e in await c.events("Pod", "default/quiet")] == ["Scheduled"]


async def test_events_are_written_with_the_turns_other_writes_in_one_commit(tmp_path: Any) -> None:
    backend = InMemoryBackend()
    commits: list[list[str]] = []
    original = backend.commit

    async def commit(writes: Any) -> None:
        commits.append([w.kind for w in writes])
        await original(writes)

    backend.commit = commit  # type: ignore[method-assign]
    async with running(backend) as (store, c):
        await c.create(pod("p"))
        commits.clear()
        c.record_event("Pod", "default/p", "Warning", "FailedScheduling", "no")
        c.record_event("Pod", "default/p", "Warning", "FailedScheduling", "no")
        await c.bind("default", "p", "n1")
        assert commits == [["Event", "Event", "Pod"]]
        assert [e.count for e in await c.events("Pod", "default/p")] == [2]


async def test_stored_events_survive_a_restart_and_still_fold_repeats(tmp_path: Any) -> None:
    async with running(SQLiteBackend(tmp_path)) as (store, c):
        await c.create(pod("p"))
        c.record_event("Pod", "default/p", "Normal", "Scheduled", "Successfully assigned default/p to n1")
        await c.events("Pod", "default/p")
    async with running(SQLiteBackend(tmp_path)) as (store, c):
        c.record_event("Pod", "default/p", "Normal", "Scheduled", "Successfully assigned default/p to n1")
        events = await c.events("Pod", "default/p")
        assert [(e.reason, e.count) for e in events] == [("Scheduled", 2)]
        assert len(store.peek_all("Event")) == 1
