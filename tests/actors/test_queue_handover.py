"""A QueuedPodInfo crosses the queue's boundary as a copy: what the scheduler
does to the pod it popped never changes the queue's own record."""
from __future__ import annotations

import dataclasses

from actors.clock import FakeClock
from actors.queue.actor import Pop, QueueActor, Requeue, Unpop
from actors.queue.handover import handed_over
from actors.base import new_reply
from framework.interface import QueuedPodInfo
from tests.actors.test_queue import new_queue, pod


def test_handed_over_copies_every_field_and_shares_no_set() -> None:
    values = {"pod": pod("a"), "timestamp": 3, "initial_attempt_timestamp": 2, "attempts": 4,
              "unschedulable_plugins": {"X"}, "pending_plugins": {"Y"}, "gated": True,
              "gating_plugin": "G", "backoff_expiration": 9, "popped_cycle": 7, "tie": 5}
    assert set(values) == {f.name for f in dataclasses.fields(QueuedPodInfo)}  # a new field must be copied too
    original = QueuedPodInfo(**values)
    copy = handed_over(original)
    assert copy is not original
    assert {k: getattr(copy, k) for k in values} == values
    assert copy.unschedulable_plugins is not original.unschedulable_plugins
    assert copy.pending_plugins is not original.pending_plugins


def test_the_scheduler_changing_its_popped_copy_leaves_the_queue_record_unchanged() -> None:
    q = new_queue()
    q.add(pod("a"), 0.0)
    popped = q.pop()
    assert popped is not None
    record = q.popped(popped.pod.key)
    assert record is not None and record is not popped
    before = handed_over(record)
    # What the scheduling cycle does to the pod it attempts.
    popped.pod = pod("a", priority=9)
    popped.unschedulable_plugins.add("NodeResourcesFit")
    popped.pending_plugins.add("VolumeBinding")
    popped.attempts += 5
    assert _fields(record) == _fields(before)
    assert record.pod.priority == 0


def _fields(qpi: QueuedPodInfo) -> dict:
    return {f.name: getattr(qpi, f.name) for f in dataclasses.fields(QueuedPodInfo)}


def test_unpop_puts_back_the_queue_record_not_the_scheduler_copy() -> None:
    q = new_queue()
    q.add(pod("a"), 0.0)
    popped = q.pop()
    assert popped is not None
    popped.pod = pod("a", priority=9)
    popped.unschedulable_plugins.add("NodeResourcesFit")
    q.unpop(popped.pod.key)
    again = q.pop()
    assert again is not None
    assert again.pod.priority == 0 and again.attempts == 1 and again.unschedulable_plugins == set()


async def test_requeue_message_carries_a_copy_the_sender_cannot_change_afterwards() -> None:
    clock = FakeClock()
    actor = QueueActor(new_queue(), clock)
    actor.queue.add(pod("a"), 0.0)
    reply = new_reply()
    await actor.handle(Pop(reply=reply))
    mine = reply.result()
    mine.unschedulable_plugins = {"NodeResourcesFit"}
    sent = handed_over(mine)
    await actor.handle(Requeue(qpi=sent))
    mine.unschedulable_plugins.add("VolumeBinding")  # the scheduler's copy: not the queue's
    assert actor.queue.where("default/a") == "unschedulable"
    assert actor.queue.get("default/a").unschedulable_plugins == {"NodeResourcesFit"}
    await actor.handle(Unpop(pod_key="default/a"))  # no record any more: nothing happens
    assert actor.queue.where("default/a") == "unschedulable"


async def test_the_queue_owns_the_in_flight_preemption_record_and_changes_it_only_by_message() -> None:
    from actors.queue.actor import PreemptionBegun, PreemptionEnded, PreemptionLastVictim

    actor = QueueActor(new_queue(), FakeClock())
    record = actor.preemptions
    gone: dict[tuple[str, str], object] = {}
    victim = pod("v")
    await actor.handle(PreemptionBegun(uid="p"))
    assert "p" in record and record.is_running("p", lambda ns, n: gone.get((ns, n)))
    await actor.handle(PreemptionLastVictim(uid="p", victim=victim))
    gone[(victim.namespace, victim.name)] = victim  # still there: running
    assert record.is_running("p", lambda ns, n: gone.get((ns, n)))
    await actor.handle(PreemptionEnded(uid="p"))
    assert "p" not in record and len(record) == 0
