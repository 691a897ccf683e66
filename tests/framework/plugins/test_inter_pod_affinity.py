"""InterPodAffinity: PreFilter/Filter, AddPod/RemovePod, args and queueing hints.
Scoring is in test_inter_pod_affinity_score.py."""
import pytest

from framework.api.affinity import parse_pod_affinity
from framework.api.errors import ValidationError
from framework.api.objects import Namespace, Node, Pod
from framework.cache import PodInfo, Snapshot
from framework.features import FeatureGates
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import ActionType, Code, CycleState, QueueingHint, Status
from framework.node_table import ColumnarNodes
from framework.plugins.interpodaffinity.plugin import InterPodAffinity
from framework.plugins.interpodaffinity.filtering import PRE_FILTER_STATE_KEY

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
AFFINITY_MISMATCH = Status(Code.UnschedulableAndUnresolvable, "node(s) didn't match pod affinity rules")
ANTI_AFFINITY_MISMATCH = Status(Code.Unschedulable, "node(s) didn't match pod anti-affinity rules")
EXISTING_ANTI_AFFINITY_MISMATCH = Status(Code.Unschedulable, "node(s) didn't satisfy existing pods anti-affinity rules")


def node(name: str, **labels: str) -> Node:
    return Node({"metadata": {"name": name, "labels": labels}})


def term(topology_key: str, selector: dict | None = None, **extra: object) -> dict:
    t: dict = {"topologyKey": topology_key, **extra}
    if selector is not None:
        t["labelSelector"] = selector
    return t


def labels_in(key: str, *values: str) -> dict:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def pod(name: str, labels: dict | None = None, node_name: str = "", namespace: str = "default",
        affinity: list[dict] | None = None, anti: list[dict] | None = None) -> Pod:
    aff: dict = {}
    if affinity is not None:
        aff["podAffinity"] = {REQUIRED: affinity}
    if anti is not None:
        aff["podAntiAffinity"] = {REQUIRED: anti}
    spec: dict = {"containers": [], "affinity": aff}
    if node_name:
        spec["nodeName"] = node_name
    return Pod({"metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": spec})


def setup(nodes: list[Node], pods: list[Pod], objects: list = (), args: dict | None = None):
    snap = Snapshot.build(nodes, pods)
    handle = FrameworkHandle(snapshot=snap, objects=InMemoryObjects(list(objects)))
    return InterPodAffinity.new(args, handle), snap


def run(incoming: Pod, nodes: list[Node], pods: list[Pod], objects: list = ()) -> tuple[Status | None, dict, CycleState]:
    pl, snap = setup(nodes, pods, objects)
    state = CycleState()
    _, pre = pl.pre_filter(state, incoming, snap.list())
    verdicts = {} if pre is not None else {n.name: pl.filter(state, incoming, n) for n in snap.list()}
    return pre, verdicts, state


ZONES = [node("a1", zone="a"), node("a2", zone="a"), node("b1", zone="b"), node("x")]


def test_pre_filter_skips_a_pod_without_affinity_when_no_existing_pod_has_required_anti_affinity():
    existing = pod("e", {"app": "web"}, "a1", affinity=[term("zone", labels_in("app", "web"))])
    pre, _, state = run(pod("p", {"app": "web"}), ZONES, [existing])
    assert pre == Status(Code.Skip)
    assert state.get(PRE_FILTER_STATE_KEY) is None


def test_existing_pods_anti_affinity_rejects_every_node_of_its_topology():
    existing = pod("e", {"app": "db"}, "a1", anti=[term("zone", labels_in("app", "web"))])
    pre, verdicts, _ = run(pod("p", {"app": "web"}), ZONES, [existing])
    assert pre is None
    assert verdicts == {"a1": EXISTING_ANTI_AFFINITY_MISMATCH, "a2": EXISTING_ANTI_AFFINITY_MISMATCH, "b1": None, "x": None}


def test_incoming_anti_affinity_rejects_nodes_sharing_a_topology_with_a_matching_pod():
    existing = pod("e", {"app": "web"}, "b1")
    pre, verdicts, _ = run(pod("p", anti=[term("zone", labels_in("app", "web"))]), ZONES, [existing])
    assert verdicts == {"a1": None, "a2": None, "b1": ANTI_AFFINITY_MISMATCH, "x": None}


def test_incoming_affinity_needs_a_matching_pod_in_the_same_topology_and_the_key_on_the_node():
    existing = pod("e", {"app": "web"}, "b1")
    incoming = pod("p", {"app": "other"}, affinity=[term("zone", labels_in("app", "web"))])
    _, verdicts, _ = run(incoming, ZONES, [existing])
    assert verdicts == {"a1": AFFINITY_MISMATCH, "a2": AFFINITY_MISMATCH, "b1": None, "x": AFFINITY_MISMATCH}


@pytest.mark.parametrize("incoming_labels, others, expect_a1", [
    ({"app": "web"}, [], None),
    ({"app": "other"}, [], AFFINITY_MISMATCH),
    ({"app": "web"}, [pod("e", {"app": "web"}, "b1")], AFFINITY_MISMATCH),
], ids=["first-of-its-set-goes-anywhere", "not-matching-itself", "a-match-exists-elsewhere"])
def test_first_pod_of_a_set_matching_its_own_affinity_is_not_blocked(incoming_labels, others, expect_a1):
    incoming = pod("p", incoming_labels, affinity=[term("zone", labels_in("app", "web"))])
    _, verdicts, _ = run(incoming, ZONES, others)
    assert verdicts["a1"] == expect_a1
    # Nodes without the topology key never pass.
    assert verdicts["x"] == AFFINITY_MISMATCH


def test_affinity_terms_must_all_be_matched_by_the_same_pod():
    pods = [pod("e1", {"app": "web"}, "a1"), pod("e2", {"tier": "fe"}, "a2")]
    incoming = pod("p", {}, affinity=[term("zone", labels_in("app", "web")), term("zone", labels_in("tier", "fe"))])
    _, verdicts, _ = run(incoming, ZONES, pods)
    assert verdicts["a1"] == AFFINITY_MISMATCH


def test_incoming_namespace_selector_selects_namespaces_by_their_labels():
    namespaces = [Namespace({"metadata": {"name": "team-a", "labels": {"team": "a"}}}),
                  Namespace({"metadata": {"name": "team-b", "labels": {"team": "b"}}})]
    existing = pod("e", {"app": "web"}, "b1", namespace="team-a")
    other_ns = pod("o", {"app": "web"}, "a1", namespace="team-b")
    anti = [term("zone", labels_in("app", "web"), namespaceSelector={"matchLabels": {"team": "a"}})]
    _, verdicts, _ = run(pod("p", anti=anti), ZONES, [existing, other_ns], namespaces)
    assert verdicts == {"a1": None, "a2": None, "b1": ANTI_AFFINITY_MISMATCH, "x": None}


@pytest.mark.parametrize("ns_selector, expect_a1", [
    ({}, EXISTING_ANTI_AFFINITY_MISMATCH),
    ({"matchLabels": {"team": "a"}}, EXISTING_ANTI_AFFINITY_MISMATCH),
    ({"matchLabels": {"team": "b"}}, None),
], ids=["empty-selects-all", "selects-incoming-namespace", "selects-other-namespace"])
def test_existing_pods_namespace_selector_is_matched_against_the_incoming_pods_namespace_labels(ns_selector, expect_a1):
    namespaces = [Namespace({"metadata": {"name": "team-a", "labels": {"team": "a"}}})]
    existing = pod("e", {}, "a1", namespace="elsewhere",
                   anti=[term("zone", labels_in("app", "web"), namespaceSelector=ns_selector)])
    _, verdicts, _ = run(pod("p", {"app": "web"}, namespace="team-a"), ZONES, [existing], namespaces)
    assert verdicts.get("a1") == expect_a1  # no verdicts when PreFilter skipped


@pytest.mark.parametrize("key_field, expect_b1", [
    ("matchLabelKeys", ANTI_AFFINITY_MISMATCH),
    ("mismatchLabelKeys", None),
], ids=["match-same-version", "mismatch-same-version"])
def test_match_label_keys_take_the_incoming_pods_own_label_values(key_field, expect_b1):
    existing = pod("e", {"app": "web", "version": "v1"}, "b1")
    anti = [term("zone", labels_in("app", "web"), **{key_field: ["version"]})]
    _, verdicts, _ = run(pod("p", {"app": "web", "version": "v1"}, anti=anti), ZONES, [existing])
    assert verdicts["b1"] == expect_b1


def test_a_term_without_label_selector_matches_no_pod():
    existing = pod("e", {"app": "web"}, "b1")
    pre, _, _ = run(pod("p", anti=[term("zone")]), ZONES, [existing])
    assert pre is None  # the pod has terms, so no Skip, but nothing is counted


def test_invalid_label_value_makes_pre_filter_unresolvable_with_upstreams_message():
    bad = pod("p", anti=[term("zone", labels_in("app", "not valid!"))])
    pre, _, _ = run(bad, ZONES, [])
    assert pre.code == Code.UnschedulableAndUnresolvable
    assert pre.reasons[0].startswith(
        'parsing pod: requiredAntiAffinityTerms: values[0][app]: Invalid value: "not valid!": a valid label must be')


def test_parse_errors_of_two_term_lists_are_aggregated_and_leave_those_lists_empty():
    bad = pod("p", affinity=[term("zone", labels_in("app", "a b"))], anti=[term("zone", labels_in("bad key", "x"))])
    terms = parse_pod_affinity(bad)
    assert terms.required_affinity == () and terms.required_anti_affinity == ()
    assert terms.error.startswith("[requiredAffinityTerms: values[0][app]: Invalid value")
    assert 'requiredAntiAffinityTerms: key: Invalid value: "bad key"' in terms.error


# --- AddPod / RemovePod ------------------------------------------------------------------------

def _counts(state: CycleState) -> tuple:
    s = state.read(PRE_FILTER_STATE_KEY)
    return dict(s.existing_anti_affinity_counts), dict(s.affinity_counts), dict(s.anti_affinity_counts)


EXTRA_PODS = [
    (pod("n1", {"app": "web"}, "a2"), True),
    (pod("n2", {"app": "db"}, "b1", anti=[term("zone", labels_in("app", "web"))]), True),
    (pod("n3", {"app": "web"}, "x"), False),
]


@pytest.mark.parametrize("extra, changes", EXTRA_PODS, ids=["matches-affinity", "has-anti-affinity", "node-without-zone"])
def test_add_then_remove_pod_restores_the_pre_filter_state(extra, changes):
    existing = [pod("e1", {"app": "web"}, "a1"), pod("e2", {}, "b1", anti=[term("zone", labels_in("app", "web"))])]
    incoming = pod("p", {"app": "web"}, affinity=[term("zone", labels_in("app", "web"))],
                   anti=[term("zone", labels_in("app", "web"))])
    pl, snap = setup(ZONES, existing)
    state = CycleState()
    pl.pre_filter(state, incoming, snap.list())
    before = _counts(state)
    ext = pl.pre_filter_extensions()
    node_info = snap.get(extra.node_name)
    assert ext.add_pod(state, incoming, PodInfo(extra), node_info) is None
    assert (_counts(state) != before) == changes
    assert ext.remove_pod(state, incoming, PodInfo(extra), node_info) is None
    assert _counts(state) == before


def test_adding_a_nominated_pod_with_anti_affinity_blocks_its_topology():
    pl, snap = setup(ZONES, [])
    # A term of its own keeps PreFilter from skipping (and so AddPod from being moot).
    incoming = pod("p", {"app": "web"}, anti=[term("zone", labels_in("app", "nothing"))])
    state = CycleState()
    _, pre = pl.pre_filter(state, incoming, snap.list())
    assert pre is None
    nominated = pod("n", {}, "b1", anti=[term("zone", labels_in("app", "web"))])
    clone = state.clone()
    pl.pre_filter_extensions().add_pod(clone, incoming, PodInfo(nominated), snap.get("b1"))
    assert pl.filter(clone, incoming, snap.get("b1")) == EXISTING_ANTI_AFFINITY_MISMATCH
    # The original state is untouched by changes to its clone.
    assert pl.filter(state, incoming, snap.get("b1")) is None


def test_removing_the_only_matching_pod_lets_the_first_pod_rule_apply():
    victim = pod("v", {"app": "web"}, "b1")
    pl, snap = setup(ZONES, [victim])
    incoming = pod("p", {"app": "web"}, affinity=[term("zone", labels_in("app", "web"))])
    state = CycleState()
    pl.pre_filter(state, incoming, snap.list())
    assert pl.filter(state, incoming, snap.get("a1")) == AFFINITY_MISMATCH
    pl.pre_filter_extensions().remove_pod(state, incoming, PodInfo(victim), snap.get("b1"))
    assert pl.filter(state, incoming, snap.get("a1")) is None


def test_filter_without_pre_filter_state_is_an_error():
    pl, snap = setup(ZONES, [])
    st = pl.filter(CycleState(), pod("p"), snap.get("a1"))
    assert st.code == Code.Error


# --- Args ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, weight, ignore", [
    (None, 1, False),
    ({"hardPodAffinityWeight": 0}, 0, False),
    ({"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": True}, 100, True),
], ids=["defaults", "zero", "max-and-ignore"])
def test_args_are_defaulted(args, weight, ignore):
    pl = InterPodAffinity.new(args, FrameworkHandle())
    assert (pl.hard_pod_affinity_weight, pl.ignore_preferred_terms_of_existing_pods) == (weight, ignore)


@pytest.mark.parametrize("weight", [-1, 101], ids=["negative", "too-big"])
def test_hard_pod_affinity_weight_out_of_range_is_rejected(weight):
    with pytest.raises(ValidationError) as err:
        InterPodAffinity.new({"hardPodAffinityWeight": weight}, FrameworkHandle())
    assert err.value.field == "hardPodAffinityWeight"
    assert "not in valid range [0, 100]" in str(err.value)


# --- Queueing hints ------------------------------------------------------------------------------

@pytest.mark.parametrize("hints, node_action", [
    (True, ActionType.Add | ActionType.UpdateNodeLabel),
    (False, ActionType.Add | ActionType.UpdateNodeLabel | ActionType.UpdateNodeTaint),
])
def test_events_are_upstreams(hints, node_action):
    handle = FrameworkHandle(features=FeatureGates({"SchedulerQueueingHints": hints}))
    events = [e.event for e in InterPodAffinity.new(None, handle).events_to_register()]
    assert [(e.resource, e.action) for e in events] == [
        ("Pod", ActionType.Add | ActionType.UpdatePodLabel | ActionType.Delete),
        ("Node", node_action),
    ]


WAITING = pod("w", affinity=[term("zone", labels_in("app", "web"))], anti=[term("zone", labels_in("app", "db"))])


@pytest.mark.parametrize("old, new, hint", [
    (None, pod("n", {"app": "web"}, "a1"), QueueingHint.Queue),
    (None, pod("n", {"app": "web"}), QueueingHint.QueueSkip),
    (None, pod("n", {"app": "other"}, "a1"), QueueingHint.QueueSkip),
    (pod("d", {"app": "db"}, "a1"), None, QueueingHint.Queue),
    (pod("d", {"app": "web"}, "a1"), None, QueueingHint.QueueSkip),
    (pod("u", {}, "a1"), pod("u", {"app": "web"}, "a1"), QueueingHint.Queue),
    (pod("u", {"app": "db"}, "a1"), pod("u", {}, "a1"), QueueingHint.Queue),
    (pod("u", {"x": "1"}, "a1"), pod("u", {"x": "2"}, "a1"), QueueingHint.QueueSkip),
], ids=["added-match", "added-unscheduled", "added-no-match", "deleted-anti-match", "deleted-no-anti-match",
        "label-now-matches", "label-no-longer-anti", "unrelated-label"])
def test_pod_change_hint(old, new, hint):
    pl = InterPodAffinity.new(None, FrameworkHandle())
    assert pl.is_schedulable_after_pod_change(WAITING, old, new) == hint


AFFINITY_ONLY = pod("w", affinity=[term("zone", labels_in("app", "web"))])


@pytest.mark.parametrize("waiting, new, hint", [
    (WAITING, node("n", zone="z"), QueueingHint.Queue),
    (AFFINITY_ONLY, node("n", other="z"), QueueingHint.QueueSkip),
    # Any new node may take a pod with anti-affinity (upstream: always Queue on add).
    (WAITING, node("n", other="z"), QueueingHint.Queue),
], ids=["has-topology-key", "affinity-lacks-topology-key", "anti-affinity-any-node"])
def test_node_change_hint(waiting, new, hint):
    pl = InterPodAffinity.new(None, FrameworkHandle())
    assert pl.is_schedulable_after_node_change(waiting, None, new) == hint


def test_columnar_filter_gives_the_failing_nodes_of_one_reason_one_shared_status():
    """The runtime words, and the diagnosis records, each distinct Status object once;
    one object per failing node made every node cost that work."""
    hosts = [node(f"h{i}", zone="a" if i < 3 else "b", host=f"h{i}") for i in range(6)]
    existing = [pod(f"e{i}", {"app": "db"}, f"h{i}", anti=[term("host", labels_in("app", "web"))]) for i in range(2)]
    existing.append(pod("c", {"app": "cache"}, "h4"))
    incoming = pod("p", {"app": "web"}, anti=[term("host", labels_in("app", "cache"))])
    pl, snap = setup(hosts, existing)
    state = CycleState()
    nodes = snap.list()
    assert isinstance(nodes, ColumnarNodes)
    _, pre = pl.pre_filter(state, incoming, nodes)
    assert pre is None
    columnar = pl.filter_nodes(state, incoming, nodes)
    assert columnar == [pl.filter(state, incoming, ni) for ni in nodes]
    assert columnar == [EXISTING_ANTI_AFFINITY_MISMATCH, EXISTING_ANTI_AFFINITY_MISMATCH, None, None,
                        ANTI_AFFINITY_MISMATCH, None]
    assert columnar[0] is columnar[1]
    assert all(st is None or st.plugin == "InterPodAffinity" for st in columnar)
