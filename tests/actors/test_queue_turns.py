"""The queue actor takes a turn of messages: every message queued when it wakes is
applied in order, then the waiting Pop is answered and the pending-pod counts are
published once (a scheduling cycle's Pop with its Assumed, and the bound pod's
DeletePod with its Move, arrive together: one turn)."""
from __future__ import annotations

import asyncio
import random

from actors.base import new_reply
from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.queue.actor import AddPod, Assumed, DeletePod, Done, Pop, QueueActor
from actors.scheduler_messages import Popped
from tests.actors.helpers import node, pod as pending_pod
from tests.actors.test_metrics import RecordingSink
from tests.actors.test_queue import new_queue, pod


async def _one_turn(actor: QueueActor, *msgs: object) -> None:
    """Queue `msgs` while the actor waits, then let it run until its inbox is empty."""
    for msg in msgs:
        actor.tell(msg)  # type: ignore[arg-type]
    while len(actor.inbox) or actor.busy:
        await asyncio.sleep(0)


async def test_a_turn_of_adds_publishes_the_pending_counts_once() -> None:
    sink = RecordingSink()
    actor = QueueActor(new_queue(), FakeClock(0.0), metrics=sink)
    task = asyncio.ensure_future(actor.run())
    await _one_turn(actor, *(AddPod(pod=pod(f"p{i}")) for i in range(5)))
    actor.stop()
    await task
    published = sink.of("set_pending_pods")
    assert published[0] == ({"active": 5, "backoff": 0, "unschedulable": 0, "gated": 0},)
    assert len(published) == 1


async def test_a_pop_is_answered_after_the_rest_of_its_turn_with_the_head_it_left() -> None:
    actor = QueueActor(new_queue(), FakeClock(0.0))
    actor.queue.add(pod("first"), 0.0)
    actor.queue.add(pod("second"), 0.0)
    task = asyncio.ensure_future(actor.run())
    reply = new_reply()
    # the scheduler deleted `first` before asking: the turn removes it, then answers
    await _one_turn(actor, Pop(reply=reply), DeletePod(pod=pod("first")))
    popped = reply.result()
    actor.stop()
    await task
    assert popped.pod.name == "second"
    assert actor.queue.where("default/first") == ""  # in no queue


async def test_a_pod_bound_costs_the_queue_its_addpod_a_pop_carrying_its_assumed_and_its_deletepod() -> None:
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        told: list[object] = []
        put = p.queue.inbox.put
        p.queue.inbox.put = lambda msg: (told.append(msg), put(msg))[1]  # type: ignore[method-assign]
        await p.client.apply([node("n0", cpu="4", memory="8Gi")])
        await p.client.apply([pending_pod(f"p{i}", cpu="100m", memory="64Mi") for i in range(3)])
        await p.run_until_quiescent(10)
        assert all(q.node_name == "n0" for q in p.store.peek_all("Pod"))
    keys = [f"default/p{i}" for i in range(3)]
    # each cycle's Assumed rides on the Pop that follows it, in the order the pods were assumed
    assert [k for m in told if isinstance(m, Pop) for k in m.assumed] == keys
    assert not [m for m in told if isinstance(m, Assumed)]
    # each bound pod's attempt ends by its DeletePod (the store's event of the bind): no Done follows
    assert sorted(m.pod.key for m in told if isinstance(m, DeletePod)) == keys
    assert not [m for m in told if isinstance(m, Done)]


async def test_a_pop_with_a_destination_is_handed_over_in_the_queues_turn_without_a_future() -> None:
    actor = QueueActor(new_queue(), FakeClock(0.0))
    actor.queue.add(pod("first"), 0.0)
    handed: list[object] = []
    actor.tell(Pop(to=handed.append))
    # one turn, nothing else of the loop in between: the answer is there when it ends
    await actor.handle_turn(actor.inbox.get_nowait_all())
    assert [q.pod.name for q in handed] == ["first"]  # type: ignore[attr-defined]
    actor.tell(Pop(to=handed.append))
    await actor.handle_turn(actor.inbox.get_nowait_all())  # activeQ empty: the Pop waits
    assert len(handed) == 1
    actor.stop_popping()  # a waiting Pop is answered None when the queue stops handing out pods
    assert handed[1:] == [None]


async def test_the_scheduler_sees_its_popped_pod_after_the_queues_turn_with_no_loop_turn_between() -> None:
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply([node("n0", cpu="4", memory="8Gi")])
        await p.run_until_quiescent(10)
        queue_turn = p.queue.handle_turn
        seen: list[bool] = []

        async def turn_then_look(msgs: list) -> None:  # type: ignore[type-arg]
            await queue_turn(msgs)
            seen.append(p.scheduler.inbox.holds((Popped,)))  # before any other callback of the loop runs
        p.queue.handle_turn = turn_then_look  # type: ignore[method-assign]
        await p.client.apply([pending_pod("p0", cpu="100m", memory="64Mi")])
        await p.run_until_quiescent(10)
        assert all(q.node_name == "n0" for q in p.store.peek_all("Pod"))
    assert True in seen  # the turn that popped p0 left its Popped in the scheduler's inbox
