"""Which events a pending pod's update raises (upstream's PodSchedulingPropertiesChange),
and that the queue offers each to the hints of the plugins that rejected the pod."""
from __future__ import annotations

import pytest

from actors.events import UPDATE_POD_OTHER, event_for, pod_update_actions
from actors.queue.scheduling_queue import SchedulingQueue
from framework.api.objects import Pod
from framework.handle import FrameworkHandle
from framework.interface import ActionType, QueuedPodInfo
from framework.plugins.queuesort.priority_sort import PrioritySort
from framework.plugins.tainttoleration.taint_toleration import TaintToleration


def pod(labels=None, tolerations=None, gates=None, cpu: str | None = None) -> Pod:
    spec: dict = {"containers": [{"name": "c"}]}
    if cpu is not None:
        spec["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    if tolerations:
        spec["tolerations"] = tolerations
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return Pod({"kind": "Pod", "metadata": {"name": "p", "uid": "p", "labels": labels or {}}, "spec": spec})


TOLERATION = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}


@pytest.mark.parametrize("old, new, actions", [
    (pod({"a": "1"}), pod({"a": "2"}), [ActionType.UpdatePodLabel]),
    (pod(cpu="2"), pod(cpu="1"), [ActionType.UpdatePodScaleDown]),
    (pod(cpu="1"), pod(cpu="2"), [UPDATE_POD_OTHER]),
    (pod(gates=["g"]), pod(), [ActionType.UpdatePodSchedulingGatesEliminated]),
    (pod(gates=["g", "h"]), pod(gates=["h"]), [UPDATE_POD_OTHER]),
    (pod(), pod(tolerations=[TOLERATION]), [ActionType.UpdatePodTolerations]),
    (pod({"a": "1"}), pod({"a": "2"}, tolerations=[TOLERATION]),
     [ActionType.UpdatePodLabel, ActionType.UpdatePodTolerations]),
], ids=["labels", "scale-down", "scale-up", "gates-eliminated", "a-gate-left", "toleration-added", "two"])
def test_pod_update_actions_are_upstreams(old, new, actions):
    assert pod_update_actions(old, new) == actions


def _rejected_by_taints(q: SchedulingQueue, p: Pod) -> None:
    q.add(p, 0.0)
    qpi = q.pop()
    assert isinstance(qpi, QueuedPodInfo)
    qpi.unschedulable_plugins = {"TaintToleration"}
    assert q.add_unschedulable_if_not_present(qpi, 0.0) == "unschedulable"


def _queue() -> SchedulingQueue:
    hints = {"TaintToleration": TaintToleration.new(None, FrameworkHandle()).events_to_register()}
    return SchedulingQueue(less=PrioritySort().less, hints_for=lambda p: hints, hint_maps=[hints])


def test_a_label_change_does_not_wake_a_pod_taints_rejected():
    """TaintToleration's hint queues any update of the pod itself: only the
    UpdatePodTolerations event may reach it."""
    q = _queue()
    _rejected_by_taints(q, pod({"a": "1"}))
    q.update(pod({"a": "1"}), pod({"a": "2"}), 5.0)
    assert q.where("default/p") == "unschedulable"


def test_a_new_toleration_wakes_a_pod_taints_rejected():
    q = _queue()
    _rejected_by_taints(q, pod())
    q.update(pod(), pod(tolerations=[TOLERATION]), 5.0)
    assert q.where("default/p") in ("active", "backoff")


def test_a_kinds_add_and_delete_events_are_made_once_and_equal_fresh_ones():
    from framework.api.objects import Node
    from framework.events import ActionType, ClusterEvent

    p = Pod({"metadata": {"name": "p", "namespace": "default"}, "spec": {"nodeName": "n1", "containers": []}})
    q = Pod({"metadata": {"name": "q", "namespace": "default"}, "spec": {"nodeName": "n2", "containers": []}})
    n = Node({"metadata": {"name": "n1"}})
    added = event_for("Pod", "ADDED", None, p)
    assert added == ClusterEvent("AssignedPod", ActionType.Add, "AssignedPodAdd")
    assert event_for("Pod", "ADDED", None, q) is added
    assert event_for("Pod", "MODIFIED", None, q) is added  # no old object: an add
    assert event_for("Pod", "DELETED", p, None) == ClusterEvent("AssignedPod", ActionType.Delete, "AssignedPodDelete")
    assert event_for("Pod", "DELETED", q, None) is event_for("Pod", "DELETED", p, None)
    assert event_for("Node", "ADDED", None, n) == ClusterEvent("Node", ActionType.Add, "NodeAdd")
    assert event_for("Node", "DELETED", n, None) == ClusterEvent("Node", ActionType.Delete, "NodeDelete")
    assert event_for("Service", "ADDED", None, n) == ClusterEvent("Service", ActionType.Add, "ServiceAdd")
