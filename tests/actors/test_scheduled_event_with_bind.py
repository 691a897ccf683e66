"""The scheduler's Scheduled event written with its binding (messages.Bind's
`scheduled_event`): in the binding's own write, right after it, and never twice."""
from __future__ import annotations

from typing import Any

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.store.messages import RecordEvent, WatchEvent
from actors.store.sqlite import SQLiteBackend
from tests.actors.helpers import node, pod
from tests.actors.store_helpers import pod as store_pod, running


def _store_messages(p: Pipeline) -> list[str]:
    """The type of every message put in the store's inbox from now on."""
    seen: list[str] = []
    inbox, put = p.store.inbox, p.store.inbox.put

    def counted(msg: Any) -> None:
        seen.append(type(msg).__name__)
        put(msg)
    inbox.put = counted  # type: ignore[method-assign]
    return seen


async def test_the_scheduled_event_follows_its_binding_in_the_same_commit_and_no_record_is_sent() -> None:
    async with Pipeline(None, clock=FakeClock()) as p:
        await p.client.apply([node("n1"), node("n2")])
        changes: list[WatchEvent] = []
        await p.client.watch(changes.append, kinds=frozenset({"Pod", "Event"}))
        sent = _store_messages(p)
        commits = p.store.commits
        await p.client.create(pod("a"))
        await p.run_until_quiescent()
        bound = p.store.peek("Pod", "default", "a")
        assert bound is not None and bound.node_name in {"n1", "n2"}
        assert "RecordEvent" not in sent and sent.count("Bind") == 1
        assert p.store.commits - commits == 2  # the create, then the binding with its event
        seen = [(ev.kind, ev.type, ev.resource_version) for ev in changes]
        rv = int(bound.meta.resource_version)
        assert seen[-2:] == [("Pod", "MODIFIED", rv), ("Event", "ADDED", rv + 1)]
        events = await p.client.events("Pod", "default/a")
        assert [(e.reason, e.message, e.count) for e in events] == [
            ("Scheduled", f"Successfully assigned default/a to {bound.node_name}", 1)]
        assert events[0].uid == bound.meta.uid


async def test_a_binding_through_the_api_records_no_scheduled_event() -> None:
    async with running() as (store, c):
        made = await c.create(store_pod("a"))
        await c.bind("default", "a", "node-1", made["metadata"]["uid"])
        assert await c.events("Pod", "default/a") == []


async def test_a_refused_binding_writes_no_scheduled_event_and_the_scheduler_records_none_for_it(tmp_path) -> None:
    async with running(SQLiteBackend(str(tmp_path))) as (store, c):
        made = await c.create(store_pod("a"))
        uid = made["metadata"]["uid"]
        await c.bind("default", "a", "node-1", uid, scheduled_event=True)
        try:
            await c.bind("default", "a", "node-2", uid, scheduled_event=True)
        except Exception as e:  # noqa: BLE001 - the Conflict is what this test is about
            assert "already assigned" in str(e)
        else:
            raise AssertionError("a second binding was accepted")
        c.record_scheduled("default", "a", "node-1", uid)  # the first binding's: written already
        await c.get("Pod", "default", "a")  # a round trip: anything sent was taken
        events = await c.events("Pod", "default/a")
        assert [(e.reason, e.message, e.count) for e in events] == [("Scheduled", "Successfully assigned default/a to node-1", 1)]
        c.record_scheduled("default", "a", "node-1", uid)  # a binding that did not carry it: recorded now
        await c.get("Pod", "default", "a")
        assert [e.count for e in await c.events("Pod", "default/a")] == [2]


async def test_a_scheduled_event_survives_a_restart_with_its_binding(tmp_path) -> None:
    async with running(SQLiteBackend(str(tmp_path))) as (store, c):
        made = await c.create(store_pod("a"))
        await c.bind("default", "a", "node-1", made["metadata"]["uid"], scheduled_event=True)
    async with running(SQLiteBackend(str(tmp_path))) as (store, c):
        assert store.peek("Pod", "default", "a").node_name == "node-1"
        assert [e.reason for e in await c.events("Pod", "default/a")] == ["Scheduled"]


async def test_a_recorder_that_raises_leaves_the_binding_written_without_its_event() -> None:
    async with running() as (store, c):
        made = await c.create(store_pod("a"))

        def broken(msg: RecordEvent, batch: Any) -> None:
            store._write("Event", "default/half-made", {"metadata": {"name": "half-made", "namespace": "default"}},
                         batch)
            raise RuntimeError("a bug in the recorder")
        store._events.record = broken  # type: ignore[method-assign]
        bound = await c.bind("default", "a", "node-1", made["metadata"]["uid"], scheduled_event=True)
        assert bound["spec"]["nodeName"] == "node-1"
        assert store.peek("Event", "default", "half-made") is None  # its half-made write undone
        assert store.peek("Pod", "default", "a").node_name == "node-1"
