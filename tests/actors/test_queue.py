"""The scheduling queue as a data structure: exact times, no clock of its own."""
from __future__ import annotations

import pytest

from actors.queue.scheduling_queue import SchedulingQueue, backoff_duration_ns
from framework.api.objects import Node, Pod
from framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, Code, QueuedPodInfo, QueueingHint, Status
from framework.plugins.queuesort.priority_sort import PrioritySort
from framework.plugins.schedulinggates.scheduling_gates import SchedulingGates

NODE_ADD = ClusterEvent("Node", ActionType.Add, "NodeAdd")
POD_DELETE = ClusterEvent("AssignedPod", ActionType.Delete, "AssignedPodDelete")
PVC_ADD = ClusterEvent("PersistentVolumeClaim", ActionType.Add, "PersistentVolumeClaimAdd")


def pod(name: str, priority: int = 0, gates: list[str] | None = None) -> Pod:
    spec: dict = {"priority": priority}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return Pod({"kind": "Pod", "metadata": {"name": name, "uid": name}, "spec": spec})


def node(name: str) -> Node:
    return Node({"kind": "Node", "metadata": {"name": name}})


def new_queue(hints: dict | None = None, **kw) -> SchedulingQueue:
    gates = SchedulingGates()

    def pre_enqueue(p: Pod) -> Status:
        st = gates.pre_enqueue(p)
        if st is None:
            return Status()
        st.plugin = gates.name
        return st

    hint_map = hints if hints is not None else {
        "NodeResourcesFit": [ClusterEventWithHint(ClusterEvent("Node", ActionType.Add))],
        "VolumeBinding": [ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.Add))],
        "SchedulingGates": gates.events_to_register(),
    }
    return SchedulingQueue(less=PrioritySort().less, pre_enqueue=pre_enqueue, hints_for=lambda p: hint_map,
                           hint_maps=[hint_map], **kw)


def fail(q: SchedulingQueue, now: float, *plugins: str) -> str:
    """Pop the head and report it rejected by `plugins` (none: an Error)."""
    qpi = q.pop()
    assert qpi is not None
    qpi.unschedulable_plugins = set(plugins)
    return q.add_unschedulable_if_not_present(qpi, now)


@pytest.mark.parametrize(
    ("attempts", "seconds"),
    [(0, 0), (1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (6, 10), (7, 10)],
    ids=lambda v: str(v),
)
def test_backoff_doubles_from_initial_to_max_by_attempts(attempts: int, seconds: int) -> None:
    assert backoff_duration_ns(attempts, 10**9, 10 * 10**9) == seconds * 10**9


def test_backoff_does_not_overflow_with_many_attempts() -> None:
    assert backoff_duration_ns(16, 1, 32) == 32
    assert backoff_duration_ns(64, 1, (1 << 63) - 1) == (1 << 63) - 1


def test_a_pod_that_errored_waits_exactly_its_backoff_for_each_attempt() -> None:
    q = new_queue(pop_from_backoff_q=False)
    q.add(pod("p"), 0.0)
    now = 0.0
    waited = []
    for _ in range(7):
        assert fail(q, now) == "backoff"
        expiry = q.next_backoff_expiry()
        assert expiry is not None
        assert q.flush_backoff_completed(expiry - 1e-6) == 0
        assert q.flush_backoff_completed(expiry) == 1
        waited.append(round(expiry - now, 6))
        now = expiry
    assert waited == [1, 2, 4, 8, 10, 10, 10]


def test_backoff_respects_configured_initial_and_max() -> None:
    q = new_queue(initial_backoff_seconds=2, max_backoff_seconds=5, pop_from_backoff_q=False)
    q.add(pod("p"), 0.0)
    now, waited = 0.0, []
    for _ in range(3):
        fail(q, now)
        expiry = q.next_backoff_expiry()
        q.flush_backoff_completed(expiry)
        waited.append(round(expiry - now, 6))
        now = expiry
    assert waited == [2, 4, 5]


def test_active_queue_orders_by_priority_then_by_time_added() -> None:
    q = new_queue()
    q.add(pod("low-early", 0), 0.0)
    q.add(pod("high", 10), 1.0)
    q.add(pod("low-late", 0), 2.0)
    q.add(pod("mid", 5), 3.0)
    order = [q.pop().pod.name for _ in range(4)]
    assert order == ["high", "mid", "low-early", "low-late"]


def test_unschedulable_pod_moves_only_on_events_its_rejecting_plugins_registered() -> None:
    q = new_queue()
    q.add(pod("p"), 0.0)
    assert fail(q, 0.0, "NodeResourcesFit") == "unschedulable"
    assert q.move_all_to_active_or_backoff(PVC_ADD, None, None, 5.0) == 0
    assert q.move_all_to_active_or_backoff(POD_DELETE, None, None, 5.0) == 0
    assert q.where("default/p") == "unschedulable"
    assert q.move_all_to_active_or_backoff(NODE_ADD, None, node("n"), 5.0) == 1
    assert q.where("default/p") == "active"  # backoff (1 s) already over at t=5


def test_moved_pod_still_backing_off_goes_to_backoff_queue() -> None:
    q = new_queue()
    q.add(pod("p"), 0.0)
    fail(q, 0.0, "VolumeBinding")
    assert q.move_all_to_active_or_backoff(PVC_ADD, None, None, 0.5) == 1
    assert q.where("default/p") == "backoff"
    assert q.next_backoff_expiry() == pytest.approx(1.0)


def test_queueing_hint_returning_skip_keeps_the_pod_unschedulable() -> None:
    calls = []

    def hint(p, old, new):  # noqa: ANN001, ANN202
        calls.append(new.name)
        return QueueingHint.Queue if new.name == "big" else QueueingHint.QueueSkip

    q = new_queue({"NodeResourcesFit": [ClusterEventWithHint(ClusterEvent("Node", ActionType.Add), hint)]})
    q.add(pod("p"), 0.0)
    fail(q, 0.0, "NodeResourcesFit")
    assert q.move_all_to_active_or_backoff(NODE_ADD, None, node("small"), 3.0) == 0
    assert q.move_all_to_active_or_backoff(NODE_ADD, None, node("big"), 3.0) == 1
    assert calls == ["small", "big"]


def test_event_while_pod_in_flight_is_replayed_when_it_fails() -> None:
    q = new_queue()
    q.add(pod("p"), 0.0)
    qpi = q.pop()
    q.move_all_to_active_or_backoff(NODE_ADD, None, node("n"), 0.1)
    qpi.unschedulable_plugins = {"NodeResourcesFit"}
    assert q.add_unschedulable_if_not_present(qpi, 0.2) == "backoff"


def test_unschedulable_pods_leave_the_pool_after_five_minutes() -> None:
    q = new_queue()
    q.add(pod("p"), 0.0)
    fail(q, 10.0, "NodeResourcesFit")
    assert q.next_leftover_time() == pytest.approx(310.0)
    assert q.flush_unschedulable_leftover(310.0) == 0
    assert q.flush_unschedulable_leftover(310.001) == 1
    assert q.where("default/p") == "active"


def test_gated_pod_stays_out_of_active_queue_until_its_gates_are_removed() -> None:
    q = new_queue()
    gated = pod("g", gates=["example.com/wait"])
    q.add(gated, 0.0)
    assert q.where("default/g") == "gated"
    assert q.pop() is None
    assert q.move_all_to_active_or_backoff(NODE_ADD, None, node("n"), 1.0) == 0
    assert q.flush_unschedulable_leftover(1000.0) == 0
    q.update(gated, pod("g"), 2.0)
    assert q.where("default/g") == "active"
    assert q.pending_counts()["gated"] == 0


def test_activate_moves_pods_from_backoff_and_unschedulable_to_active() -> None:
    q = new_queue()
    q.add(pod("a"), 0.0)
    q.add(pod("b"), 0.0)
    fail(q, 0.0)
    fail(q, 0.0, "NodeResourcesFit")
    assert q.pending_counts() == {"active": 0, "backoff": 1, "unschedulable": 1, "gated": 0, "inFlight": 0}
    q.activate([pod("a"), pod("b")], 0.0)
    assert q.pending_counts()["active"] == 2


def test_pop_takes_from_backoff_queue_when_active_queue_is_empty() -> None:
    q = new_queue()
    q.add(pod("p"), 0.0)
    fail(q, 0.0, "VolumeBinding")
    q.move_all_to_active_or_backoff(PVC_ADD, None, None, 0.1)
    assert q.where("default/p") == "backoff"
    assert q.pop().pod.name == "p"


def test_errored_pods_are_not_popped_before_their_backoff_ends() -> None:
    q = new_queue()
    q.add(pod("p"), 0.0)
    fail(q, 0.0)
    assert q.pop() is None


def test_deleted_pod_leaves_every_sub_queue() -> None:
    q = new_queue()
    p = pod("p")
    q.add(p, 0.0)
    q.delete(p)
    assert q.get("default/p") is None


def test_pre_enqueue_rejection_is_recorded_with_its_plugin() -> None:
    q = new_queue()
    q.add(pod("g", gates=["x"]), 0.0)
    qpi = q.get("default/g")
    assert qpi is not None and qpi.gated and qpi.gating_plugin == "SchedulingGates"


def test_an_update_to_a_pod_in_flight_is_replayed_when_its_attempt_fails() -> None:
    def hint(p, old, new):  # noqa: ANN001, ANN202
        return QueueingHint.Queue if new.labels.get("fixed") else QueueingHint.QueueSkip

    q = new_queue({"Custom": [ClusterEventWithHint(ClusterEvent("Pod", ActionType.Update), hint)]})
    original = pod("p")
    q.add(original, 0.0)
    qpi = q.pop()
    fixed = Pod({**original.raw, "metadata": {**original.raw["metadata"], "labels": {"fixed": "yes"}}})
    q.update(original, fixed, 0.5)
    qpi.unschedulable_plugins = {"Custom"}
    assert q.add_unschedulable_if_not_present(qpi, 0.6) == "backoff"


def test_active_q_is_reordered_when_the_queue_sort_says_its_order_changed():
    # A QueueSort whose order can change while pods wait (Coscheduling after a
    # group fails) bumps a generation; the heap must follow the new order.
    rank = {f"p{i}": i for i in range(8)}
    generation = [0]
    q = SchedulingQueue(less=lambda a, b: rank[a.pod.name] < rank[b.pod.name],
                        sort_generation=lambda: generation[0])
    for i in range(8):
        q.add(pod(f"p{i}"), now=0)
    assert q.pop().pod.name == "p0"
    for name in rank:
        rank[name] = -rank[name]  # reverse the order
    generation[0] += 1
    assert [q.pop().pod.name for _ in range(7)] == ["p7", "p6", "p5", "p4", "p3", "p2", "p1"]



def test_a_pod_is_still_backing_off_at_its_expiry_instant_and_leaves_one_ns_later() -> None:
    q = new_queue(pop_from_backoff_q=False)
    q.add(pod("p"), 0.0)
    popped = q.pop()
    assert popped is not None
    assert q.add_unschedulable_if_not_present(popped, 0.0) == "backoff"  # an error: 1 s backoff
    assert q.flush_backoff_completed(1.0) == 0  # exactly t + 1 s: still backing off
    assert q.next_backoff_expiry_ns() == 10**9 + 1
    assert q.flush_backoff_completed(1.000000001) == 1


def test_a_pod_never_attempted_does_not_back_off() -> None:
    q = new_queue()
    fresh = QueuedPodInfo(pod=pod("p"), attempts=0)  # requeued after an error, never popped
    assert q.add_unschedulable_if_not_present(fresh, 5.0) == "active"


SERVICE_ADD = ClusterEvent("Service", ActionType.Add, "ServiceAdd")


def test_an_event_no_plugin_registered_for_is_not_recorded_for_in_flight_pods() -> None:
    q = new_queue()
    q.add(pod("p"), 0.0)
    assert q.pop() is not None
    q.move_all_to_active_or_backoff(SERVICE_ADD, None, None, 0.1)
    assert q.recorded_events() == []
    q.move_all_to_active_or_backoff(NODE_ADD, None, node("n"), 0.2)  # NodeResourcesFit registered it
    assert [e for _, e in q.recorded_events()] == [NODE_ADD]


def test_an_event_no_plugin_registered_for_moves_no_pod() -> None:
    """A pod gated by a PreEnqueue plugin (no rejector plugins recorded) would take
    any event as a reason to try PreEnqueue again; one nobody registered for is not."""
    admit = {"now": False}

    def pre_enqueue(p: Pod) -> Status:
        return Status() if admit["now"] else Status(Code.UnschedulableAndUnresolvable, "not yet", plugin="Gate")

    hints = {"Gate": [ClusterEventWithHint(ClusterEvent("Node", ActionType.Add))]}
    q = SchedulingQueue(less=PrioritySort().less, pre_enqueue=pre_enqueue, hints_for=lambda p: hints,
                        hint_maps=[hints])
    q.add(pod("p"), 0.0)
    assert q.where("default/p") == "gated"
    admit["now"] = True
    assert q.move_all_to_active_or_backoff(SERVICE_ADD, None, None, 1.0) == 0
    assert q.where("default/p") == "gated"
    assert q.move_all_to_active_or_backoff(NODE_ADD, None, node("n"), 2.0) == 1


def test_a_gated_pod_moves_only_on_events_its_gating_plugin_registered_for() -> None:
    """upstream's runPreEnqueuePlugins records the gating plugin as a rejector, so only
    that plugin's events (and its hints) can move the pod, not any other plugin's."""
    admit = {"now": False}

    def pre_enqueue(p: Pod) -> Status:
        return Status() if admit["now"] else Status(Code.UnschedulableAndUnresolvable, "not yet", plugin="Gate")

    hints = {"NodeResourcesFit": [ClusterEventWithHint(ClusterEvent("Node", ActionType.Add))],
             "Gate": [ClusterEventWithHint(ClusterEvent("Service", ActionType.Add))]}
    q = SchedulingQueue(less=PrioritySort().less, pre_enqueue=pre_enqueue, hints_for=lambda p: hints,
                        hint_maps=[hints])
    q.add(pod("p"), 0.0)
    admit["now"] = True
    assert q.move_all_to_active_or_backoff(NODE_ADD, None, node("n"), 1.0) == 0
    assert q.where("default/p") == "gated"
    assert q.move_all_to_active_or_backoff(SERVICE_ADD, None, None, 2.0) == 1
def _held_queue(held: set[str]) -> SchedulingQueue:
    """A queue whose PreEnqueue holds the pods named in `held` (as DefaultPreemption
    holds a preemptor while its preemption runs)."""
    def pre_enqueue(p: Pod) -> Status:
        if p.name in held:
            return Status(Code.UnschedulableAndUnresolvable, "waiting", plugin="DefaultPreemption")
        return Status()

    hints = {"VolumeBinding": [ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.Add))]}
    return SchedulingQueue(less=PrioritySort().less, pre_enqueue=pre_enqueue, hints_for=lambda p: hints,
                           hint_maps=[hints])


def test_pre_enqueue_runs_on_the_way_into_backoff_since_a_pod_may_be_popped_from_there() -> None:
    held = set()
    q = _held_queue(held)
    q.add(pod("p"), 0.0)
    fail(q, 0.0, "VolumeBinding")
    held.add("p")
    q.move_all_to_active_or_backoff(PVC_ADD, None, None, 0.5)  # still backing off
    assert q.where("default/p") == "gated" and q.pop() is None


def test_regate_lets_a_pod_go_once_the_gate_lifts_and_leaves_others_alone() -> None:
    held = {"p"}
    q = _held_queue(held)
    q.add(pod("p"), 0.0)
    assert q.where("default/p") == "gated"
    q.regate("default/p", "DefaultPreemption", 1.0)
    assert q.where("default/p") == "gated"  # the gate still holds
    held.clear()
    q.regate("default/p", "SchedulingGates", 1.0)
    assert q.where("default/p") == "gated"  # another plugin's gate: left alone
    q.regate("default/p", "DefaultPreemption", 1.0)
    assert q.where("default/p") == "active"
