import pytest

from framework.api.objects import Node, Pod
from framework.cache import NodeInfo
from framework.features import FeatureGates
from framework.handle import FrameworkHandle
from framework.interface import Code, CycleState, QueueingHint, Status
from framework.plugins.nodeunschedulable.node_unschedulable import NodeUnschedulable

REJECTED = Status(Code.UnschedulableAndUnresolvable, "node(s) were unschedulable")
UNSCHEDULABLE_KEY = "node.kubernetes.io/unschedulable"


def _node(unschedulable: bool) -> Node:
    return Node({"metadata": {"name": "n1"}, "spec": {"unschedulable": unschedulable}})


def _pod(*tolerations: dict) -> Pod:
    return Pod({"metadata": {"name": "p"}, "spec": {"containers": [], "tolerations": list(tolerations)}})


def _plugin(comparison_operators: bool = True) -> NodeUnschedulable:
    gates = FeatureGates({"TaintTolerationComparisonOperators": comparison_operators})
    return NodeUnschedulable.new(None, FrameworkHandle(features=gates))


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "expected"),
    [
        (False, [], None),
        (True, [], REJECTED),
        (True, [{"key": UNSCHEDULABLE_KEY, "effect": "NoSchedule"}], None),
        (True, [{"key": UNSCHEDULABLE_KEY, "operator": "Exists"}], None),
        (True, [{"operator": "Exists"}], None),
        (True, [{"key": UNSCHEDULABLE_KEY, "operator": "Exists", "effect": "NoExecute"}], REJECTED),
        (True, [{"key": UNSCHEDULABLE_KEY, "value": "x", "effect": "NoSchedule"}], REJECTED),
        (True, [{"key": "other", "operator": "Exists"}], REJECTED),
    ],
    ids=["schedulable-node", "cordoned-node-rejects", "toleration-key-and-effect", "exists-any-effect",
         "empty-key-exists-tolerates-all", "wrong-effect", "value-must-equal-empty", "other-key"],
)
def test_filter_rejects_cordoned_nodes_unless_tolerated(unschedulable, tolerations, expected):
    status = _plugin().filter(CycleState(), _pod(*tolerations), NodeInfo(_node(unschedulable)))
    assert status == expected


def test_pre_filter_has_nothing_to_check():
    assert _plugin().pre_filter(CycleState(), _pod(), []) == (None, None)


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (None, _node(False), QueueingHint.Queue),
        (None, _node(True), QueueingHint.QueueSkip),
        (_node(True), _node(False), QueueingHint.Queue),
        (_node(False), _node(False), QueueingHint.QueueSkip),
        (_node(False), _node(True), QueueingHint.QueueSkip),
    ],
    ids=["added-schedulable", "added-cordoned", "uncordoned", "unchanged", "cordoned"],
)
def test_node_hint_queues_when_a_schedulable_node_appears(old, new, hint):
    assert _plugin().is_schedulable_after_node_change(_pod(), old, new) == hint


def test_toleration_hint_queues_only_for_the_unschedulable_toleration():
    pl = _plugin()
    tolerating = _pod({"key": UNSCHEDULABLE_KEY, "operator": "Exists"})
    unrelated = _pod({"key": "foo", "operator": "Exists"})
    assert pl.is_schedulable_after_pod_toleration_change(_pod(), _pod(), tolerating) == QueueingHint.Queue
    assert pl.is_schedulable_after_pod_toleration_change(_pod(), _pod(), unrelated) == QueueingHint.QueueSkip
