"""Store events that follow each other in the Scheduler's inbox ride in one
StoreChanged, and are handled as one message each would be: in order, a failing
one counted and logged as its own failure, the others handled."""
from __future__ import annotations

import random

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.scheduler import StoreChanged
from actors.scheduler_views import GetStats
from actors.base import new_reply
from actors.store import WatchEvent
from framework.api.objects import Node
from tests.actors.helpers import node, pod
from tests.actors.test_pipeline import pods_in_store


def added(name: str, rv: int) -> WatchEvent:
    return WatchEvent("ADDED", "Node", Node(node(name)), None, rv)


async def test_events_in_a_row_share_one_message_and_a_message_between_starts_another() -> None:
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        s = p.scheduler
        await p.settle()
        s.store_changed(added("a", 1001))
        s.store_changed(added("b", 1002))
        reply = new_reply()
        s.tell(GetStats(reply=reply))
        s.store_changed(added("c", 1003))
        queued = list(s.inbox._items)
        assert [type(m) for m in queued] == [StoreChanged, GetStats, StoreChanged]
        assert [ev.obj.name for ev in queued[0].events] == ["a", "b"]
        assert [ev.obj.name for ev in queued[2].events] == ["c"]
        await p.settle()
        assert sorted(s.cache.node_names()) == ["a", "b", "c"] and s.view_rv == 1003
        assert reply.done()


async def test_an_event_that_raises_fails_alone_and_the_next_ones_are_handled() -> None:
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        s = p.scheduler
        await p.settle()
        handle = s.events.on_store_change

        def on_store_change(ev: WatchEvent) -> None:
            if ev.obj.name == "b":
                raise ValueError("b")
            handle(ev)
        s.events.on_store_change = on_store_change  # type: ignore[method-assign]
        for i, name in enumerate(["a", "b", "c"]):
            s.store_changed(added(name, 1001 + i))
        assert len(s.inbox) == 1
        await p.settle()
        assert sorted(s.cache.node_names()) == ["a", "c"] and s.failures == 1 and not s.inbox.closed


async def test_pods_created_together_are_bound_with_fewer_messages_than_events() -> None:
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply([node(f"n{i}") for i in range(4)])
        await p.settle()
        inbox = p.scheduler.inbox
        put, kinds = inbox.put, []

        def counted(msg: object) -> None:
            kinds.append(type(msg))
            put(msg)
        inbox.put = counted  # type: ignore[method-assign]
        await p.client.apply([pod(f"p{i}") for i in range(40)])
        await p.run_until_quiescent(10)
        assert all(q.node_name for q in pods_in_store(p)) and len(pods_in_store(p)) == 40
        # 80 events (40 creations, 40 bindings): the creations of one apply follow each
        # other in the inbox and ride in one message.
        assert kinds.count(StoreChanged) <= 41
