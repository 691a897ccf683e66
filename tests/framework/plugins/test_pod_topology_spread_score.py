"""PodTopologySpread PreScore/Score/NormalizeScore and the default constraints."""
import pytest

from framework.api.objects import Node, Pod, ReplicaSet, Service
from framework.cache import Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, NodeScore, Status
from framework.plugins.podtopologyspread.plugin import PodTopologySpread
from framework.plugins.podtopologyspread.scoring import go_round

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
WEB = {"app": "web"}


def node(name: str, zone: str | None = None) -> Node:
    labels = {HOST: name}
    if zone is not None:
        labels[ZONE] = zone
    return Node({"metadata": {"name": name, "labels": labels}})


def pod(name: str, labels: dict | None = None, node_name: str = "", constraints: list | None = None,
        owner: dict | None = None) -> Pod:
    meta: dict = {"name": name, "labels": labels or {}}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    spec: dict = {"containers": [], "topologySpreadConstraints": constraints or []}
    if node_name:
        spec["nodeName"] = node_name
    return Pod({"metadata": meta, "spec": spec})


SERVICE = Service({"metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": WEB}})
NODES = [node("n1", "a"), node("n2", "a"), node("n3", "b")]
EXISTING = [pod("e1", WEB, "n1"), pod("e2", WEB, "n1"), pod("e3", WEB, "n3")]


def run(incoming: Pod, nodes: list[Node], pods: list[Pod], args: dict | None = None, objects: list = (),
        candidates: list[str] | None = None) -> tuple[Status | None, dict[str, int]]:
    snap = Snapshot.build(nodes, pods)
    pl = PodTopologySpread.new(args, FrameworkHandle(snapshot=snap, objects=InMemoryObjects(list(objects))))
    filtered = [n for n in snap.list() if candidates is None or n.name in candidates]
    state = CycleState()
    st = pl.pre_score(state, incoming, filtered)
    if st is not None:
        return st, {}
    scores = [NodeScore(n.name, pl.score(state, incoming, n)[0]) for n in filtered]
    pl.score_extensions().normalize_score(state, incoming, scores)
    return None, {s.name: s.score for s in scores}


def test_system_defaults_spread_pods_a_service_selects_over_hosts_and_zones():
    # n1: round(2*ln5 + 2 + 2*ln4 + 4) = 12; n2: round(0 + 2 + 2*ln4 + 4) = 9; n3: round(ln5 + 2 + ln4 + 4) = 9.
    st, got = run(pod("p", WEB), NODES, EXISTING, objects=[SERVICE])
    assert st is None
    assert got == {"n1": 75, "n2": 100, "n3": 100}


def test_system_defaults_do_not_apply_to_a_pod_nothing_selects():
    st, _ = run(pod("p", {"app": "other"}), NODES, EXISTING, objects=[SERVICE])
    assert st == Status(Code.Skip)


def test_default_selector_comes_from_the_controlling_replica_set():
    rs = ReplicaSet({"metadata": {"name": "rs", "namespace": "default"},
                     "spec": {"selector": {"matchLabels": WEB}}})
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True}
    st, got = run(pod("p", WEB, owner=owner), NODES, EXISTING, objects=[rs])
    assert st is None and got == {"n1": 75, "n2": 100, "n3": 100}


def test_under_system_defaults_nodes_without_a_zone_still_get_hostname_spreading():
    nodes = [node("n1", "a"), node("bare")]
    st, got = run(pod("p", WEB), nodes, [pod("e1", WEB, "n1")], objects=[SERVICE])
    # Two zone domains ('a' and the bare node's empty value): n1: round(ln4 + 2 + ln4 + 4) = 9;
    # bare: hostname only, round(0 + 2) = 2.
    assert st is None and got == {"n1": 22, "bare": 100}


def test_with_explicit_constraints_nodes_missing_a_key_are_ignored_and_score_zero():
    constraints = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": WEB}}]
    nodes = [node("n1", "a"), node("n2", "b"), node("bare")]
    st, got = run(pod("p", WEB, constraints=constraints), nodes, [pod("e1", WEB, "n1")], {"defaultingType": "List"})
    # n1: round(1 * ln4 + 0) = 1, n2: 0 -> max 1, min 0.
    assert st is None and got == {"n1": 0, "n2": 100, "bare": 0}


def test_only_domains_of_candidate_nodes_are_counted():
    constraints = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": WEB}}]
    pods = [pod("e1", WEB, "n1"), pod("e2", WEB, "n3"), pod("e3", WEB, "n3")]
    st, got = run(pod("p", WEB, constraints=constraints), NODES, pods, {"defaultingType": "List"}, candidates=["n1", "n2"])
    # One domain among the candidates (zone a): weight ln3, both nodes score round(ln3) = 1.
    assert st is None and got == {"n1": 100, "n2": 100}


def test_all_zero_scores_normalize_to_the_maximum():
    constraints = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": WEB}}]
    st, got = run(pod("p", WEB, constraints=constraints), NODES, [], {"defaultingType": "List"})
    assert st is None and got == {"n1": 100, "n2": 100, "n3": 100}


def test_pre_score_skips_an_empty_cluster():
    assert run(pod("p", WEB), [], [], objects=[SERVICE])[0] == Status(Code.Skip)


@pytest.mark.parametrize("x, rounded", [(0.5, 1), (1.5, 2), (2.4999, 2), (-0.5, -1), (0.49999999999999994, 0)],
                         ids=["0.5", "1.5", "below", "negative", "just-below-half"])
def test_scores_round_half_away_from_zero_like_go(x, rounded):
    assert go_round(x) == rounded
