"""A scheduling.k8s.io gang pops as one unit (actors/queue/group_pop.py): the popped
member brings every queued sibling out of activeQ, backoffQ and the unschedulable
pool, a sibling still refused by PreEnqueue stays, and the queue actor answers Pop
with a QueuedPodGroup and TakeMembers with the late siblings."""
from __future__ import annotations

from typing import Any

from actors.base import new_reply
from actors.clock import FakeClock
from actors.queue.actor import Pop, QueueActor, TakeMembers
from actors.queue.group_pop import QueuedPodGroup, gang_members, with_group
from framework.api.objects import Pod
from framework.api.workload_api import SchedulingPodGroup
from framework.handle import InMemoryObjects
from framework.interface import QueuedPodInfo
from tests.actors.test_queue import new_queue


def member(name: str, group: str = "g", gated: bool = False) -> Pod:
    spec: dict[str, Any] = {"schedulingGroup": {"podGroupName": group}}
    if gated:
        spec["schedulingGates"] = [{"name": "wait"}]
    return Pod({"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec})


def gang(name: str = "g", policy: dict | None = None) -> SchedulingPodGroup:
    return SchedulingPodGroup({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                               "metadata": {"name": name, "namespace": "default"},
                               "spec": {"schedulingPolicy": policy or {"gang": {"minCount": 2}}}})


def test_the_popped_member_brings_its_siblings_from_every_sub_queue_and_leaves_the_rest() -> None:
    pods = [member("a"), member("b"), member("c"), member("d", gated=True), member("x", group="other")]
    objects = InMemoryObjects([*pods, gang(), gang("other")])
    q = new_queue()
    for p in pods:
        q.add(p, 0.0)
    head, b, c = q.pop(), q.pop(), q.pop()
    assert head is not None and b is not None and c is not None
    assert [head.pod.name, b.pod.name, c.pod.name] == ["a", "b", "c"]
    b.unschedulable_plugins = {"NodeResourcesFit"}
    q.add_unschedulable_if_not_present(b, 0.0)
    q.add_unschedulable_if_not_present(c, 0.0)  # no rejector (an error): its backoff heap
    assert (q.where("default/b"), q.where("default/c")) == ("unschedulable", "backoff")
    popped = with_group(q, head, gang_members(objects, {"default-scheduler": True}))
    assert isinstance(popped, QueuedPodGroup)
    assert sorted(popped.keys) == ["default/a", "default/b", "default/c"]
    assert all(q.where(k) == "inFlight" for k in popped.keys)
    assert q.where("default/d") == "gated" and q.where("default/x") == "active"


def test_a_profile_without_gang_scheduling_pops_alone_and_a_basic_group_pops_whole() -> None:
    pods = [member("a"), member("b")]
    for group, profiles, whole in ((gang(policy={"basic": {}}), {"default-scheduler": True}, True),
                                   (gang(), {"default-scheduler": False}, False)):
        q = new_queue()
        for p in pods:
            q.add(p, 0.0)
        head = q.pop()
        assert head is not None
        popped = with_group(q, head, gang_members(InMemoryObjects([*pods, group]), profiles))
        if whole:  # upstream 1.36 runs every PodGroup, basic too, through the group cycle
            assert isinstance(popped, QueuedPodGroup) and sorted(popped.keys) == ["default/a", "default/b"]
        else:
            assert isinstance(popped, QueuedPodInfo) and q.where("default/b") == "active"


async def test_the_actor_answers_pop_with_the_group_and_take_members_with_late_siblings() -> None:
    a, b, c = member("a"), member("b"), member("c")
    objects = InMemoryObjects([a, b, gang()])
    actor = QueueActor(new_queue(), FakeClock(0.0), group_members=gang_members(objects, {"default-scheduler": True}))
    for p in (a, b):
        actor.queue.add(p, 0.0)
    reply = new_reply()
    await actor.handle(Pop(reply=reply))
    group = reply.result()
    assert isinstance(group, QueuedPodGroup) and sorted(group.keys) == ["default/a", "default/b"]
    actor.queue.add(c, 0.0)  # its AddPod came after the Pop's answer
    late = new_reply()
    await actor.handle(TakeMembers(keys=("default/c", "default/missing"), reply=late))
    assert [q.pod.key for q in late.result()] == ["default/c"]
    assert actor.queue.where("default/c") == "inFlight"
