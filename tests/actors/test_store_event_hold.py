"""A store turn that would commit nothing but Events waits for the next write and
rides with it (actors/store/event_hold.py): one commit instead of two, the order
kept, and nothing lost when no write comes (the hold's deadline) or the store stops."""
from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from actors.clock import FakeClock
from actors.store import Store
from actors.store.event_hold import EVENT_HOLD_SECONDS
from actors.store.sqlite import SQLiteBackend

from tests.actors.store_helpers import pod, serving
from tests.actors.test_store_events import Seen


def _store(tmp: Path, clock: FakeClock) -> Store:
    return Store(SQLiteBackend(tmp), clock=clock.now, timers=clock, event_hold_seconds=EVENT_HOLD_SECONDS)


async def _taken(store: Store) -> None:
    """Until the store has taken every message told so far (awaits the loop, not time)."""
    while len(store.inbox) or store.busy:
        await asyncio.sleep(0)


async def test_an_event_with_nothing_else_to_commit_rides_with_the_next_write(tmp_path: Path) -> None:
    async with serving(_store(tmp_path, FakeClock(0.0))) as (store, c):
        seen = Seen()
        await c.watch(seen, kinds=frozenset({"Event", "Pod"}))
        before = store.backend.commits
        c.record_event("Node", "n1", "Warning", "FailedScheduling", "0/1 nodes are available")
        await _taken(store)
        assert store.backend.commits == before and not store.idle()
        await c.create(pod("p"))
        assert store.backend.commits == before + 1
        first, second = await seen.next(), await seen.next()
        assert [(first.type, first.kind), (second.type, second.kind)] == [("ADDED", "Event"), ("ADDED", "Pod")]
        assert store.idle()


async def test_a_held_event_is_committed_when_the_hold_is_due_though_no_write_comes(tmp_path: Path) -> None:
    clock = FakeClock(0.0)
    async with serving(_store(tmp_path, clock)) as (store, c):
        seen = Seen()
        await c.watch(seen, kinds=frozenset({"Event"}))
        c.record_event("Node", "n1", "Normal", "Quiet", "first")
        await _taken(store)
        assert seen.queue.empty() and clock.deadlines() == [EVENT_HOLD_SECONDS]
        clock.advance(EVENT_HOLD_SECONDS)
        ev = await seen.next()
        assert (ev.type, ev.obj.raw["reason"]) == ("ADDED", "Quiet")
        await _taken(store)
        assert store.idle() and clock.deadlines() == [store.events_expire_at]  # the TTL only


async def test_a_read_after_a_held_event_sees_it(tmp_path: Path) -> None:
    async with serving(_store(tmp_path, FakeClock(0.0))) as (store, c):
        await c.create(pod("p"))
        c.record_event("Pod", "default/p", "Warning", "FailedScheduling", "no nodes")
        await _taken(store)
        assert [e.reason for e in await c.events("Pod", "default/p")] == ["FailedScheduling"]


async def test_a_stopping_store_commits_the_events_that_wait(tmp_path: Path) -> None:
    async with serving(_store(tmp_path, FakeClock(0.0))) as (store, c):
        c.record_event("Node", "n1", "Normal", "Quiet", "kept")
        await _taken(store)
        assert not store.idle()
    async with serving(_store(tmp_path, FakeClock(0.0))) as (store, c):
        assert [e.message for e in await c.events("Node", "n1")] == ["kept"]


async def test_a_write_is_answered_when_an_event_comes_while_its_commit_is_in_flight(tmp_path: Path) -> None:
    # The turn loop overlaps a commit with the next turn's preparation (local_commit.py);
    # an event arriving then is held for a write, and must not keep the commit from being
    # joined and its caller answered.
    # The writer holds the commit inside SQLite until the event has been told: on a fast
    # disk it could otherwise land before the event comes, and the case would not happen.
    async with serving(_store(tmp_path, FakeClock(0.0))) as (store, c):
        disk = threading.Event()
        commit_sync = store.backend._commit_sync

        def held(batch, pending) -> None:
            pending.begin()  # the writer is in SQLite: the loop runs on
            disk.wait(60)  # a guard against the hang, not a time bound
            commit_sync(batch, pending)

        store.backend._commit_sync = held
        try:
            created = asyncio.ensure_future(c.create(pod("p")))
            while store._commit.overlap() is None:
                await asyncio.sleep(0)
            in_flight = not created.done()
            c.record_event("Pod", "default/p", "Normal", "Scheduled", "while committing")
        finally:
            disk.set()
        await asyncio.wait_for(created, 60)  # a guard against the hang, not a time bound
        assert in_flight
        assert [e.reason for e in await c.events("Pod", "default/p")] == ["Scheduled"]


async def test_a_pipeline_stopping_commits_the_events_that_wait(tmp_path: Path) -> None:
    from actors.pipeline import Pipeline
    from actors.store.messages import RecordEvent

    async with Pipeline(None, clock=FakeClock(0.0), backend=SQLiteBackend(tmp_path)) as p:
        p.store.tell(RecordEvent(kind="Node", key="n1", type="Normal", reason="Quiet", message="kept"))
        await _taken(p.store)
        assert not p.store.idle()
    async with serving(_store(tmp_path, FakeClock(0.0))) as (store, c):
        assert [e.message for e in await c.events("Node", "n1")] == ["kept"]


async def test_a_store_on_the_in_memory_backend_commits_events_at_once() -> None:
    from actors.store.memory import InMemoryBackend

    clock = FakeClock(0.0)
    store = Store(InMemoryBackend(), clock=clock.now, timers=clock, event_hold_seconds=EVENT_HOLD_SECONDS)
    async with serving(store) as (store, c):
        seen = Seen()
        await c.watch(seen, kinds=frozenset({"Event"}))
        c.record_event("Node", "n1", "Normal", "Quiet", "at once")
        assert (await seen.next()).type == "ADDED"
        assert store.idle()


async def test_the_sweep_a_commit_asks_for_beyond_max_events_rides_with_the_next_write(tmp_path: Path) -> None:
    # In a steady state past the bound every new event asks for a sweep of the oldest one;
    # committed alone, that was one more fsync a completion (Churn at 10,000 queued).
    from actors.store.limits import StoreLimits

    clock = FakeClock(0.0)
    store = Store(SQLiteBackend(tmp_path), clock=clock.now, timers=clock, event_hold_seconds=EVENT_HOLD_SECONDS,
                  limits=StoreLimits(max_events=2))
    async with serving(store) as (store, c):
        seen = Seen()
        await c.watch(seen, kinds=frozenset({"Event", "Pod"}))
        for name in ("a", "b", "c"):
            clock.advance(1)
            c.record_event("Pod", f"default/{name}", "Normal", "Scheduled", "bound")
            await c.create(pod(name))  # the event rides with this write
        await _taken(store)
        before = store.backend.commits
        assert len(store.peek_all("Event")) == 3 and not store.idle()  # the sweep waits for a write
        await c.create(pod("d"))
        assert store.backend.commits == before + 1
        changes = [await seen.next() for _ in range(8)]
        assert [(ev.type, ev.kind) for ev in changes[-2:]] == [("DELETED", "Event"), ("ADDED", "Pod")]
        assert changes[-2].obj.raw["involvedObject"]["name"] == "a"
        assert sorted(e.raw["involvedObject"]["name"] for e in store.peek_all("Event")) == ["b", "c"]
