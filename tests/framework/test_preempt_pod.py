"""upstream's PreemptPod, the one eviction sequence of both preemption paths:
reject at Permit or condition-then-delete, and the Preempted event last."""
from __future__ import annotations

from framework.api.objects import Pod
from framework.preempt_pod import preempt_pod
from framework.runtime import run_unsuspended


def _pod(name: str, uid: str) -> Pod:
    return Pod({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "uid": uid}, "spec": {}})


class Writes:
    """A cluster of victims answering at once, keeping the order of the writes made."""

    def __init__(self, waiting: set[str] = frozenset(), gone: set[str] = frozenset(),
                 gone_after_condition: set[str] = frozenset()) -> None:
        self.waiting, self.gone, self.gone_after_condition = set(waiting), set(gone), set(gone_after_condition)
        self.log: list[tuple[str, ...]] = []

    async def reject_if_waiting(self, victim: Pod, plugin: str, message: str) -> bool:
        if victim.name in self.waiting:
            self.log.append(("reject", victim.name, plugin, message))
            return True
        return False

    async def add_condition(self, victim: Pod, condition: dict[str, str]) -> bool:
        if victim.name in self.gone:
            return False
        self.log.append(("condition", victim.name, condition["type"], condition["reason"]))
        return True

    async def delete(self, victim: Pod) -> bool:
        if victim.name in self.gone_after_condition:
            return False
        self.log.append(("delete", victim.name))
        return True

    def record_event(self, victim: Pod, reason: str, message: str) -> None:
        self.log.append(("event", victim.name, reason, message))


HIGH = _pod("high", "u-high")


def test_a_victim_gets_the_condition_then_is_deleted_then_the_preempted_event_is_recorded() -> None:
    w = Writes()
    run_unsuspended(preempt_pod(w, _pod("low", "u-low"), HIGH, "n1", "DefaultPreemption"))
    assert w.log == [("condition", "low", "DisruptionTarget", "PreemptionByScheduler"), ("delete", "low"),
                     ("event", "low", "Preempted", "Preempted by pod u-high on node n1")]


def test_a_victim_waiting_at_permit_is_rejected_not_deleted_and_still_gets_the_event() -> None:
    w = Writes(waiting={"low"})
    run_unsuspended(preempt_pod(w, _pod("low", "u-low"), HIGH, "n1", "DefaultPreemption"))
    assert w.log == [("reject", "low", "DefaultPreemption", "preempted"),
                     ("event", "low", "Preempted", "Preempted by pod u-high on node n1")]


def test_a_victim_already_gone_gets_no_delete_and_no_event() -> None:
    w = Writes(gone={"low"})
    run_unsuspended(preempt_pod(w, _pod("low", "u-low"), HIGH, "n1", "DefaultPreemption"))
    assert w.log == []
    w = Writes(gone_after_condition={"low"})
    run_unsuspended(preempt_pod(w, _pod("low", "u-low"), HIGH, "n1", "DefaultPreemption"))
    assert w.log == [("condition", "low", "DisruptionTarget", "PreemptionByScheduler")]
