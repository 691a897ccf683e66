"""InterPodAffinity PreScore/Score/NormalizeScore."""
import pytest

from framework.api.objects import Namespace, Node, Pod
from framework.cache import Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, NodeScore, Status
from framework.plugins.interpodaffinity.plugin import InterPodAffinity

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def node(name: str, **labels: str) -> Node:
    return Node({"metadata": {"name": name, "labels": labels}})


def aff_term(topology_key: str, app: str, **extra: object) -> dict:
    return {"topologyKey": topology_key, "labelSelector": {"matchLabels": {"app": app}}, **extra}


def pod(name: str, labels: dict | None = None, node_name: str = "", namespace: str = "default", **affinity: dict) -> Pod:
    spec: dict = {"containers": [], "affinity": affinity}
    if node_name:
        spec["nodeName"] = node_name
    return Pod({"metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "spec": spec})


def preferred(weight: int, term: dict) -> dict:
    return {PREFERRED: [{"weight": weight, "podAffinityTerm": term}]}


NODES = [node("a1", zone="a"), node("a2", zone="a"), node("b1", zone="b"), node("c1", zone="c")]


def scores(incoming: Pod, pods: list[Pod], args: dict | None = None, objects: list = (),
           nodes: list[Node] = NODES) -> tuple[Status | None, dict[str, int]]:
    snap = Snapshot.build(nodes, pods)
    pl = InterPodAffinity.new(args, FrameworkHandle(snapshot=snap, objects=InMemoryObjects(list(objects))))
    state = CycleState()
    st = pl.pre_score(state, incoming, snap.list())
    if st is not None:
        return st, {}
    raw = [NodeScore(n.name, pl.score(state, incoming, n)[0]) for n in snap.list()]
    pl.score_extensions().normalize_score(state, incoming, raw)
    return None, {s.name: s.score for s in raw}


def test_preferred_affinity_scores_the_topology_of_matching_pods_highest():
    incoming = pod("p", podAffinity=preferred(5, aff_term("zone", "web")))
    st, got = scores(incoming, [pod("e", {"app": "web"}, "b1")])
    assert st is None
    assert got == {"a1": 0, "a2": 0, "b1": 100, "c1": 0}


def test_preferred_anti_affinity_lowers_the_topology_of_matching_pods():
    incoming = pod("p", podAntiAffinity=preferred(5, aff_term("zone", "web")))
    _, got = scores(incoming, [pod("e", {"app": "web"}, "a1"), pod("f", {"app": "web"}, "a2"),
                               pod("g", {"app": "web"}, "b1")])
    # zone a: -10, zone b: -5, zone c: 0 -> scaled from min to max.
    assert got == {"a1": 0, "a2": 0, "b1": 50, "c1": 100}


@pytest.mark.parametrize("weight, expect_b1", [(1, 100), (0, None)], ids=["weight-1", "weight-0-disables"])
def test_existing_pods_required_affinity_counts_with_the_hard_pod_affinity_weight(weight, expect_b1):
    existing = pod("e", {}, "b1", podAffinity={REQUIRED: [aff_term("zone", "web")]})
    st, got = scores(pod("p", {"app": "web"}), [existing], {"hardPodAffinityWeight": weight})
    if expect_b1 is None:
        assert st == Status(Code.Skip)
    else:
        assert got["b1"] == expect_b1 and got["a1"] == 0


@pytest.mark.parametrize("ignore, expect", [
    (False, {"a1": 0, "a2": 0, "b1": 100, "c1": 0}),
    (True, None),
], ids=["considered", "ignored"])
def test_existing_pods_preferred_terms_can_be_ignored_when_the_pod_has_none(ignore, expect):
    existing = pod("e", {}, "b1", podAffinity=preferred(3, aff_term("zone", "web")))
    st, got = scores(pod("p", {"app": "web"}), [existing], {"ignorePreferredTermsOfExistingPods": ignore})
    if expect is None:
        assert st == Status(Code.Skip)
    else:
        assert got == expect


def test_existing_pods_preferred_anti_affinity_lowers_its_topology():
    existing = pod("e", {}, "b1", podAntiAffinity=preferred(4, aff_term("zone", "web")))
    _, got = scores(pod("p", {"app": "web"}), [existing])
    assert got == {"a1": 100, "a2": 100, "b1": 0, "c1": 100}


def test_pre_score_skips_when_no_term_matches_anything():
    incoming = pod("p", podAffinity=preferred(5, aff_term("zone", "web")))
    st, _ = scores(incoming, [pod("e", {"app": "db"}, "b1")])
    assert st == Status(Code.Skip)


def test_pre_score_skips_when_there_are_no_nodes_to_score():
    snap = Snapshot.build(NODES, [])
    pl = InterPodAffinity.new(None, FrameworkHandle(snapshot=snap))
    assert pl.pre_score(CycleState(), pod("p"), []) == Status(Code.Skip)


def test_namespace_selector_of_a_preferred_term_is_resolved_through_namespace_objects():
    namespaces = [Namespace({"metadata": {"name": "team-a", "labels": {"team": "a"}}}),
                  Namespace({"metadata": {"name": "team-b", "labels": {"team": "b"}}})]
    term = aff_term("zone", "web", namespaceSelector={"matchLabels": {"team": "a"}})
    incoming = pod("p", podAffinity=preferred(5, term))
    pods = [pod("e", {"app": "web"}, "b1", namespace="team-a"), pod("f", {"app": "web"}, "c1", namespace="team-b")]
    _, got = scores(incoming, pods, objects=namespaces)
    assert got == {"a1": 0, "a2": 0, "b1": 100, "c1": 0}


def test_nodes_without_labels_neither_give_nor_get_points():
    nodes = [node("bare"), node("b1", zone="b")]
    incoming = pod("p", podAffinity=preferred(5, aff_term("zone", "web")))
    _, got = scores(incoming, [pod("e", {"app": "web"}, "bare"), pod("f", {"app": "web"}, "b1")], nodes=nodes)
    assert got == {"bare": 0, "b1": 100}


def test_invalid_preferred_term_fails_pre_score_with_an_error():
    bad = {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "a b"}}}
    st, _ = scores(pod("p", podAffinity=preferred(5, bad)), [])
    assert st.code == Code.Error
    assert 'Invalid value: "a b"' in st.message()


def test_normalize_scales_negative_and_positive_scores_from_min_to_max():
    snap = Snapshot.build(NODES, [pod("e", {"app": "web"}, "b1")])
    pl = InterPodAffinity.new(None, FrameworkHandle(snapshot=snap))
    incoming = pod("p", podAffinity=preferred(5, aff_term("zone", "web")))
    state = CycleState()
    assert pl.pre_score(state, incoming, snap.list()) is None
    raw = [NodeScore("n1", -7), NodeScore("n2", 3), NodeScore("n3", 0)]
    pl.score_extensions().normalize_score(state, incoming, raw)
    assert [s.score for s in raw] == [0, 100, 70]


def test_a_cluster_without_affinity_skips_prefilter_and_prescore_without_reading_any_node() -> None:
    plain = [pod(f"p{i}", labels={"group": f"g{i}"}, node_name=n.name) for i, n in enumerate(NODES)]
    snap = Snapshot.build(NODES, plain)
    pl = InterPodAffinity.new(None, FrameworkHandle(snapshot=snap))
    for i in range(3):  # a new label set each time, as each gang brings
        incoming = pod(f"new{i}", labels={"group": f"new{i}"})
        state = CycleState()
        _, st = pl.pre_filter(state, incoming, snap.list())
        assert st is not None and st.code == Code.Skip
        st = pl.pre_score(state, incoming, snap.list())
        assert st is not None and st.code == Code.Skip
    assert (pl._existing_memo._entries, pl._score_memo._entries) == ({}, {})
