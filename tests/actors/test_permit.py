"""The waiting room and binding cycles, driven by the fake clock."""
from __future__ import annotations

import pytest

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from framework.interface import Code, Status
from tests.actors.helpers import config, node, pod, recording_registry


async def bound_nodes(p: Pipeline) -> dict[str, str | None]:
    items, _ = await p.client.list("Pod")
    return {i["metadata"]["name"]: (i.get("spec") or {}).get("nodeName") for i in items}


async def test_permit_timeout_unreserves_in_reverse_order_forgets_and_requeues() -> None:
    log: list[str] = []
    clock = FakeClock()
    async with Pipeline(config(), clock=clock, registry=recording_registry(log), record=log.append) as p:
        await p.client.apply([node("n1")])
        await p.client.create(pod("w", labels={"wait": "g"}))
        await p.settle()
        assert log == ["reserve:A", "reserve:B"]
        assert len(p.waiting_room) == 1
        clock.advance(9.999)
        await p.settle()
        assert log == ["reserve:A", "reserve:B"]
        clock.advance(0.001)
        await p.settle()
        assert log == ["reserve:A", "reserve:B", "unreserve:B", "unreserve:A", "forget"]
        assert p.scheduler.cache.pod_count() == 0
        assert p.queue.queue.where("default/w") == "unschedulable"
        events = await p.client.events("Pod", "default/w")
        assert events[0].reason == "FailedScheduling"
        assert events[0].message == "rejected due to timeout after waiting 10s at plugin WaitPermit"
        assert (await bound_nodes(p))["w"] is None


async def test_a_rejected_pod_goes_back_through_backoff_and_waits_again() -> None:
    log: list[str] = []
    clock = FakeClock()
    async with Pipeline(config(), clock=clock, registry=recording_registry(log), record=log.append) as p:
        await p.client.apply([node("n1")])
        await p.client.create(pod("w", labels={"wait": "g", "timeout": "2"}))
        await p.settle()
        clock.advance(2.0)
        await p.settle()
        # Rejected by WaitPermit: unschedulable, retried only on an event or after 5 minutes.
        assert p.queue.queue.where("default/w") == "unschedulable"
        clock.advance(301.0)
        await p.settle()
        assert log.count("reserve:A") == 2
        assert len(p.waiting_room) == 1


async def test_allow_from_another_pods_cycle_releases_the_waiter() -> None:
    log: list[str] = []
    clock = FakeClock()
    async with Pipeline(config(), clock=clock, registry=recording_registry(log), record=log.append) as p:
        await p.client.apply([node("n1")])
        await p.client.create(pod("waiter", labels={"wait": "g"}))
        await p.settle()
        assert (await bound_nodes(p))["waiter"] is None
        await p.client.create(pod("releaser", labels={"release": "g"}))
        await p.settle()
        assert await bound_nodes(p) == {"waiter": "n1", "releaser": "n1"}
        assert "unreserve:A" not in log
        assert len(p.waiting_room) == 0
        assert clock.now() == 0.0


async def test_two_hundred_pods_wait_at_permit_while_other_pods_keep_being_scheduled() -> None:
    log: list[str] = []
    clock = FakeClock()
    async with Pipeline(config(), clock=clock, registry=recording_registry(log)) as p:
        await p.client.apply([node(f"n{i}", cpu="100") for i in range(5)])
        await p.client.apply([pod(f"w{i}", cpu="10m", labels={"wait": "g"}) for i in range(200)])
        await p.client.apply([pod(f"free{i}", cpu="10m") for i in range(50)])
        await p.settle()
        bound = await bound_nodes(p)
        assert len(p.waiting_room) == 200
        assert all(bound[f"free{i}"] for i in range(50))
        assert not any(bound[f"w{i}"] for i in range(200))
        await p.client.create(pod("releaser", cpu="10m", labels={"release": "g"}))
        await p.settle()
        bound = await bound_nodes(p)
        assert all(bound.values())
        assert len(bound) == 251


@pytest.mark.parametrize("timeout, shown", [(1.5, "1.5s"), (90, "1m30s"), (3600, "15m0s")], ids=["fraction", "minutes", "capped"])
async def test_timeout_message_uses_go_duration_and_the_fifteen_minute_cap(timeout: float, shown: str) -> None:
    clock = FakeClock()
    async with Pipeline(config(), clock=clock, registry=recording_registry([])) as p:
        await p.client.apply([node("n1")])
        await p.client.create(pod("w", labels={"wait": "g", "timeout": str(timeout)}))
        await p.settle()
        clock.advance(min(timeout, 900))
        await p.settle()
        events = await p.client.events("Pod", "default/w")
        assert events[0].message == f"rejected due to timeout after waiting {shown} at plugin WaitPermit"


async def test_a_permit_rejection_in_the_scheduling_cycle_reads_as_a_fit_error_over_one_node() -> None:
    log: list[str] = []
    clock = FakeClock()
    async with Pipeline(config(), clock=clock, registry=recording_registry(log), record=log.append) as p:
        await p.client.apply([node("n1")])
        await p.client.create(pod("r", labels={"deny": "yes"}))
        await p.settle()
        events = await p.client.events("Pod", "default/r")
        assert events[0].message == "0/1 nodes are available: 1 denied by test."
        assert log == ["reserve:A", "reserve:B", "unreserve:B", "unreserve:A", "forget"]
        assert p.queue.queue.get("default/r").unschedulable_plugins == {"WaitPermit"}


async def test_requeues_still_in_the_queue_inbox_at_stop_are_not_lost() -> None:
    from actors.queue.actor import AddPod
    from framework.api.objects import Pod

    p = Pipeline(config(), clock=FakeClock(), registry=recording_registry([]))
    await p.start()
    p.queue.tell(AddPod(pod=Pod(pod("late"))))
    await p.stop()
    assert p.queue.queue.where("default/late") == "active"


async def test_a_plugins_allow_reaches_the_waiting_room_as_a_message_and_the_first_decision_wins() -> None:
    import asyncio

    from actors.base import Mailbox, ActorRef, new_reply
    from actors.waiting_room import Decided, Park, PermitSettled, WaitingRoom, list_waiting
    from framework.api.objects import Pod
    from framework.waiting import WaitingPod, WaitingPodsMap

    clock = FakeClock()
    room = WaitingRoom(clock)
    parker: Mailbox = Mailbox("scheduler")
    view = WaitingPodsMap()  # the scheduler's view, as the cycle builds it
    wp = WaitingPod(Pod(pod("w")), "n1", {"P": clock.now() + 10},
                    on_decision=lambda st: room.ref().tell(Decided(uid="w", status=st)))
    decision = new_reply()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(room.run())
        view.add(wp)
        room.ref().tell(Park(pod=wp.pod, node_name="n1", timeouts={"P": 10.0}, decision=decision,
                             reply_to=ActorRef("scheduler", parker)))
        assert [w.pod.name for w in await list_waiting(room.ref())] == ["w"]
        wp.allow("P")  # a plugin, in a later cycle: recorded at once ...
        assert wp.decided is not None and wp.decided.is_success()
        assert not decision.done() and "w" in room  # ... the room learns by message
        wp.reject("P", "too late")  # the first decision wins
        status = await decision
        assert status.is_success() and "w" not in room
        settled = await parker.get()  # the parker hears the room's word, then drops the pod from its view
        assert isinstance(settled, PermitSettled) and settled.uid == "w" and settled.status.is_success()
        assert clock.next_deadline() is None  # the timeout timer is cancelled
        room.inbox.close()


async def test_a_timeout_is_decided_in_the_parkers_view_so_an_allow_given_first_wins() -> None:
    """The room forwards its timeout to the scheduler's view (PermitRejected): the
    decision is taken in the scheduler's loop, ordered with the Allows of the cycle
    that completes a gang, never beside them."""
    import asyncio

    from actors.base import Mailbox, ActorRef, new_reply
    from actors.waiting_room import Decided, Park, PermitRejected, PermitSettled, WaitingRoom, list_waiting
    from framework.api.objects import Pod
    from framework.waiting import WaitingPod

    clock = FakeClock()
    room = WaitingRoom(clock)
    parker: Mailbox = Mailbox("scheduler")
    views = {n: WaitingPod(Pod(pod(n)), "n1", {"P": clock.now() + 10},
                           on_decision=lambda st, n=n: room.ref().tell(Decided(uid=n, status=st)))
             for n in ("late", "timed-out")}
    decisions = {n: new_reply() for n in views}
    async with asyncio.TaskGroup() as tg:
        tg.create_task(room.run())
        for n, wp in views.items():
            room.ref().tell(Park(pod=wp.pod, node_name="n1", timeouts={"P": 10.0}, decision=decisions[n],
                                 reply_to=ActorRef("scheduler", parker)))
        assert len(await list_waiting(room.ref())) == 2  # parked: their timers run
        clock.advance(10.5)
        first, second = await parker.get(), await parker.get()
        assert {type(first), type(second)} == {PermitRejected} and not any(d.done() for d in decisions.values())
        views["late"].allow("P")  # the scheduler's cycle allowed it before it read the rejection ...
        for msg in (first, second):  # ... which it then applies to its view, in order
            views[msg.uid].reject(msg.plugin, msg.message)
        late, timed_out = await decisions["late"], await decisions["timed-out"]
        assert late.is_success()
        assert timed_out.code == Code.Unschedulable and timed_out.plugin == "P"
        assert "rejected due to timeout after waiting 10s" in timed_out.message()
        settled = [await parker.get(), await parker.get()]
        assert all(isinstance(m, PermitSettled) for m in settled)
        assert {m.uid: m.status.is_success() for m in settled} == {"late": True, "timed-out": False}
        room.inbox.close()


async def test_the_room_never_rewrites_a_parked_pods_deadlines_and_the_view_cannot_either() -> None:
    import asyncio

    from actors.base import new_reply
    from actors.waiting_room import Park, WaitingRoom, list_waiting
    from framework.api.objects import Pod
    from framework.waiting import WaitingPod

    clock = FakeClock()
    room = WaitingRoom(clock)
    wp = WaitingPod(Pod(pod("w")), "n1", {"P": 99.0})
    with pytest.raises(TypeError):
        wp.deadlines["P"] = 1.0  # type: ignore[index]
    async with asyncio.TaskGroup() as tg:
        tg.create_task(room.run())
        start = clock.now()
        room.ref().tell(Park(pod=wp.pod, node_name="n1", timeouts={"P": 10.0}, decision=new_reply()))
        first = await list_waiting(room.ref())
        clock.advance(3)
        again = await list_waiting(room.ref())
        assert [w.deadline - start for w in first] == [10.0] == [w.deadline - start for w in again]
        assert wp.deadlines == {"P": 99.0}  # the room keeps its own record; the view's is untouched
        room.inbox.close()


async def test_others_learn_who_waits_by_asking_the_room_and_see_each_pods_earliest_deadline() -> None:
    import asyncio

    from actors.base import new_reply
    from actors.waiting_room import Decided, Park, WaitingRoom, list_waiting
    from framework.api.objects import Pod

    clock = FakeClock()
    room = WaitingRoom(clock)
    a, b = Pod(pod("a")), Pod(pod("b"))
    async with asyncio.TaskGroup() as tg:
        tg.create_task(room.run())
        for p, node, timeouts in ((a, "n1", {"P": 30.0, "Q": 10.0}), (b, "n2", {"P": 20.0})):
            room.ref().tell(Park(pod=p, node_name=node, timeouts=timeouts, decision=new_reply()))
        start = clock.now()
        seen = await list_waiting(room.ref())
        assert sorted((w.pod.name, w.node_name, w.deadline - start) for w in seen) == [("a", "n1", 10.0), ("b", "n2", 20.0)]
        room.ref().tell(Decided(uid=b.uid, status=Status()))
        assert [w.pod.name for w in await list_waiting(room.ref())] == ["a"]  # a decided pod no longer waits
        room.inbox.close()
    assert await list_waiting(room.ref()) == ()  # a stopped room has nobody waiting


async def test_reject_if_waiting_answers_whether_the_room_held_the_pod() -> None:
    import asyncio

    from actors.base import new_reply
    from actors.waiting_room import Park, WaitingRoom, reject_if_waiting
    from framework.api.objects import Pod

    room = WaitingRoom(FakeClock())
    decision = new_reply()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(room.run())
        room.ref().tell(Park(pod=Pod(pod("v")), node_name="n1", timeouts={"P": 10.0}, decision=decision))
        assert await reject_if_waiting(room.ref(), "v", "DefaultPreemption", "preempted") is True
        status = await decision
        assert status.code == Code.Unschedulable and status.message() == "preempted"
        assert await reject_if_waiting(room.ref(), "v", "DefaultPreemption", "preempted") is False
        room.inbox.close()


async def test_an_ask_still_queued_when_the_room_stops_is_answered_not_left_waiting() -> None:
    import asyncio

    from actors.waiting_room import WaitingRoom, list_waiting

    room = WaitingRoom(FakeClock())  # not running: the ask stays queued
    asking = asyncio.ensure_future(list_waiting(room.ref()))
    await asyncio.sleep(0)  # the ask is posted
    room.stop()
    assert await asyncio.wait_for(asking, timeout=5) == ()  # a bound, not a timing claim
