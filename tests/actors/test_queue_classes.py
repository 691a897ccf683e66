"""Equivalence classes in the unschedulable pool (actors/queue/pod_classes.py):
the queue as a data structure, exact times, no clock of its own."""
from __future__ import annotations

from typing import Hashable

from actors.queue.scheduling_queue import SchedulingQueue
from framework.api.objects import Pod
from framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, QueuedPodInfo
from framework.plugins.queuesort.priority_sort import PrioritySort

POD_DELETE = ClusterEvent("AssignedPod", ActionType.Delete, "AssignedPodDelete")
POD_ADD = ClusterEvent("AssignedPod", ActionType.Add, "AssignedPodAdd")
NODE_ADD = ClusterEvent("Node", ActionType.Add, "NodeAdd")


def pod(name: str, cpu: str = "1", priority: int = 0) -> Pod:
    return Pod({"kind": "Pod", "metadata": {"name": name, "uid": name},
                "spec": {"priority": priority, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}})


def class_key(qpi: QueuedPodInfo) -> Hashable | None:
    """Pods alike in their cpu request and priority, rejected by the same plugins."""
    if not qpi.unschedulable_plugins:
        return None
    return (repr(qpi.pod.spec), frozenset(qpi.unschedulable_plugins))


class Hints:
    """A recording hint for NodeResourcesFit (Queue on any pod deletion or node
    add) and for Taints (node add only); pod adds are registered too, to see
    that a monotone event is never offered."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def fit(self, p: Pod, old: object, new: object):  # noqa: ANN201
        from framework.interface import QueueingHint
        self.asked.append(p.name)
        return QueueingHint.Queue

    def map(self) -> dict:
        return {"NodeResourcesFit": [
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.Delete | ActionType.Add), self.fit),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.Add), self.fit)],
            "TaintToleration": [ClusterEventWithHint(ClusterEvent("Node", ActionType.Add))]}


def monotone(qpi: QueuedPodInfo, event: ClusterEvent) -> bool:
    return event.resource == "AssignedPod" and bool(event.action & ActionType.Add) \
        and qpi.unschedulable_plugins <= {"NodeResourcesFit"}


def new_queue(hints: Hints, classes: bool = True) -> SchedulingQueue:
    m = hints.map()
    return SchedulingQueue(less=PrioritySort().less, hints_for=lambda p: m, hint_maps=[m],
                           class_key=class_key if classes else None, monotone=monotone if classes else None)


def park(q: SchedulingQueue, names: list[str], now: float, *plugins: str) -> None:
    """Add the pods and let each fail once, rejected by `plugins`."""
    for n in names:
        q.add(pod(n), now)
    for _ in names:
        qpi = q.pop()
        assert qpi is not None
        qpi.unschedulable_plugins = set(plugins)
        assert q.add_unschedulable_if_not_present(qpi, now) == "unschedulable"


def woken_class(names: list[str]) -> tuple[SchedulingQueue, QueuedPodInfo]:
    """A class of these pods (rejected by Fit) woken by a deletion; its first popped."""
    q = new_queue(Hints())
    park(q, names, 0.0, "NodeResourcesFit")
    q.move_all_to_active_or_backoff(POD_DELETE, pod("gone"), None, 100.0)
    first = q.pop()
    assert first is not None and first.pod.name == names[0]
    return q, first


def test_a_wake_moves_the_first_member_of_a_class_and_the_next_follows_while_each_is_assumed() -> None:
    hints = Hints()
    q = new_queue(hints)
    park(q, ["a", "b", "c"], 0.0, "NodeResourcesFit")
    assert q.move_all_to_active_or_backoff(POD_DELETE, pod("gone"), None, 100.0) == 1
    assert hints.asked == ["a"]  # the class's hint, asked once
    assert [q.where(f"default/{k}") for k in ("a", "b", "c")] == ["active", "unschedulable", "unschedulable"]
    first = q.pop()
    assert first is not None and first.pod.name == "a"
    q.assumed("default/a", 100.0)
    assert q.where("default/b") == "active" and q.where("default/c") == "unschedulable"
    second = q.pop()
    assert second is not None and second.pod.name == "b"
    q.assumed("default/b", 100.0)
    third = q.pop()
    assert third is not None and third.pod.name == "c"
    assert q.classes.counts() == {"wokenPods": 3, "wokenClasses": 1}


def test_a_failure_parks_the_class_and_each_member_counts_it_as_its_own_attempt() -> None:
    q, _ = woken_class(["a", "b", "c"])
    q.assumed("default/a", 100.0)
    b = q.pop()
    assert b is not None and b.pod.name == "b" and b.attempts == 2
    b.unschedulable_plugins = {"NodeResourcesFit"}
    assert q.add_unschedulable_if_not_present(b, 101.0) == "unschedulable"
    assert q.where("default/c") == "unschedulable"  # parked with the class: b failed in the world c would see
    assert q.pop() is None  # upstream's queue would now pop c, and it fails as b did
    # The next wake: b leads (it failed first; upstream retried c after it), c follows
    # with the failure it shares counted.
    q.move_all_to_active_or_backoff(POD_DELETE, pod("gone2"), None, 200.0)
    again = q.pop()
    assert again is not None and again.pod.name == "b" and again.attempts == 3
    q.assumed("default/b", 200.0)
    c = q.pop()
    assert c is not None and c.pod.name == "c"
    assert c.attempts == 3  # its own first attempt, the class's failure at 101 s, this pop


def test_a_member_the_queue_had_not_reached_before_the_next_wake_goes_first_without_the_failure() -> None:
    q, _ = woken_class(["a", "b", "c"])
    q.assumed("default/a", 100.0)
    b = q.pop()
    assert b is not None and b.pod.name == "b"
    b.unschedulable_plugins = {"NodeResourcesFit"}
    q.add_unschedulable_if_not_present(b, 101.0)
    # The wake comes before the next pop: upstream's c still sat in activeQ,
    # queued since 0 s with one attempt, ahead of b (101 s).
    q.move_all_to_active_or_backoff(POD_DELETE, pod("gone2"), None, 200.0)
    c = q.pop()
    assert c is not None and c.pod.name == "c" and c.attempts == 2
    again = q.pop()
    assert again is not None and again.pod.name == "b" and again.attempts == 3


def test_a_follower_goes_where_the_wake_put_it_upstream_not_where_a_move_at_its_turn_would() -> None:
    q = new_queue(Hints())
    park(q, ["a", "b"], 0.0, "NodeResourcesFit")  # both back off until 1 s
    q.move_all_to_active_or_backoff(POD_DELETE, pod("gone"), None, 0.5)
    first = q.pop()  # from backoffQ: activeQ is empty
    assert first is not None and first.pod.name == "a"
    q.assumed("default/a", 2.0)
    # Upstream's wake at 0.5 s put b in backoffQ, and no flush has run since.
    assert q.where("default/b") == "backoff"
    q.flush_backoff_completed(2.0)
    assert q.where("default/b") == "active"


def test_an_event_every_rejector_declares_monotone_does_not_wake_the_class() -> None:
    hints = Hints()
    q = new_queue(hints)
    park(q, ["a", "b"], 0.0, "NodeResourcesFit")
    assert q.move_all_to_active_or_backoff(POD_ADD, None, pod("placed"), 100.0) == 0
    assert hints.asked == [] and q.where("default/a") == "unschedulable"
    # Alone (classes off), the registered hint is asked for every pod, as upstream.
    plain_hints = Hints()
    plain = new_queue(plain_hints, classes=False)
    park(plain, ["a", "b"], 0.0, "NodeResourcesFit")
    assert plain.move_all_to_active_or_backoff(POD_ADD, None, pod("placed"), 100.0) == 2
    assert plain_hints.asked == ["a", "b"]


def test_pods_rejected_by_other_plugins_are_another_class_and_keep_their_turn() -> None:
    hints = Hints()
    q = new_queue(hints)
    park(q, ["a", "b"], 0.0, "NodeResourcesFit")
    park(q, ["x", "y"], 1.0, "NodeResourcesFit", "TaintToleration")
    assert q.move_all_to_active_or_backoff(NODE_ADD, None, None, 100.0) == 2
    popped = [q.pop() for _ in range(2)]
    assert [p.pod.name for p in popped if p is not None] == ["a", "x"]  # one of each class, in queue order


def test_a_member_that_fails_with_other_rejectors_takes_the_members_it_led_along() -> None:
    q, a = woken_class(["a", "b", "c"])
    a.unschedulable_plugins = {"NodeResourcesFit", "TaintToleration"}
    q.add_unschedulable_if_not_present(a, 101.0)
    keys = {q.unschedulable.classes.class_of(f"default/{k}").key for k in ("a", "b", "c")}  # type: ignore[union-attr]
    assert len(keys) == 1
    b = q.unschedulable.get("default/b")
    assert b is not None and b.unschedulable_plugins == {"NodeResourcesFit", "TaintToleration"}


def test_a_deleted_leader_hands_the_wake_to_the_next_member() -> None:
    hints = Hints()
    q = new_queue(hints)
    park(q, ["a", "b"], 0.0, "NodeResourcesFit")
    q.move_all_to_active_or_backoff(POD_DELETE, pod("gone"), None, 100.0)
    q.delete(pod("a"), 100.0)
    assert q.where("default/b") == "active"


def test_a_parked_classs_members_take_their_turn_among_the_pods_of_other_classes() -> None:
    """a1..a3 and a4 are one class, b1 another; upstream retries a3 after a2 fails
    and before b1 (older), a4 after b1 (newer): the next round keeps that order."""
    q = new_queue(Hints())
    for t, (name, cpu) in enumerate([("a1", "1"), ("a2", "1"), ("a3", "1"), ("b1", "2"), ("a4", "1")]):
        q.add(pod(name, cpu=cpu), float(t))
        qpi = q.pop()
        assert qpi is not None
        qpi.unschedulable_plugins = {"NodeResourcesFit"}
        q.add_unschedulable_if_not_present(qpi, float(t))
    q.move_all_to_active_or_backoff(POD_DELETE, pod("gone"), None, 100.0)
    order = []
    for now, outcome in ((100.0, "bind"), (101.0, "fail"), (102.0, "fail")):
        qpi = q.pop()
        assert qpi is not None
        order.append(qpi.pod.name)
        if outcome == "bind":
            q.assumed(qpi.pod.key, now)
        else:
            qpi.unschedulable_plugins = {"NodeResourcesFit"}
            q.add_unschedulable_if_not_present(qpi, now)
    assert order == ["a1", "a2", "b1"] and q.pop() is None
    q.move_all_to_active_or_backoff(POD_DELETE, pod("gone2"), None, 200.0)
    order = []
    while (qpi := q.pop()) is not None:
        order.append(qpi.pod.name)
        q.assumed(qpi.pod.key, 200.0)
    assert order == ["a2", "a3", "b1", "a4"]


def test_pods_with_equal_sort_keys_pop_in_the_order_of_their_ties_then_of_their_pushes() -> None:
    from actors.queue.heap import PodHeap
    heap = PodHeap(PrioritySort().less)
    heap.push(QueuedPodInfo(pod=pod("late"), timestamp=5, tie=9))
    heap.push(QueuedPodInfo(pod=pod("early"), timestamp=5, tie=3))
    heap.push(QueuedPodInfo(pod=pod("plain1"), timestamp=7))
    heap.push(QueuedPodInfo(pod=pod("plain2"), timestamp=7))
    heap.push(QueuedPodInfo(pod=pod("first"), timestamp=4, tie=20))
    assert [heap.pop().pod.name for _ in range(5)] == ["first", "early", "late", "plain1", "plain2"]  # type: ignore[union-attr]
