import pytest

from framework.api.errors import ValidationError
from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.handle import FrameworkHandle
from framework.interface import ActionType, Code, CycleState, NodeScore, PreFilterResult, QueueingHint, Status
from framework.plugins.nodeaffinity.node_affinity import NodeAffinity

POD_MISMATCH = Status(Code.UnschedulableAndUnresolvable, "node(s) didn't match Pod's node affinity/selector")
ENFORCED_MISMATCH = Status(Code.UnschedulableAndUnresolvable, "node(s) didn't match scheduler-enforced node affinity")
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _node(name: str, **labels: str) -> Node:
    return Node({"metadata": {"name": name, "labels": labels}})


def _expr(key: str, op: str, *values: str) -> dict:
    return {"key": key, "operator": op, "values": list(values)}


def _names_in(*names: str) -> dict:
    return {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(names)}]}


def _pod(terms: list[dict] | None = None, preferred: list[dict] | None = None, **spec: object) -> Pod:
    node_affinity: dict = {}
    if terms is not None:
        node_affinity[REQUIRED] = {"nodeSelectorTerms": terms}
    if preferred is not None:
        node_affinity[PREFERRED] = preferred
    return Pod({"metadata": {"name": "p"},
                "spec": {"containers": [], "affinity": {"nodeAffinity": node_affinity}, **spec}})


def _run_filter(pod: Pod, nodes: list[Node], args: dict | None = None):
    snap = Snapshot.build(nodes, [])
    pl = NodeAffinity.new(args, FrameworkHandle(snapshot=snap))
    state = CycleState()
    result, status = pl.pre_filter(state, pod, snap.list())
    return result, status, {ni.name: pl.filter(state, pod, ni) for ni in snap.list()}


# --- PreFilter -----------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("pod", "args", "expected"),
    [
        (_pod(), None, Status(Code.Skip)),
        (_pod(nodeSelector={}), None, None),
        (_pod(), {"addedAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [_expr("a", "Exists")]}]}}}, None),
        (_pod(preferred=[{"weight": 1, "preference": {"matchExpressions": [_expr("a", "Exists")]}}]), None, Status(Code.Skip)),
    ],
    ids=["nothing-to-check", "empty-node-selector-still-checks", "added-affinity-checks", "preferred-only-skips"],
)
def test_pre_filter_skips_only_when_there_is_nothing_to_check(pod, args, expected):
    _, status, _ = _run_filter(pod, [_node("n1")], args)
    assert status == expected


@pytest.mark.parametrize(
    ("terms", "names"),
    [
        ([_names_in("n1")], {"n1"}),
        ([_names_in("n1"), _names_in("n2")], {"n1", "n2"}),
        ([_names_in("n1", "n2")], {"n1", "n2"}),
        ([{"matchFields": _names_in("n1", "n2")["matchFields"] + _names_in("n2", "n3")["matchFields"]}], {"n2"}),
        ([_names_in("n1"), {"matchExpressions": [_expr("a", "Exists")]}], None),
        ([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}], None),
        ([], None),
    ],
    ids=["one-name", "terms-are-ored", "values-union", "requirements-intersect", "a-term-without-names-allows-all",
         "not-in-does-not-narrow", "no-terms"],
)
def test_pre_filter_narrows_to_names_pinned_by_match_fields(terms, names):
    result, status, _ = _run_filter(_pod(terms), [_node("n1"), _node("n2"), _node("n3")])
    assert status is None
    assert result == (PreFilterResult(names) if names is not None else None)


def test_conflicting_name_requirements_reject_the_pod_at_pre_filter():
    terms = [{"matchFields": _names_in("n1")["matchFields"] + _names_in("n2")["matchFields"]}]
    result, status, _ = _run_filter(_pod(terms), [_node("n1")])
    assert result is None
    assert status == Status(Code.UnschedulableAndUnresolvable, "pod affinity terms conflict")


# --- Filter --------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("terms", "labels", "fits"),
    [
        ([{"matchExpressions": [_expr("cpus", "Gt", "4")]}], {"cpus": "8"}, True),
        ([{"matchExpressions": [_expr("cpus", "Gt", "4")]}], {"cpus": "4"}, False),
        ([{"matchExpressions": [_expr("cpus", "Lt", "4")]}], {"cpus": "2"}, True),
        ([{"matchExpressions": [_expr("cpus", "Gt", "4")]}], {"cpus": "many"}, False),
        ([{"matchExpressions": [_expr("cpus", "Lt", "4")]}], {}, False),
        ([{"matchExpressions": [_expr("zone", "DoesNotExist")]}], {}, True),
        ([], {"a": "b"}, False),
        ([{}], {"a": "b"}, False),
        ([{}, {"matchExpressions": [_expr("a", "In", "b")]}], {"a": "b"}, True),
        ([{"matchExpressions": [_expr("a", "NotIn", "bad value!")]}, {"matchExpressions": [_expr("a", "In", "b")]}],
         {"a": "b"}, True),
        ([{"matchExpressions": [_expr("a", "NotIn", "bad value!")]}], {"a": "b"}, False),
        ([{"matchExpressions": [_expr("bad key!", "DoesNotExist")]}], {}, False),
        ([{"matchExpressions": [_expr("a", "Gt", "-1")]}], {"a": "5"}, False),
        ([_names_in("n1", "n9")], {}, False),
        ([_names_in("n1")], {}, True),
        ([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}], {}, False),
    ],
    ids=["gt-above", "gt-equal-fails", "lt-below", "gt-non-numeric-label", "lt-missing-label", "does-not-exist",
         "no-terms-match-nothing", "empty-term-matches-nothing", "empty-term-beside-a-match",
         "unparsable-term-is-ignored-beside-a-match", "unparsable-value-never-matches", "unparsable-key-never-matches",
         "negative-gt-value-is-not-a-label-value", "match-fields-need-one-value", "match-fields-in", "match-fields-not-in"],
)
def test_filter_evaluates_required_terms_as_upstream_parses_them(terms, labels, fits):
    _, _, statuses = _run_filter(_pod(terms), [_node("n1", **labels)])
    assert statuses["n1"] == (None if fits else POD_MISMATCH)


def test_node_selector_and_affinity_must_both_match():
    pod = _pod([{"matchExpressions": [_expr("a", "Exists")]}], nodeSelector={"zone": "z1"})
    _, _, statuses = _run_filter(pod, [_node("n1", a="1", zone="z1"), _node("n2", a="1", zone="z2"), _node("n3", zone="z1")])
    assert statuses == {"n1": None, "n2": POD_MISMATCH, "n3": POD_MISMATCH}


def test_filter_without_pre_filter_computes_the_same_verdict():
    pod = _pod([{"matchExpressions": [_expr("a", "In", "b")]}])
    snap = Snapshot.build([_node("n1", a="b"), _node("n2", a="c")], [])
    pl = NodeAffinity.new(None, FrameworkHandle(snapshot=snap))
    assert [pl.filter(CycleState(), pod, ni) for ni in snap.list()] == [None, POD_MISMATCH]


def test_added_affinity_is_checked_before_the_pods_own():
    args = {"addedAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [_expr("pool", "In", "batch")]}]}}}
    pod = _pod([{"matchExpressions": [_expr("a", "Exists")]}])
    _, _, statuses = _run_filter(pod, [_node("n1", pool="batch", a="1"), _node("n2", pool="batch"), _node("n3", a="1")], args)
    assert statuses == {"n1": None, "n2": POD_MISMATCH, "n3": ENFORCED_MISMATCH}


# --- args ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("added", "field"),
    [
        ("nope", "addedAffinity"),
        ({REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [_expr("a", "Foo", "b")]}]}},
         f"addedAffinity.{REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].operator"),
        ({REQUIRED: {"nodeSelectorTerms": [{}, {"matchExpressions": [_expr("bad key!", "Exists")]}]}},
         f"addedAffinity.{REQUIRED}.nodeSelectorTerms[1].matchExpressions[0].key"),
        ({REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [_expr("a", "In", "ok", "not ok")]}]}},
         f"addedAffinity.{REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].values[1]"),
        ({REQUIRED: {"nodeSelectorTerms": [_names_in("n1", "n2")]}},
         f"addedAffinity.{REQUIRED}.nodeSelectorTerms[0].matchFields[0].values"),
        ({PREFERRED: [{"weight": 1, "preference": {"matchExpressions": [_expr("a", "In", "%")]}}]},
         f"addedAffinity.{PREFERRED}[0].preference.matchExpressions[0].values[0]"),
        ({PREFERRED: [{"weight": "1", "preference": {}}]}, f"addedAffinity.{PREFERRED}[0].weight"),
    ],
    ids=["not-an-object", "bad-operator", "bad-key", "bad-value", "match-fields-two-values", "preferred-bad-value",
         "weight-not-integer"],
)
def test_bad_args_are_rejected_naming_the_field(added, field):
    with pytest.raises(ValidationError) as err:
        NodeAffinity.new({"addedAffinity": added}, FrameworkHandle())
    assert err.value.field == field


def test_args_skip_preferred_terms_with_zero_weight_or_nothing_in_them():
    added = {PREFERRED: [{"weight": 0, "preference": {"matchExpressions": [_expr("a", "In", "%")]}},
                         {"weight": 5, "preference": {}}]}
    pl = NodeAffinity.new({"addedAffinity": added}, FrameworkHandle())
    snap = Snapshot.build([_node("n1", a="%")], [])
    state = CycleState()
    assert pl.pre_score(state, _pod(), snap.list()) is None
    assert pl.score(state, _pod(), snap.get("n1")) == (0, None)


# --- Score ---------------------------------------------------------------------------------

def _pref(weight: int, *exprs: dict) -> dict:
    return {"weight": weight, "preference": {"matchExpressions": list(exprs)}}


def _scores(pod: Pod, nodes: list[Node], args: dict | None = None, pre_score: bool = True) -> dict[str, int]:
    snap = Snapshot.build(nodes, [])
    pl = NodeAffinity.new(args, FrameworkHandle(snapshot=snap))
    state = CycleState()
    if pre_score:
        assert pl.pre_score(state, pod, snap.list()) is None
    scores = [NodeScore(ni.name, pl.score(state, pod, ni)[0]) for ni in snap.list()]
    pl.score_extensions().normalize_score(state, pod, scores)
    return {s.name: s.score for s in scores}


@pytest.mark.parametrize("pre_score", [True, False], ids=["with-pre-score", "pre-score-disabled"])
def test_score_sums_matching_weights_and_scales_to_max(pre_score):
    pod = _pod(preferred=[_pref(1, _expr("a", "Exists")), _pref(3, _expr("b", "Exists")), _pref(0, _expr("c", "Exists"))])
    nodes = [_node("n1", a="1"), _node("n2", b="1"), _node("n3", a="1", b="1"), _node("n4", c="1")]
    assert _scores(pod, nodes, pre_score=pre_score) == {"n1": 25, "n2": 75, "n3": 100, "n4": 0}


def test_score_adds_the_added_preferred_terms():
    args = {"addedAffinity": {PREFERRED: [_pref(2, _expr("pool", "In", "fast"))]}}
    assert _scores(_pod(), [_node("n1", pool="fast"), _node("n2")], args) == {"n1": 100, "n2": 0}


def test_pre_score_skips_without_preferred_terms():
    snap = Snapshot.build([_node("n1")], [])
    assert NodeAffinity.new(None, FrameworkHandle()).pre_score(CycleState(), _pod(), snap.list()) == Status(Code.Skip)


def test_an_empty_preferred_list_is_scored_not_skipped():
    assert _scores(_pod(preferred=[]), [_node("n1"), _node("n2")]) == {"n1": 0, "n2": 0}


def test_pre_score_fails_on_a_preferred_term_upstream_cannot_parse():
    pod = _pod(preferred=[_pref(1, _expr("a", "In", "not ok"))])
    status = NodeAffinity.new(None, FrameworkHandle()).pre_score(CycleState(), pod, [])
    assert status is not None and status.code == Code.Error
    assert f"{PREFERRED}[0].preference.matchExpressions[0].values[0]" in status.message()


# --- queueing ------------------------------------------------------------------------------

def test_registers_node_add_and_label_update():
    (ev,) = NodeAffinity.new(None, FrameworkHandle()).events_to_register()
    assert ev.event.resource == "Node" and ev.event.action == ActionType.Add | ActionType.UpdateNodeLabel


@pytest.mark.parametrize(
    ("old", "new", "args", "hint"),
    [
        (None, _node("n", zone="z1"), None, QueueingHint.Queue),
        (None, _node("n", zone="z2"), None, QueueingHint.QueueSkip),
        (_node("n", zone="z2"), _node("n", zone="z1"), None, QueueingHint.Queue),
        (_node("n", zone="z1", x="1"), _node("n", zone="z1"), None, QueueingHint.QueueSkip),
        (None, _node("n", zone="z1"), {"addedAffinity": {REQUIRED: {"nodeSelectorTerms": [_names_in("other")]}}},
         QueueingHint.QueueSkip),
    ],
    ids=["added-matching", "added-not-matching", "update-starts-matching", "update-already-matched",
         "fails-added-affinity"],
)
def test_node_hint_queues_when_a_node_starts_to_match(old, new, args, hint):
    pl = NodeAffinity.new(args, FrameworkHandle())
    pod = _pod([{"matchExpressions": [_expr("zone", "In", "z1")]}])
    assert pl.is_schedulable_after_node_change(pod, old, new) == hint
