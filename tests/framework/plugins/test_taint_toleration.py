import pytest

from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.features import FeatureGates
from framework.handle import FrameworkHandle
from framework.interface import ActionType, Code, CycleState, NodeScore, QueueingHint, Status
from framework.plugins.tainttoleration.taint_toleration import TaintToleration

UNTOLERATED = Status(Code.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)")


def _taint(spec: str) -> dict:
    """"key=value:Effect"."""
    kv, effect = spec.rsplit(":", 1)
    key, _, value = kv.partition("=")
    return {"key": key, "value": value, "effect": effect}


def _node(name: str, *taints: str) -> Node:
    return Node({"metadata": {"name": name}, "spec": {"taints": [_taint(t) for t in taints]}})


def _pod(*tolerations: dict) -> Pod:
    return Pod({"metadata": {"name": "p"}, "spec": {"containers": [], "tolerations": list(tolerations)}})


def _plugin(comparison_operators: bool = True) -> TaintToleration:
    gates = FeatureGates({"TaintTolerationComparisonOperators": comparison_operators})
    return TaintToleration.new(None, FrameworkHandle(features=gates))


def _filter(pod: Pod, node: Node, comparison_operators: bool = True) -> Status | None:
    snap = Snapshot.build([node], [])
    return _plugin(comparison_operators).filter(CycleState(), pod, snap.get(node.name))


SLA = "node.kubernetes.io/sla"


@pytest.mark.parametrize(
    ("taint", "toleration", "gate", "expected"),
    [
        (f"{SLA}=950:NoSchedule", {"key": SLA, "operator": "Gt", "value": "750"}, True, None),
        (f"{SLA}=950:NoSchedule", {"key": SLA, "operator": "Gt", "value": "750"}, False, UNTOLERATED),
        (f"{SLA}=750:NoSchedule", {"key": SLA, "operator": "Gt", "value": "750"}, True, UNTOLERATED),
        (f"{SLA}=500:NoSchedule", {"key": SLA, "operator": "Lt", "value": "750"}, True, None),
        (f"{SLA}=-5:NoSchedule", {"key": SLA, "operator": "Lt", "value": "0"}, True, None),
        (f"{SLA}=950:NoSchedule", {"key": SLA, "operator": "Lt", "value": "750"}, True, UNTOLERATED),
        (f"{SLA}=0950:NoSchedule", {"key": SLA, "operator": "Gt", "value": "750"}, True, UNTOLERATED),
        (f"{SLA}=950:NoSchedule", {"key": SLA, "operator": "Gt", "value": "+750"}, True, UNTOLERATED),
        (f"{SLA}=high:NoSchedule", {"key": SLA, "operator": "Gt", "value": "750"}, True, UNTOLERATED),
        ("a=b:NoSchedule", {"operator": "Exists"}, True, None),
        ("a=b:NoExecute", {"key": "a", "operator": "Exists"}, True, None),
        ("a=b:NoExecute", {"key": "a", "value": "b"}, True, None),
        ("a=b:NoExecute", {"key": "a", "value": "b", "effect": "NoSchedule"}, True, UNTOLERATED),
        ("a=b:PreferNoSchedule", {"key": "other", "operator": "Exists"}, True, None),
    ],
    ids=["gt-tolerates-higher", "gt-ignored-when-gate-off", "gt-is-strict", "lt-tolerates-lower",
         "lt-negative", "lt-rejects-higher", "leading-zero-taint-value-not-a-number", "plus-sign-not-a-number",
         "non-numeric-taint-value", "empty-key-exists-tolerates-everything", "empty-effect-matches-noexecute",
         "empty-operator-is-equal", "noexecute-needs-its-effect", "prefer-no-schedule-never-filters"],
)
def test_filter_rejects_untolerated_blocking_taints(taint, toleration, gate, expected):
    assert _filter(_pod(toleration), _node("n1", taint), gate) == expected


def test_every_blocking_taint_must_be_tolerated():
    pod = _pod({"key": "a", "operator": "Exists", "effect": "NoSchedule"})
    assert _filter(pod, _node("n1", "a=1:NoSchedule", "b=1:NoExecute")) == UNTOLERATED
    assert _filter(pod, _node("n1", "a=1:NoSchedule", "b=1:PreferNoSchedule")) is None


def _scores(pod: Pod, nodes: list[Node], gate: bool = True) -> dict[str, int]:
    snap = Snapshot.build(nodes, [])
    pl = _plugin(gate)
    state = CycleState()
    assert pl.pre_score(state, pod, snap.list()) is None
    scores = [NodeScore(ni.name, pl.score(state, pod, ni)[0]) for ni in snap.list()]
    pl.score_extensions().normalize_score(state, pod, scores)
    return {s.name: s.score for s in scores}


def test_score_falls_with_the_count_of_intolerable_prefer_no_schedule_taints():
    nodes = [_node("a"), _node("b", "x=1:PreferNoSchedule"), _node("c", "x=1:PreferNoSchedule", "y=1:PreferNoSchedule"),
             _node("d", "z=1:NoSchedule")]
    assert _scores(_pod(), nodes) == {"a": 100, "b": 50, "c": 0, "d": 100}


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"key": "x", "operator": "Exists"}, {"a": 100, "b": 100}),
        ({"key": "x", "operator": "Exists", "effect": "PreferNoSchedule"}, {"a": 100, "b": 100}),
        ({"key": "x", "operator": "Exists", "effect": "NoSchedule"}, {"a": 100, "b": 0}),
    ],
    ids=["empty-effect-counts", "prefer-effect-counts", "noschedule-effect-does-not"],
)
def test_only_tolerations_that_can_match_prefer_no_schedule_count(toleration, expected):
    assert _scores(_pod(toleration), [_node("a"), _node("b", "x=1:PreferNoSchedule")]) == expected


def test_score_honours_the_comparison_operator_gate():
    pod = _pod({"key": "x", "operator": "Gt", "value": "1"})
    nodes = [_node("a"), _node("b", "x=5:PreferNoSchedule")]
    assert _scores(pod, nodes, gate=True) == {"a": 100, "b": 100}
    assert _scores(pod, nodes, gate=False) == {"a": 100, "b": 0}


def test_score_without_pre_score_is_an_error():
    snap = Snapshot.build([_node("a")], [])
    _, status = _plugin().score(CycleState(), _pod(), snap.get("a"))
    assert status is not None and status.code == Code.Error


def test_registers_node_taint_and_toleration_events():
    events = [(e.event.resource, e.event.action) for e in _plugin().events_to_register()]
    assert events == [("Node", ActionType.Add | ActionType.UpdateNodeTaint),
                      ("Pod", ActionType.UpdatePodTolerations)]


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (None, _node("n"), QueueingHint.Queue),
        (None, _node("n", "a=1:NoSchedule"), QueueingHint.QueueSkip),
        (_node("n", "a=1:NoSchedule"), _node("n"), QueueingHint.Queue),
        (_node("n"), _node("n", "b=1:PreferNoSchedule"), QueueingHint.QueueSkip),
    ],
    ids=["added-untainted", "added-tainted", "taint-removed", "was-already-fine"],
)
def test_node_hint_queues_when_the_node_stops_repelling_the_pod(old, new, hint):
    assert _plugin().is_schedulable_after_node_change(_pod(), old, new) == hint


def test_pod_update_hint_queues_only_the_pod_itself():
    """The queue raises UpdatePodTolerations only when tolerations were added; the
    hint then checks that the update is the pending pod's own (upstream)."""
    pl = _plugin()
    before = _pod()
    after = _pod({"key": "a", "operator": "Exists"})
    assert pl.is_schedulable_after_pod_toleration_change(before, before, after) == QueueingHint.Queue
    other = Pod({**after.raw, "metadata": {"name": "other", "uid": "other"}})
    assert pl.is_schedulable_after_pod_toleration_change(before, other, other) == QueueingHint.QueueSkip
