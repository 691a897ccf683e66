"""The queue actor takes a turn of messages: every message queued when it wakes is
applied in order, then the waiting Pop is answered and the pending-pod counts are
published once (a scheduling cycle's Assumed, Pop, DeletePod, Move and Done arrive
together: one turn, not five)."""
from __future__ import annotations

import asyncio

from actors.base import new_reply
from actors.clock import FakeClock
from actors.queue.actor import AddPod, DeletePod, Pop, QueueActor
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
