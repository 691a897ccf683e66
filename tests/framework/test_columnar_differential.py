"""Differential property tests: every plugin with a columnar form against its per-node
form, node by node, exactly.

Random clusters (nodes with cpu, memory, pod slots, ephemeral storage and extended
resources, any of them 0 or absent; pods bound to them with zero or non-zero
requests, init containers, restartable init containers (sidecars) and pod
overhead), random incoming pods of the same kinds with topology spread
constraints, and random plugin arguments: every NodeResourcesFit scoring strategy
(LeastAllocated, MostAllocated, RequestedToCapacityRatio with a random shape) with
custom resources and weights, BalancedAllocation over custom resources, ignored
extended resources. Per plugin, the columnar form over the snapshot's NodeTable
must give each node the per-node method's Filter status (code and reasons) and
raw Score; through a Framework (columnar against `use_columnar = False`), the
normalised, weighted scores and totals must match too.

Example counts are lean by default; KSCHED_DIFFERENTIAL_EXAMPLES raises them.
"""
from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.config import build_frameworks, load_config
from framework.handle import FrameworkHandle
from framework.interface import CycleState, Status
from framework.node_table import columnar_table
from framework.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from framework.plugins.noderesources.fit import NodeResourcesFit
from framework.plugins.podtopologyspread.plugin import PodTopologySpread

EXAMPLES = int(os.environ.get("KSCHED_DIFFERENTIAL_EXAMPLES", "40"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

GPU = "nvidia.com/gpu"
FPGA = "example.com/fpga"
RESOURCES = ("cpu", "memory", "ephemeral-storage", GPU, FPGA)
ZONES = ("z1", "z2", "z3")
APPS = ("a", "b")

# Quantities as the API spells them, 0 and tiny values included.
_CPU = st.one_of(st.just("0"), st.integers(1, 64_000).map(lambda m: f"{m}m"))
_BYTES = st.one_of(st.just("0"), st.integers(1, 1 << 40).map(str), st.sampled_from(["1Mi", "1Gi", "64Gi"]))
_COUNT = st.integers(0, 8).map(str)
_QUANTITY = {"cpu": _CPU, "memory": _BYTES, "ephemeral-storage": _BYTES, GPU: _COUNT, FPGA: _COUNT}


@st.composite
def resource_list(draw: Any, names: tuple[str, ...] = RESOURCES) -> dict[str, str]:
    chosen = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    return {name: draw(_QUANTITY[name]) for name in chosen}


@st.composite
def node(draw: Any, i: int) -> Node:
    alloc = draw(resource_list())
    alloc["pods"] = draw(st.integers(0, 6).map(str))
    name = f"n{i}"
    labels = {"kubernetes.io/hostname": name}
    if draw(st.integers(0, 9)):
        labels["topology.kubernetes.io/zone"] = draw(st.sampled_from(ZONES))
    if draw(st.booleans()):
        labels["rack"] = draw(st.sampled_from(["r1", "r2"]))
    return Node({"metadata": {"name": name, "labels": labels},
                 "status": {"capacity": dict(alloc), "allocatable": alloc}})


@st.composite
def pod(draw: Any, name: str, node_name: str = "", spread: bool | None = None) -> Pod:
    containers = [{"name": f"c{k}", "resources": {"requests": draw(resource_list())}}
                  for k in range(draw(st.integers(1, 3)))]
    spec: dict[str, Any] = {"containers": containers}
    inits = []
    for k in range(draw(st.integers(0, 2))):
        init: dict[str, Any] = {"name": f"i{k}", "resources": {"requests": draw(resource_list())}}
        if draw(st.booleans()):
            init["restartPolicy"] = "Always"  # a sidecar
        inits.append(init)
    if inits:
        spec["initContainers"] = inits
    if draw(st.integers(0, 3)) == 0:
        spec["overhead"] = draw(resource_list(("cpu", "memory")))
    if node_name:
        spec["nodeName"] = node_name
    elif spread or (spread is None and draw(st.booleans())):
        spec["topologySpreadConstraints"] = [
            {"maxSkew": draw(st.integers(1, 3)),
             "topologyKey": draw(st.sampled_from(["topology.kubernetes.io/zone", "kubernetes.io/hostname", "rack"])),
             "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
             **({"minDomains": draw(st.integers(1, 4))} if draw(st.booleans()) else {})}
            for _ in range(draw(st.integers(1, 2)))]
    labels = {"app": draw(st.sampled_from(APPS))} if draw(st.integers(0, 3)) else {}
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": name, "labels": labels}, "spec": spec})


@st.composite
def cluster(draw: Any, spread: bool | None = None) -> tuple[Snapshot, Pod]:
    nodes = [draw(node(i)) for i in range(draw(st.integers(1, 10)))]
    bound = [draw(pod(f"e{k}", f"n{draw(st.integers(0, len(nodes) - 1))}")) for k in range(draw(st.integers(0, 16)))]
    return Snapshot.build(nodes, bound), draw(pod("incoming", spread=spread))


def _resources(draw: Any, weight: Any) -> list[dict[str, Any]]:
    names = draw(st.lists(st.sampled_from(RESOURCES), unique=True, min_size=1, max_size=len(RESOURCES)))
    return [{"name": n, "weight": draw(weight)} for n in names]


@st.composite
def fit_args(draw: Any) -> dict[str, Any]:
    strategy: dict[str, Any] = {
        "type": draw(st.sampled_from(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])),
        "resources": _resources(draw, st.integers(1, 100))}
    if strategy["type"] == "RequestedToCapacityRatio":
        utils = sorted(draw(st.lists(st.integers(0, 100), unique=True, min_size=1, max_size=4)))
        strategy["requestedToCapacityRatio"] = {
            "shape": [{"utilization": u, "score": draw(st.integers(0, 10))} for u in utils]}
    args: dict[str, Any] = {"scoringStrategy": strategy}
    if draw(st.booleans()):
        args["ignoredResources"] = [FPGA]
    return args


@st.composite
def balanced_args(draw: Any) -> dict[str, Any]:
    return {"resources": _resources(draw, st.just(1))}


def verdicts(statuses: list[Status | None]) -> list[Any]:
    return [None if s is None or s.is_success() else (s.code.name, tuple(s.reasons)) for s in statuses]


def filters_alike(plugin: Any, state: CycleState, pod_: Pod, nodes: list) -> None:
    per_node = verdicts([plugin.filter(state, pod_, ni) for ni in nodes])
    assert verdicts(list(plugin.filter_nodes(state, pod_, nodes))) == per_node


def scores_alike(plugin: Any, state: CycleState, pod_: Pod, nodes: list) -> None:
    """On the snapshot's columnar list and on a plain list (columns read from the
    nodes, as for the nodes an extender kept)."""
    per_node = [plugin.score(state, pod_, ni) for ni in nodes]
    assert all(s is None for _, s in per_node)
    for given in (nodes, list(nodes)):
        columnar, st_ = plugin.score_nodes(state, pod_, given)
        assert st_ is None
        assert [int(s) for s in columnar] == [s for s, _ in per_node]


@SETTINGS
@given(cluster(), fit_args())
def test_fit_filter_and_every_scoring_strategy_agree_node_by_node(world: tuple[Snapshot, Pod], args: dict) -> None:
    snapshot, incoming = world
    nodes = snapshot.list()
    assert columnar_table(nodes) is not None
    plugin = NodeResourcesFit.new(args, None)
    state = CycleState()
    plugin.pre_filter(state, incoming, nodes)
    filters_alike(plugin, state, incoming, nodes)
    plugin.pre_score(state, incoming, nodes)
    scores_alike(plugin, state, incoming, nodes)


@SETTINGS
@given(cluster(), balanced_args())
def test_balanced_allocation_agrees_node_by_node(world: tuple[Snapshot, Pod], args: dict) -> None:
    snapshot, incoming = world
    nodes = snapshot.list()
    plugin = NodeResourcesBalancedAllocation.new(args, None)
    state = CycleState()
    plugin.pre_score(state, incoming, nodes)  # a best-effort pod skips; both forms then score 0
    scores_alike(plugin, state, incoming, nodes)


@SETTINGS
@given(cluster(spread=True))
def test_pod_topology_spread_filter_agrees_node_by_node(world: tuple[Snapshot, Pod]) -> None:
    snapshot, incoming = world
    nodes = snapshot.list()
    plugin = PodTopologySpread.new(None, FrameworkHandle(snapshot=snapshot))
    state = CycleState()
    _, st_ = plugin.pre_filter(state, incoming, nodes)
    assert st_ is None  # the pod has DoNotSchedule constraints
    filters_alike(plugin, state, incoming, nodes)


def statuses_on_its_path(fwk: Any, state: CycleState, incoming: Pod, nodes: list) -> list[Status]:
    """Each node's Filter status (with the pods nominated to it) on the Framework's
    path: columnar when it uses the columnar forms, else node by node."""
    if fwk.use_columnar:
        assert fwk.can_filter_columnar(state)
        return fwk.run_filter_nodes(state, incoming, nodes)
    return [fwk.run_filter_with_nominated_pods(state, incoming, ni) for ni in nodes]


def profile(fit: dict, balanced: dict) -> dict[str, Any]:
    return {"profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
        {"name": "NodeResourcesFit", "args": fit},
        {"name": "NodeResourcesBalancedAllocation", "args": balanced}]}]}


@SETTINGS
@given(cluster(), fit_args(), balanced_args())
def test_a_non_default_profile_filters_and_scores_alike_on_both_paths(world: tuple[Snapshot, Pod], fit: dict,
                                                                       balanced: dict) -> None:
    """The whole profile: statuses, then normalised and weighted scores per plugin
    and totals over the feasible nodes."""
    snapshot, incoming = world
    handle = FrameworkHandle(snapshot=snapshot)
    cfg = load_config(profile(fit, balanced))
    columnar = build_frameworks(cfg, handle)["default-scheduler"]
    per_node = build_frameworks(cfg, handle)["default-scheduler"]
    per_node.use_columnar = False
    nodes = snapshot.list()
    outcome = []
    for fwk in (columnar, per_node):
        state = CycleState()
        _, pst, _ = fwk.run_pre_filter(state, incoming)
        if not pst.is_success():
            outcome.append((pst.code.name, tuple(pst.reasons)))
            continue
        statuses = statuses_on_its_path(fwk, state, incoming, nodes)
        feasible = [ni for ni, s in zip(nodes, statuses) if s.is_success()]
        scored: Any = None
        if feasible:
            assert fwk.run_pre_score(state, incoming, feasible).is_success()
            scores, sst = fwk.run_score(state, incoming, feasible)
            assert sst.is_success()
            scored = [(n.name, n.scores, n.total_score) for n in scores]
        outcome.append(([(s.code.name, tuple(s.reasons), s.plugin) for s in statuses], scored))
    assert outcome[0] == outcome[1]
