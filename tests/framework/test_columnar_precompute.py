"""The per-pod work the columnar path leans on, against plain reference forms:
PodTopologySpread's PreFilter counting, InterPodAffinity's PreScore sums, and the
snapshot's affinity lists kept up to date node by node instead of rebuilt."""
from __future__ import annotations

import random

import pytest

from framework.api.affinity import parse_pod_affinity, parse_selector
from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.interface import CycleState
from framework.plugins.interpodaffinity.filtering import PRE_FILTER_STATE_KEY as IPA_KEY
from framework.plugins.interpodaffinity.filtering import PreFilterState as AffinityFilterState
from framework.plugins.interpodaffinity.scoring import PRE_SCORE_STATE_KEY as IPA_SCORE_KEY
from framework.plugins.interpodaffinity.scoring import PreScoreState as AffinityScoreState
from framework.plugins.nodeaffinity.node_affinity import required_node_affinity
from framework.plugins.podtopologyspread.filtering import (
    HONOR,
    IGNORE,
    PRE_FILTER_STATE_KEY,
    Constraint,
    PreFilterState,
    count_matching_pods,
    count_pods_matching,
)
from framework.plugins.podtopologyspread.scoring import PRE_SCORE_STATE_KEY as SPREAD_SCORE_KEY
from framework.plugins.podtopologyspread.scoring import PreScoreState as SpreadScoreState
from tests.framework.test_columnar_equivalence import World, random_pod


def reference_count(state: PreFilterState, pod: Pod, nodes, required, inclusion_policies: bool, comparison_ops: bool) -> None:
    """calPreFilterState's counting written plainly, node by node."""
    constraints = state.constraints
    state.self_match = tuple(1 if c.selects(pod) else 0 for c in constraints)
    for ni in nodes:
        node = ni.node
        if node is None:
            continue
        if not inclusion_policies and not required.matches(node):
            continue
        if any(c.topology_key not in node.labels for c in constraints):
            continue
        for i, c in enumerate(constraints):
            if inclusion_policies and not c.includes_node(pod, node, required, comparison_ops):
                continue
            value = node.labels[c.topology_key]
            counts = state.tp_value_to_match_num[i]
            counts[value] = counts.get(value, 0) + count_pods_matching(ni.pods, c.selector, pod.namespace)
    state.finish_counting()


def random_constraints(rng: random.Random) -> tuple[Constraint, ...]:
    out = []
    for _ in range(rng.choice([1, 1, 2])):
        selector = rng.choice([{"matchLabels": {"app": rng.choice(["web", "db"])}}, {}, None])
        out.append(Constraint(
            max_skew=rng.choice([1, 2]),
            topology_key=rng.choice(["kubernetes.io/hostname", "topology.kubernetes.io/zone", "disk"]),
            selector=parse_selector(selector) if selector is not None else None,
            min_domains=rng.choice([1, 3]),
            node_affinity_policy=rng.choice([HONOR, IGNORE]),
            node_taints_policy=rng.choice([HONOR, IGNORE]),
        ))
    return tuple(out)


@pytest.mark.parametrize("seed", range(5), ids=lambda s: f"seed{s}")
def test_topology_spread_prefilter_counts_match_the_plain_node_by_node_count(seed):
    w = World(seed, num_nodes=80, num_existing=160)
    for i in range(30):
        pod = random_pod(w.rng, f"p{i}")
        constraints = random_constraints(w.rng)
        required = required_node_affinity(pod)
        for inclusion in (True, False):
            got, want = PreFilterState(constraints), PreFilterState(constraints)
            count_matching_pods(got, pod, w.snapshot.list(), required, inclusion, True)
            reference_count(want, pod, w.snapshot.list(), required, inclusion, True)
            assert (got.self_match, got.tp_value_to_match_num, got.min_match_num, got.domains_at_count) == \
                (want.self_match, want.tp_value_to_match_num, want.min_match_num, want.domains_at_count)


@pytest.mark.parametrize("seed", range(5), ids=lambda s: f"seed{s}")
def test_inter_pod_affinity_prescore_sums_match_processing_every_pod(seed):
    w = World(seed, num_nodes=60, num_existing=200)
    for i in range(30):
        pod = random_pod(w.rng, f"p{i}")
        terms = w.columnar.plugins["InterPodAffinity"]
        parsed = parse_pod_affinity(pod)
        pref = terms._merge_weighted(parsed.preferred_affinity)
        anti = terms._merge_weighted(parsed.preferred_anti_affinity)
        for hard_weight in (0, 1, 5):
            got = AffinityScoreState(pref, anti, None)
            got.process_nodes(w.snapshot.list(), pod, False, hard_weight)
            want = AffinityScoreState(pref, anti, None)
            for ni in w.snapshot.list():
                for existing in ni.pods_with_affinity:
                    want.process_existing_pod(existing, ni.node, pod, hard_weight)
            assert dict(got.topology_score) == dict(want.topology_score)


def affinity_lists(snap: Snapshot) -> tuple[list[str], list[str]]:
    return ([n.name for n in snap.have_pods_with_affinity_list],
            [n.name for n in snap.have_pods_with_required_anti_affinity_list])


def rebuilt(snap: Snapshot) -> tuple[list[str], list[str]]:
    lst = snap.node_info_list
    return ([n.name for n in lst if n.pods_with_affinity], [n.name for n in lst if n.pods_with_required_anti_affinity])


@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_snapshot_affinity_lists_kept_node_by_node_equal_a_rebuild(seed):
    w = World(seed, num_nodes=40, num_existing=20)
    rng = w.rng
    names = w.cache.node_names()
    placed: list[Pod] = []
    for i in range(150):
        action = rng.random()
        if action < 0.6 or not placed:
            raw = random_pod(rng, f"p{i}").raw
            pod = Pod({**raw, "spec": {**raw["spec"], "nodeName": rng.choice(names)}})
            w.cache.assume_pod(pod, pod.node_name)
            placed.append(pod)
        elif action < 0.8:
            w.cache.forget_pod(placed.pop(rng.randrange(len(placed))))
        else:
            w.cache.remove_pod(placed.pop(rng.randrange(len(placed))))
        w.refresh()
        assert affinity_lists(w.snapshot) == rebuilt(w.snapshot)
        # The lists hold the snapshot's current copies, not stale ones.
        assert all(w.snapshot.node_info_map[n.name] is n for n in w.snapshot.have_pods_with_affinity_list)


def pods_shaped_alike(w: World, plugin, shapes: list[Pod], count: int = 60):
    """Pods copied from a few shapes, each run through the plugin's PreFilter on the
    current snapshot and followed by one change to the cluster (evolve)."""
    rng = w.rng
    for i in range(count):
        shape = rng.choice(shapes)
        pod = Pod({**shape.raw, "metadata": {**shape.raw["metadata"], "name": f"p{i}", "uid": f"u{i}"}})
        state = CycleState()
        _, st = plugin.pre_filter(state, pod, w.snapshot.list())
        yield i, pod, state, st
        evolve(w, rng, i, pod)


@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_topology_spread_counts_kept_between_pods_equal_a_fresh_count_as_the_cluster_changes(seed):
    w = World(seed, num_nodes=50, num_existing=60)
    rng = w.rng
    plugin = w.columnar.plugins["PodTopologySpread"]
    shapes = [random_pod(rng, f"shape-{k}") for k in range(3)]
    shapes = [p for p in shapes if p.topology_spread_constraints] or [random_pod(random.Random(1), "x")]
    for i, pod, state, st in pods_shaped_alike(w, plugin, shapes):
        if st is None:
            got = state.read(PRE_FILTER_STATE_KEY)
            want = PreFilterState(got.constraints)
            reference_count(want, pod, w.snapshot.list(), required_node_affinity(pod), True, True)
            assert (got.tp_value_to_match_num, got.min_match_num, got.domains_at_count) == \
                (want.tp_value_to_match_num, want.min_match_num, want.domains_at_count)


def evolve(w: World, rng: random.Random, i: int, pod: Pod) -> None:
    """One change to the cluster: a pod placed, a node relabelled or removed, or a
    bound pod deleted. Snapshot NodeInfos are read-only (the NodeTable's columns
    follow them through the Cache only), so every change goes through the Cache."""
    names = w.cache.node_names()
    change = rng.random()
    if change < 0.5:
        w.cache.assume_pod(Pod({**pod.raw, "spec": {**pod.raw["spec"], "nodeName": rng.choice(names)}}),
                           rng.choice(names))
    elif change < 0.7:
        node = w.cache.nodes[rng.choice(names)].node
        labels = {**node.labels, "topology.kubernetes.io/zone": rng.choice(["z1", "z2", "z3"])}
        if rng.random() < 0.3:
            labels.pop("disk", None)
        w.cache.update_node(Node({**node.raw, "metadata": {**node.raw["metadata"], "labels": labels}}))
    elif change < 0.8:
        w.cache.remove_node(rng.choice(names))
    elif change < 0.9:
        ni = w.snapshot.list()[rng.randrange(w.snapshot.num_nodes())]
        if ni.pods:
            w.cache.remove_pod(ni.pods[0].pod)
    w.refresh()


@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_inter_pod_affinity_counts_kept_between_pods_equal_a_fresh_count_as_the_cluster_changes(seed):
    w = World(seed, num_nodes=50, num_existing=80)
    rng = w.rng
    plugin = w.columnar.plugins["InterPodAffinity"]
    shapes = [p for p in (random_pod(rng, f"shape-{k}") for k in range(12)) if p.has_pod_affinity][:3]
    assert shapes
    for i, pod, state, st in pods_shaped_alike(w, plugin, shapes):
        if st is None:
            got = state.read(IPA_KEY)
            want = AffinityFilterState(pod, got.required_affinity, got.required_anti_affinity, got.namespace_labels)
            want.count_existing_anti_affinity(w.snapshot.have_pods_with_required_anti_affinity_list)
            want.count_incoming(w.snapshot.list())
            assert (dict(got.existing_anti_affinity_counts), dict(got.affinity_counts), dict(got.anti_affinity_counts)) == \
                (dict(want.existing_anti_affinity_counts), dict(want.affinity_counts), dict(want.anti_affinity_counts))


def reference_score_count(s: SpreadScoreState, pod: Pod, all_nodes, required, require_all: bool) -> None:
    """PreScore's counting written plainly, node by node (inclusion policies on)."""
    for ni in all_nodes:
        node = ni.node
        if node is None or (require_all and any(c.topology_key not in node.labels for c in s.constraints)):
            continue
        for i, c in enumerate(s.constraints):
            if not c.includes_node(pod, node, required, True):
                continue
            counts = s.topology_value_to_pod_counts[i]
            value = node.labels.get(c.topology_key, "")
            if value in counts:
                counts[value] += count_pods_matching(ni.pods, c.selector, pod.namespace)


@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_topology_spread_prescore_counts_kept_between_pods_equal_a_fresh_count(seed):
    w = World(seed, num_nodes=50, num_existing=80)
    plugin = w.columnar.plugins["PodTopologySpread"]
    # Pods of the Service "web" without constraints of their own get the system
    # default spreading; the others bring ScheduleAnyway constraints.
    shapes = [Pod({"metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}}, "spec": {}})]
    shapes += [p for p in (random_pod(w.rng, f"shape-{k}") for k in range(30))
               if any(c.get("whenUnsatisfiable") == "ScheduleAnyway" for c in p.topology_spread_constraints)][:2]
    checked = 0
    for i, pod, state, _ in pods_shaped_alike(w, plugin, shapes):
        nodes = [ni for ni in w.snapshot.list() if w.rng.random() < 0.7]
        if plugin.pre_score(state, pod, nodes) is not None:
            continue
        got = state.read(SPREAD_SCORE_KEY)
        want = SpreadScoreState(got.constraints)
        require_all = bool(pod.topology_spread_constraints)
        want.init_domains(nodes, require_all)
        reference_score_count(want, pod, w.snapshot.list(), required_node_affinity(pod), require_all)
        assert got.topology_value_to_pod_counts == want.topology_value_to_pod_counts
        assert got.ignored_nodes == want.ignored_nodes
        checked += 1
    assert checked > 10


@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed{s}")
def test_inter_pod_affinity_prescore_scores_kept_between_pods_equal_a_fresh_pass_as_the_cluster_changes(seed):
    w = World(seed, num_nodes=50, num_existing=120)
    rng = w.rng
    plugin = w.columnar.plugins["InterPodAffinity"]
    shapes = [random_pod(rng, f"shape-{k}") for k in range(4)]
    scored = 0
    for i, pod, state, _ in pods_shaped_alike(w, plugin, shapes):
        st = plugin.pre_score(state, pod, w.snapshot.list())
        got = state.get(IPA_SCORE_KEY)
        aff = pod.affinity
        has_preferred = bool((aff.get("podAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution")
                             or (aff.get("podAntiAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution"))
        parsed = parse_pod_affinity(pod)
        want = AffinityScoreState(plugin._merge_weighted(parsed.preferred_affinity),
                                  plugin._merge_weighted(parsed.preferred_anti_affinity), None)
        candidates = w.snapshot.list() if has_preferred else w.snapshot.have_pods_with_affinity_list
        want.process_nodes(candidates, pod, has_preferred, plugin.hard_pod_affinity_weight)
        if not want.topology_score:
            assert st is not None and st.code.name == "Skip"
        else:
            assert st is None and dict(got.topology_score) == dict(want.topology_score)
            scored += 1
    assert scored  # some pods were scored, not only skipped
