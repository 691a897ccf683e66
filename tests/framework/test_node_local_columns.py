"""A group cycle's node-local columns (framework/runtime/node_local.py): the members
of a gang land exactly where the member-by-member path puts them (the same windows,
the same scores, the same verdicts on the nodes that failed, the same tie-breaks with
a seeded rng), while the Filter and Score plugins run once per pod shape for the
group instead of once per member."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from framework.algorithm import SchedulingAlgorithm
from framework.api.objects import Node, Pod
from framework.api.workload_api import SchedulingPodGroup
from framework.cache import Cache, Snapshot
from framework.config import build_frameworks, full_registry, load_config
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import SignPurpose, Status
from framework.node_info import NodeInfo
from framework.plugins import Registry
from framework.runtime.node_local import NodeLocalCounts
from framework.runtime.window_positions import union as _union
from framework.workload.group_cycle import GroupPlacement, place_group
from framework.workload.member_placer import CachePlacer, columns_world
from framework.workload.policy import group_policy_of

NS = "default"
CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


@dataclass(frozen=True)
class NodeSpec:
    cpu: int  # milli
    used: int  # milli already requested on it
    unschedulable: bool = False
    hard_taint: bool = False
    prefer_taints: int = 0
    zone: str = "a"


@dataclass(frozen=True)
class Shape:
    cpu: int  # milli
    tolerate_prefer: bool = False
    prefer_zone: str = ""


def node(i: int, spec: NodeSpec) -> Node:
    alloc = {"cpu": f"{spec.cpu}m", "memory": "32Gi", "pods": "110"}
    taints = [{"key": f"soft{k}", "value": "x", "effect": "PreferNoSchedule"} for k in range(spec.prefer_taints)]
    if spec.hard_taint:
        taints.append({"key": "hard", "value": "x", "effect": "NoSchedule"})
    return Node({"metadata": {"name": f"n{i:03d}", "labels": {"kubernetes.io/hostname": f"n{i:03d}", "zone": spec.zone}},
                 "spec": {"unschedulable": spec.unschedulable, "taints": taints},
                 "status": {"capacity": alloc, "allocatable": alloc}})


def member(group: str, i: int, shape: Shape) -> Pod:
    spec: dict[str, Any] = {"schedulingGroup": {"podGroupName": group},
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{shape.cpu}m",
                                                                                    "memory": "100Mi"}}}]}
    if shape.tolerate_prefer:
        spec["tolerations"] = [{"key": "soft0", "operator": "Exists", "effect": "PreferNoSchedule"}]
    if shape.prefer_zone:
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [
                {"key": "zone", "operator": "In", "values": [shape.prefer_zone]}]}}]}}
    return Pod({"metadata": {"name": f"{group}-{i}", "namespace": NS, "uid": f"{group}-{i}", "labels": {"gang": group}},
                "spec": spec})


def running(i: int, node_name: str, cpu: int) -> Pod:
    return Pod({"metadata": {"name": f"run-{i}", "namespace": NS, "uid": f"run-{i}"},
                "spec": {"nodeName": node_name,
                         "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{cpu}m"}}}]}})


def gang(name: str, min_count: int) -> SchedulingPodGroup:
    return SchedulingPodGroup({
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": name, "namespace": NS},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}},
                 "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": name}}}})


class Recording(SchedulingAlgorithm):
    """The real algorithm, recording each member's window (the nodes it scored) and
    their totals."""

    def __init__(self, seed: int) -> None:
        super().__init__(random.Random(seed))
        self.scored: list[tuple[list[str], list[int]]] = []

    def prioritize_nodes(self, fwk: Any, state: Any, pod: Pod, nodes: Any, with_extenders: bool = False) -> Any:
        scores = super().prioritize_nodes(fwk, state, pod, nodes, with_extenders)
        self.scored.append(([ni.name for ni in nodes], [int(s.total_score) for s in scores]))
        return scores


@dataclass
class Run:
    placements: list[tuple[dict[str, str], str]] = field(default_factory=list)
    failures: list[dict[str, dict[str, str]]] = field(default_factory=list)
    scored: list[tuple[list[str], list[int]]] = field(default_factory=list)
    placer: CachePlacer | None = None


def place(nodes: list[NodeSpec], groups: list[tuple[int, list[Shape]]], seed: int, columns: bool,
          zone: str = "", config: dict[str, Any] = CONFIG, registry: Registry | None = None,
          between: Callable[[InMemoryObjects, int], None] | None = None) -> Run:
    """Each group placed in turn (kept when feasible) in one cluster, confined to the
    nodes of `zone` when given (as a topology domain is), the columns kept across
    groups as the scheduler keeps them; `between(objects, k)` runs before group k;
    what happened."""
    node_objs = [node(i, spec) for i, spec in enumerate(nodes)]
    pgs = [gang(f"g{k}", min_count) for k, (min_count, _) in enumerate(groups)]
    pods = [[member(f"g{k}", i, shape) for i, shape in enumerate(shapes)] for k, (_, shapes) in enumerate(groups)]
    cache, snapshot = Cache(), Snapshot()
    for n in node_objs:
        cache.add_node(n)
    for i, (n, spec) in enumerate(zip(node_objs, nodes)):
        if spec.used:
            cache.add_pod(running(i, n.name, spec.used))
    objects = InMemoryObjects([*node_objs, *pgs, *(p for ps in pods for p in ps)])
    handle = FrameworkHandle(snapshot=snapshot, objects=objects, clock=lambda: 0.0)
    fwk = build_frameworks(load_config(config), handle, registry)["default-scheduler"]
    algorithm = Recording(seed)
    placer = CachePlacer(fwk, algorithm, cache, snapshot)
    if not columns:
        placer.columns = None
    run = Run(placer=placer)
    domain = {n.name for n, spec in zip(node_objs, nodes) if spec.zone == zone} if zone else None
    for k, (pg, members) in enumerate(zip(pgs, pods)):
        if between is not None:
            between(objects, k)
        placer.start_group(len(members), columns_world(objects))
        result: GroupPlacement = place_group(group_policy_of(pg), members, placer, node_names=domain)
        run.placements.append((dict(result.placed), result.status.message()))
        run.failures.append({uid: {n: s.message() for n, s in t.fit_error.diagnosis.node_to_status.statuses.items()}
                             for uid, t in placer.tries.items() if t.fit_error is not None})
    run.scored = algorithm.scored
    return run


def assert_same(nodes: list[NodeSpec], groups: list[tuple[int, list[Shape]]], seed: int, zone: str = "",
                config: dict[str, Any] = CONFIG, registry: Registry | None = None,
                between: Callable[[InMemoryObjects, int], None] | None = None) -> Run:
    by_member = place(nodes, groups, seed, columns=False, zone=zone, config=config, registry=registry,
                      between=between)
    by_columns = place(nodes, groups, seed, columns=True, zone=zone, config=config, registry=registry,
                       between=between)
    assert by_columns.scored == by_member.scored
    assert by_columns.placements == by_member.placements
    assert by_columns.failures == by_member.failures
    return by_columns


node_specs = st.builds(
    NodeSpec,
    cpu=st.sampled_from([500, 1000, 2000, 4000]),
    used=st.sampled_from([0, 0, 0, 300, 900]),
    unschedulable=st.sampled_from([False, False, False, True]),
    hard_taint=st.sampled_from([False, False, False, True]),
    prefer_taints=st.sampled_from([0, 0, 1, 2]),
    zone=st.sampled_from(["a", "b"]),
)
shapes = st.builds(Shape, cpu=st.sampled_from([100, 300, 700]), tolerate_prefer=st.booleans(),
                   prefer_zone=st.sampled_from(["", "", "a"]))


@st.composite
def clusters(draw: Any) -> tuple[list[NodeSpec], list[tuple[int, list[Shape]]], int, str]:
    nodes = draw(st.lists(node_specs, min_size=90, max_size=300))
    groups = []
    for _ in range(draw(st.integers(1, 3))):
        kinds = draw(st.lists(shapes, min_size=1, max_size=2))
        size = draw(st.integers(1, 8))
        members = [kinds[draw(st.integers(0, len(kinds) - 1))] for _ in range(size)]
        groups.append((draw(st.integers(1, size)), members))
    return nodes, groups, draw(st.integers(0, 1 << 16)), draw(st.sampled_from(["", "", "a"]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters())
def test_members_land_where_the_member_by_member_path_puts_them_in_the_cluster_or_a_domain(case: Any) -> None:
    nodes, groups, seed, zone = case
    assert_same(nodes, groups, seed, zone)


def test_a_gang_of_one_shape_filters_and_scores_once_for_all_its_members() -> None:
    nodes = [NodeSpec(cpu=4000, used=0, prefer_taints=i % 3 == 0) for i in range(1000)]
    run = assert_same(nodes, [(2, [Shape(cpu=100)] * 2)], seed=7)
    counts = run.placer.columns.counts
    # 1,000 nodes: each member looks for 420 (numFeasibleNodesToFind). The first one
    # filters ahead for both (840 nodes) in one call, and scores them in one call per
    # node-local scorer (Fit, BalancedAllocation, TaintToleration); the second reads
    # its window from the columns.
    assert counts.filter_calls == 1
    assert counts.score_calls == 3
    assert counts.rows_computed == 4 * 840
    assert counts.rows_read == 2 * 420 * 4  # each member's window: its verdicts and three raw scores


def test_a_window_that_comes_back_to_a_node_the_group_assumed_on_recomputes_it() -> None:
    # 120 nodes, 100 looked for per member: the windows wrap around and meet the
    # nodes earlier members were assumed on, whose Fit verdict and scores changed.
    nodes = [NodeSpec(cpu=1000, used=0) for _ in range(120)]
    run = assert_same(nodes, [(6, [Shape(cpu=700)] * 6)], seed=3)
    counts = run.placer.columns.counts
    assert counts.filter_calls > 1 and counts.rows_computed > 4 * 120
    placed = run.placements[0][0]
    assert len(set(placed.values())) == 6  # 700m of 1000m: one member per node


def test_a_domain_no_larger_than_a_window_is_filtered_and_scored_member_by_member() -> None:
    # 60 nodes: each member's window is the whole view, which holds the node the member
    # before was assumed on, so the columns would save no call.
    nodes = [NodeSpec(cpu=4000, used=0) for _ in range(60)]
    run = assert_same(nodes, [(4, [Shape(cpu=100)] * 4)], seed=5)
    assert run.placer.columns.counts == NodeLocalCounts()


def test_failed_nodes_keep_their_verdicts_and_a_member_that_fits_nowhere_gets_the_same_diagnosis() -> None:
    nodes = [NodeSpec(cpu=1000, used=0, unschedulable=i % 4 == 0, hard_taint=i % 5 == 0) for i in range(150)]
    nodes += [NodeSpec(cpu=300, used=0) for _ in range(30)]
    run = assert_same(nodes, [(1, [Shape(cpu=900)] * 3 + [Shape(cpu=2000)])], seed=11)
    assert run.failures[0]  # the 2000m member fits nowhere: its diagnosis is the per-member one


class WildScore:
    """A node-local scorer whose raw score of one node is out of range."""

    name = "WildScore"
    score_node_local = True
    wild = "n500"

    @classmethod
    def new(cls, args: Any, handle: Any) -> "WildScore":
        return cls()

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> tuple[()]:
        return ()

    def score(self, state: Any, pod: Pod, ni: NodeInfo) -> tuple[int, Status | None]:
        return (101 if ni.name == self.wild else 50), None

    def score_nodes(self, state: Any, pod: Pod, nodes: list[NodeInfo]) -> tuple[list[int], Status | None]:
        return [101 if ni.name == self.wild else 50 for ni in nodes], None


def test_a_raw_score_out_of_range_in_a_column_fails_the_member_that_reads_it_as_its_own_pass_does() -> None:
    # The first member scores its window and the second's ahead (n500 among them); the
    # range is checked as the values are stored, so the second member, reading n500
    # from the column, fails with the per-member pass's error.
    registry = full_registry()
    registry.register("WildScore", WildScore.new)
    config = {**CONFIG, "profiles": [{"schedulerName": "default-scheduler",
                                      "plugins": {"multiPoint": {"enabled": [{"name": "WildScore"}]}}}]}
    nodes = [NodeSpec(cpu=4000, used=0) for _ in range(1000)]
    run = assert_same(nodes, [(2, [Shape(cpu=100)] * 2)], seed=7, config=config, registry=registry)
    assert run.placer is not None and run.placer.columns is not None and run.placer.columns.counts.score_calls
    assert 'plugin "WildScore" returns an invalid score 101' in run.placements[0][1]


@settings(deadline=None)  # no timing threshold: a loaded machine made its first example miss 200 ms
@given(st.integers(1, 60).flatmap(lambda n: st.tuples(
    st.just(n), st.sets(st.integers(0, n - 1)), st.sets(st.integers(0, n - 1)))))
def test_two_position_sets_united_by_a_mask_are_numpys_union(case: tuple[int, set[int], set[int]]) -> None:
    n, a, b = case
    left, right = np.array(sorted(a), dtype=np.intp), np.array(sorted(b), dtype=np.intp)
    assert _union(left, right, n).tolist() == np.union1d(left, right).tolist()
