import pytest

from framework.api.objects import KubeObject, Node, Pod, ReplicaSet, ReplicationController, Service, StatefulSet
from framework.cache import Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import CycleState, NodeScore
from framework.plugins.selectorspread.selector_spread import SelectorSpread, zone_key

LABELS1 = {"foo": "bar", "baz": "blah"}
LABELS2 = {"bar": "foo", "baz": "blah"}
ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
OWNER_KINDS = {"rc": ("v1", "ReplicationController"), "rs": ("apps/v1", "ReplicaSet"), "ss": ("apps/v1", "StatefulSet")}


def _pod(name: str, labels: dict | None = None, node: str = "", ns: str = "default", owner: str = "",
         spread: bool = False, deleting: bool = False) -> Pod:
    meta: dict = {"name": name, "namespace": ns, "labels": labels or {}}
    if owner:
        api_version, kind = OWNER_KINDS[owner[:2]]
        meta["ownerReferences"] = [{"apiVersion": api_version, "kind": kind, "name": owner, "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: dict = {"nodeName": node} if node else {}
    if spread:
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "foo", "whenUnsatisfiable": "DoNotSchedule"}]
    return Pod({"metadata": meta, "spec": spec})


def _service(selector: dict, ns: str = "default") -> Service:
    return Service({"metadata": {"name": "s1", "namespace": ns}, "spec": {"selector": selector}})


def _rc(name: str, selector: dict) -> ReplicationController:
    return ReplicationController({"metadata": {"name": name, "namespace": "default"}, "spec": {"selector": selector}})


def _rs(name: str, match_labels: dict) -> ReplicaSet:
    return ReplicaSet({"metadata": {"name": name, "namespace": "default"}, "spec": {"selector": {"matchLabels": match_labels}}})


def _ss(name: str, match_labels: dict) -> StatefulSet:
    return StatefulSet({"metadata": {"name": name, "namespace": "default"}, "spec": {"selector": {"matchLabels": match_labels}}})


def _scores(pod: Pod, nodes: list[Node], pods: list[Pod], objects: list[KubeObject]) -> dict[str, int]:
    snap = Snapshot.build(nodes, pods)
    plugin = SelectorSpread.new(None, FrameworkHandle(snapshot=snap, objects=InMemoryObjects(objects)))
    state = CycleState()
    assert plugin.pre_score(state, pod, snap.list()) is None
    scores = []
    for ni in snap.list():
        score, status = plugin.score(state, pod, ni)
        assert status is None
        scores.append(NodeScore(ni.name, score))
    assert plugin.score_extensions().normalize_score(state, pod, scores) is None
    return {s.name: s.score for s in scores}


TWO_NODES = [Node({"metadata": {"name": "node1"}}), Node({"metadata": {"name": "node2"}})]


@pytest.mark.parametrize(
    ("pod", "pods", "objects", "expected"),
    [
        (_pod("p"), [], [], {"node1": 100, "node2": 100}),
        (_pod("p", LABELS1), [_pod("a", node="node1")], [], {"node1": 100, "node2": 100}),
        (_pod("p", LABELS1), [_pod("a", LABELS2, "node1")], [_service({"key": "value"})], {"node1": 100, "node2": 100}),
        (_pod("p", LABELS1), [_pod("a", LABELS2, "node1"), _pod("b", LABELS1, "node2")], [_service(LABELS1)],
         {"node1": 100, "node2": 0}),
        (_pod("p", LABELS1, ns="ns1"),
         [_pod("a", LABELS2, "node1"), _pod("b", LABELS1, "node1"), _pod("c", LABELS1, "node1", ns="ns2"),
          _pod("d", LABELS1, "node2", ns="ns1"), _pod("e", LABELS2, "node2")],
         [_service(LABELS1, ns="ns1")], {"node1": 100, "node2": 0}),
        (_pod("p", LABELS1),
         [_pod("a", LABELS2, "node1"), _pod("b", LABELS1, "node1"), _pod("c", LABELS1, "node2"), _pod("d", LABELS1, "node2")],
         [_service(LABELS1)], {"node1": 50, "node2": 0}),
        (_pod("p", LABELS1), [_pod("a", LABELS2, "node1"), _pod("b", LABELS1, "node1"), _pod("c", LABELS1, "node2")],
         [_service({"baz": "blah"})], {"node1": 0, "node2": 50}),
        (_pod("p", LABELS1), [_pod("a", LABELS1, "node1", deleting=True), _pod("b", LABELS1, "node2")],
         [_service(LABELS1)], {"node1": 100, "node2": 0}),
    ],
    ids=["nothing-scheduled", "no-services", "different-services", "one-service-pod", "namespaces-are-separate",
         "three-service-pods", "partial-label-match", "deleting-pods-do-not-count"],
)
def test_pods_selected_by_the_same_service_are_spread_over_nodes(pod, pods, objects, expected):
    assert _scores(pod, TWO_NODES, pods, objects) == expected


CONTROLLER_PODS = [_pod("a", LABELS2, "node1"), _pod("b", LABELS1, "node1"), _pod("c", LABELS1, "node2")]


@pytest.mark.parametrize(
    ("pod", "objects", "expected"),
    [
        (_pod("p", LABELS1, owner="rc1"), [_rc("rc1", {"foo": "bar"}), _rc("rc2", {"bar": "foo"}), _service({"baz": "blah"})],
         {"node1": 0, "node2": 0}),
        (_pod("p", LABELS1, owner="rs1"), [_rs("rs1", {"foo": "bar"}), _rs("rs2", {"bar": "foo"}), _service({"baz": "blah"})],
         {"node1": 0, "node2": 0}),
        (_pod("p", LABELS1, owner="ss1"), [_ss("ss1", {"foo": "bar"}), _ss("ss2", {"bar": "foo"}), _service({"baz": "blah"})],
         {"node1": 0, "node2": 0}),
        (_pod("p", {"foo": "bar", "bar": "foo"}, owner="rc3"), [_rc("rc3", {"foo": "bar"}), _service({"bar": "foo"})],
         {"node1": 100, "node2": 100}),
        (_pod("p", {"foo": "bar", "bar": "foo"}, owner="rs3"), [_rs("rs3", {"foo": "bar"}), _service({"bar": "foo"})],
         {"node1": 100, "node2": 100}),
        (_pod("p", LABELS1, owner="rc3"), [_rc("rc3", {"baz": "blah"})], {"node1": 0, "node2": 50}),
        (_pod("p", LABELS1, owner="ss3"), [_ss("ss3", {"baz": "blah"})], {"node1": 0, "node2": 50}),
        (_pod("p", LABELS1, owner="rs9"), [_rs("rs3", {"baz": "blah"})], {"node1": 100, "node2": 100}),
    ],
    ids=["service-and-rc", "service-and-replicaset", "service-and-statefulset", "disjoint-service-and-rc",
         "disjoint-service-and-replicaset", "rc-partial-match", "statefulset-partial-match", "missing-controller"],
)
def test_controller_selectors_join_the_service_selectors(pod, objects, expected):
    assert _scores(pod, TWO_NODES, CONTROLLER_PODS, objects) == expected


def test_an_owner_that_is_not_the_controller_adds_no_selector():
    pod = _pod("p", LABELS1)
    pod = Pod({**pod.raw, "metadata": {**pod.raw["metadata"], "ownerReferences": [
        {"apiVersion": "v1", "kind": "ReplicationController", "name": "rc1"}]}})
    assert _scores(pod, TWO_NODES, CONTROLLER_PODS, [_rc("rc1", {"baz": "blah"})]) == {"node1": 100, "node2": 100}


def test_a_pod_with_topology_spread_constraints_scores_zero_everywhere():
    pod = _pod("p", LABELS1, owner="ss1", spread=True)
    assert _scores(pod, TWO_NODES, CONTROLLER_PODS, [_ss("ss1", {"baz": "blah"})]) == {"node1": 0, "node2": 0}


def _zone_nodes(label: str) -> list[Node]:
    names = {"m1.z1": "zone1", "m1.z2": "zone2", "m2.z2": "zone2", "m1.z3": "zone3", "m2.z3": "zone3", "m3.z3": "zone3"}
    return [Node({"metadata": {"name": n, "labels": {label: z}}}) for n, z in names.items()]


@pytest.mark.parametrize("label", [ZONE, BETA_ZONE], ids=["ga-label", "beta-label"])
@pytest.mark.parametrize(
    ("placed", "expected"),
    [
        ([("m1.z1", LABELS2), ("m1.z2", LABELS1)],
         {"m1.z1": 100, "m1.z2": 0, "m2.z2": 33, "m1.z3": 100, "m2.z3": 100, "m3.z3": 100}),
        ([("m1.z1", LABELS2), ("m1.z2", LABELS1), ("m2.z2", LABELS1), ("m1.z3", LABELS2), ("m2.z3", LABELS1)],
         {"m1.z1": 100, "m1.z2": 0, "m2.z2": 0, "m1.z3": 66, "m2.z3": 33, "m3.z3": 66}),
        ([("m1.z1", LABELS1), ("m1.z2", LABELS1), ("m2.z2", LABELS2), ("m1.z3", LABELS1)],
         {"m1.z1": 0, "m1.z2": 0, "m2.z2": 33, "m1.z3": 0, "m2.z3": 33, "m3.z3": 33}),
        ([("m1.z1", LABELS1), ("m1.z2", LABELS1), ("m2.z2", LABELS1), ("m2.z2", LABELS2), ("m1.z3", LABELS1)],
         {"m1.z1": 33, "m1.z2": 0, "m2.z2": 0, "m1.z3": 33, "m2.z3": 66, "m3.z3": 66}),
    ],
    ids=["one-match-in-z2", "three-matches", "one-per-zone", "four-matches"],
)
def test_zones_get_two_thirds_of_the_weight(label, placed, expected):
    pods = [_pod(f"p{i}", labels, node) for i, (node, labels) in enumerate(placed)]
    assert _scores(_pod("p", LABELS1), _zone_nodes(label), pods, [_service(LABELS1)]) == expected


def test_replication_controller_spreading_over_zones():
    pods = [_pod("a", LABELS1, "m1.z3"), _pod("b", LABELS1, "m1.z2"), _pod("c", LABELS1, "m1.z3")]
    got = _scores(_pod("p", LABELS1, owner="rc1"), _zone_nodes(ZONE), pods, [_rc("rc1", LABELS1)])
    assert got == {"m1.z1": 100, "m1.z2": 50, "m2.z2": 66, "m1.z3": 0, "m2.z3": 33, "m3.z3": 33}


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({}, ""),
        ({ZONE: "z"}, ":\x00:z"),
        ({ZONE: "z", BETA_ZONE: "b"}, ":\x00:b"),
        ({ZONE: "z", BETA_ZONE: ""}, ""),
        ({"topology.kubernetes.io/region": "r"}, "r:\x00:"),
    ],
    ids=["none", "ga", "beta-wins", "empty-beta-wins", "region-only"],
)
def test_zone_key_prefers_the_beta_labels(labels, expected):
    assert zone_key(Node({"metadata": {"name": "n", "labels": labels}})) == expected
