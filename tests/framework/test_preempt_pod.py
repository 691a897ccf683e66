"""upstream's PreemptPod for a group of victims evicted at once, the one eviction
sequence of both preemption paths: reject at Permit, or condition, delete and the
Preempted event, the group's evictions in one write (the owner's; a victim gone at
either step is the owner's to skip: tests/actors/test_store_evict_pods.py)."""
from __future__ import annotations

from typing import Sequence

from framework.api.objects import Pod
from framework.preempt_pod import preempt_pods
from framework.runtime import run_unsuspended


def _pod(name: str, uid: str) -> Pod:
    return Pod({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "uid": uid}, "spec": {}})


class Writes:
    """Victims answering at once, keeping the order of the calls made."""

    def __init__(self, waiting: set[str] = frozenset()) -> None:
        self.waiting = set(waiting)
        self.log: list[tuple] = []

    async def reject_if_waiting(self, victims: Sequence[Pod], plugin: str, message: str) -> frozenset[str]:
        self.log.append(("ask-permit", tuple(v.name for v in victims), plugin, message))
        return frozenset(v.uid for v in victims if v.name in self.waiting)

    async def evict(self, victims: Sequence[Pod], condition: dict[str, str], reason: str, message: str) -> None:
        self.log.append(("evict", tuple(v.name for v in victims), condition["type"], condition["reason"],
                         reason, message))

    def record_event(self, victim: Pod, reason: str, message: str) -> None:
        self.log.append(("event", victim.name, reason, message))


HIGH = _pod("high", "u-high")
EVENT = "Preempted by pod u-high on node n1"


def test_a_group_is_asked_about_permit_once_and_evicted_in_one_write_in_its_order() -> None:
    w = Writes()
    victims = (_pod("a", "u-a"), _pod("b", "u-b"), _pod("c", "u-c"))
    run_unsuspended(preempt_pods(w, victims, HIGH, "n1", "DefaultPreemption"))
    assert w.log == [("ask-permit", ("a", "b", "c"), "DefaultPreemption", "preempted"),
                     ("evict", ("a", "b", "c"), "DisruptionTarget", "PreemptionByScheduler", "Preempted", EVENT)]


def test_a_victim_waiting_at_permit_is_rejected_not_evicted_and_still_gets_the_event() -> None:
    w = Writes(waiting={"b"})
    victims = (_pod("a", "u-a"), _pod("b", "u-b"))
    run_unsuspended(preempt_pods(w, victims, HIGH, "n1", "DefaultPreemption"))
    assert w.log == [("ask-permit", ("a", "b"), "DefaultPreemption", "preempted"),
                     ("event", "b", "Preempted", EVENT),
                     ("evict", ("a",), "DisruptionTarget", "PreemptionByScheduler", "Preempted", EVENT)]


def test_a_group_all_waiting_at_permit_makes_no_write() -> None:
    w = Writes(waiting={"a"})
    run_unsuspended(preempt_pods(w, (_pod("a", "u-a"),), HIGH, "n1", "DefaultPreemption"))
    assert w.log == [("ask-permit", ("a",), "DefaultPreemption", "preempted"), ("event", "a", "Preempted", EVENT)]
