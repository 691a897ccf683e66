"""The plugins' columnar form (filter_nodes / score_nodes) against their per-node forms.

Randomized clusters (seeded): nodes with varied allocatable, labels, taints,
images and cordons; existing pods with varied requests, host ports, (anti-)affinity
and spread labels; some pods nominated to nodes. Every incoming pod is run through
a default-profile Framework twice, once forced onto the per-node calls
(`use_columnar = False`), and both must give the same filter status per node, the same
score per plugin per node, the same totals and the same chosen node with the same
random source, pod after pod as the cluster fills up.
"""
from __future__ import annotations

import random
from typing import Any

import pytest

from framework.algorithm import SchedulingAlgorithm
from framework.attempt_outcome import FitError
from framework.api.objects import Node, Pod, Service
from framework.cache import Cache, PodInfo, Snapshot
from framework.config import build_frameworks, load_config
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import CycleState, Status
from framework.runtime import Framework

ZONES = ("z1", "z2", "z3")
APPS = ("web", "db", "cache")
IMAGES = {"img/a:1": 300 * 1024 * 1024, "img/b:1": 50 * 1024 * 1024, "img/c": 900 * 1024 * 1024}
TAINTS = (
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "spot", "effect": "PreferNoSchedule"},
    {"key": "flaky", "effect": "PreferNoSchedule"},
    {"key": "maint", "effect": "NoExecute"},
)


# Plugin arguments of the profiles the tests run: upstream's defaults and others
# that score extended and ephemeral resources with other strategies and weights.
PROFILES: dict[str, list[dict[str, Any]]] = {
    "default": [],
    "most-allocated-gpu": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated", "resources": [
            {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 3}, {"name": "example.com/gpu", "weight": 5}]}}},
        {"name": "NodeResourcesBalancedAllocation", "args": {"resources": [
            {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "example.com/gpu", "weight": 1}]}}],
    "ratio-storage": [
        {"name": "NodeResourcesFit", "args": {"ignoredResources": ["example.com/gpu"], "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 2}, {"name": "ephemeral-storage", "weight": 7}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 40, "score": 3},
                                                   {"utilization": 100, "score": 8}]}}}},
        {"name": "NodeResourcesBalancedAllocation", "args": {"resources": [
            {"name": "cpu", "weight": 1}, {"name": "ephemeral-storage", "weight": 1}]}}],
    "least-allocated-nvidia": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "LeastAllocated", "resources": [
            {"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 5}]}}},
        {"name": "NodeResourcesBalancedAllocation", "args": {"resources": [
            {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 1}]}}],
}
# The extended resource the random nodes offer and pods request, per profile.
GPU = {"least-allocated-nvidia": "nvidia.com/gpu"}


# --- random objects ----------------------------------------------------------------------------

def random_node(rng: random.Random, i: int, gpu: str = "example.com/gpu") -> Node:
    name = f"node-{i}"
    alloc = {
        "cpu": rng.choice(["1", "2", "4", "8", "500m"]),
        "memory": rng.choice(["2Gi", "4Gi", "16Gi", "32Gi"]),
        "pods": str(rng.choice([2, 5, 10, 110])),
    }
    if rng.random() < 0.3:
        alloc["ephemeral-storage"] = rng.choice(["1Gi", "10Gi"])
    if rng.random() < 0.2:
        alloc[gpu] = str(rng.choice([1, 2]))
    labels = {"kubernetes.io/hostname": name}
    if rng.random() < 0.9:
        labels["topology.kubernetes.io/zone"] = rng.choice(ZONES)
    if rng.random() < 0.5:
        labels["disk"] = rng.choice(["ssd", "hdd"])
    spec: dict[str, Any] = {}
    taints = [t for t in TAINTS if rng.random() < 0.15]
    if taints:
        spec["taints"] = taints
    if rng.random() < 0.05:
        spec["unschedulable"] = True
    images = [{"names": [n], "sizeBytes": size} for n, size in IMAGES.items() if rng.random() < 0.3]
    return Node({"metadata": {"name": name, "labels": labels}, "spec": spec,
                 "status": {"capacity": dict(alloc), "allocatable": dict(alloc), "images": images}})


def _term(rng: random.Random, app: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}},
            "topologyKey": rng.choice(["kubernetes.io/hostname", "topology.kubernetes.io/zone"])}


def random_affinity(rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if rng.random() < 0.25:
        out["nodeAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [
                {"key": "disk", "operator": "In", "values": [rng.choice(["ssd", "hdd"])]}]}}]}
        if rng.random() < 0.4:
            out["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                                       "values": rng.sample(ZONES, 2)}]}]}
    for kind in ("podAffinity", "podAntiAffinity"):
        if rng.random() < 0.2:
            out[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(rng, rng.choice(APPS))]}
        if rng.random() < 0.25:
            out.setdefault(kind, {})["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _term(rng, rng.choice(APPS))}]
    return out


def random_pod(rng: random.Random, name: str, node_name: str = "", gpu: str = "example.com/gpu") -> Pod:
    requests: dict[str, str] = {}
    if rng.random() < 0.8:
        requests["cpu"] = rng.choice(["50m", "100m", "250m", "1", "3"])
    if rng.random() < 0.8:
        requests["memory"] = rng.choice(["64Mi", "500Mi", "1Gi", "6Gi"])
    if rng.random() < 0.1:
        requests["ephemeral-storage"] = "2Gi"
    if rng.random() < 0.05:
        requests[gpu] = "1"
    container: dict[str, Any] = {"name": "c", "image": rng.choice([*IMAGES, "img/d:2"]),
                                 "resources": {"requests": requests}}
    if rng.random() < 0.1:
        container["ports"] = [{"containerPort": 80, "hostPort": rng.choice([8080, 9090])}]
    spec: dict[str, Any] = {"containers": [container], "priority": rng.choice([0, 10])}
    if node_name:
        spec["nodeName"] = node_name
    if rng.random() < 0.1:
        spec["nodeSelector"] = {"disk": rng.choice(["ssd", "hdd"])}
    tolerations = [{"key": t["key"], "operator": "Exists", "effect": t["effect"]} for t in TAINTS if rng.random() < 0.3]
    if tolerations:
        spec["tolerations"] = tolerations
    affinity = random_affinity(rng)
    if affinity:
        spec["affinity"] = affinity
    if rng.random() < 0.25:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": rng.choice([1, 2]),
            "topologyKey": rng.choice(["kubernetes.io/hostname", "topology.kubernetes.io/zone"]),
            "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
            "labelSelector": {"matchLabels": {"app": rng.choice(APPS)}}}]
    labels = {"app": rng.choice(APPS)} if rng.random() < 0.8 else {}
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels},
                "spec": spec})


class World:
    """A random cluster in a Cache, its nominated pods, and one default-profile
    Framework per path over a shared handle."""

    def __init__(self, seed: int, num_nodes: int, num_existing: int, pct: int | None = None,
                 profile: str = "default") -> None:
        self.rng = random.Random(seed)
        rng = self.rng
        self.gpu = gpu = GPU.get(profile, "example.com/gpu")
        self.cache = Cache()
        for i in range(num_nodes):
            self.cache.add_node(random_node(rng, i, gpu))
        names = self.cache.node_names()
        for i in range(num_existing):
            self.cache.add_pod(random_pod(rng, f"existing-{i}", rng.choice(names), gpu))
        self.nominated: dict[str, list[PodInfo]] = {}
        for i in range(max(1, num_nodes // 20)):
            self.nominated.setdefault(rng.choice(names), []).append(PodInfo(random_pod(rng, f"nominated-{i}", gpu=gpu)))
        self.snapshot = Snapshot()
        self.cache.update_snapshot(self.snapshot)
        # A Service selecting one app, so pods without constraints get the system default spreading.
        service = Service({"kind": "Service", "metadata": {"name": "web", "namespace": "default"},
                           "spec": {"selector": {"app": "web"}}})
        # Odd seeds also tell the handle which nodes have nominated pods (the runtime
        # then asks no node by node); even seeds leave it to ask.
        self.handle = FrameworkHandle(snapshot=self.snapshot, objects=InMemoryObjects([service]),
                                      nominated=lambda n: list(self.nominated.get(n, [])),
                                      nominated_nodes=(lambda: self.nominated.keys()) if seed % 2 else None)
        cfg = load_config({**({"percentageOfNodesToScore": pct} if pct is not None else {}),
                           "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": PROFILES[profile]}]})
        self.columnar = build_frameworks(cfg, self.handle)["default-scheduler"]
        self.per_node = build_frameworks(cfg, self.handle)["default-scheduler"]
        self.per_node.use_columnar = False

    def refresh(self) -> None:
        self.cache.update_snapshot(self.snapshot)
        self.handle.set_snapshot(self.snapshot)


# --- what each path decides --------------------------------------------------------------------

def verdict(st: Status) -> tuple[str, tuple[str, ...], str]:
    return st.code.name, tuple(st.reasons), st.plugin


def filter_statuses(fwk: Framework, pod: Pod, snapshot: Snapshot) -> tuple[dict[str, Any], CycleState]:
    state = CycleState()
    _, st, _ = fwk.run_pre_filter(state, pod)
    if not st.is_success():
        return {"preFilter": verdict(st)}, state
    nodes = snapshot.list()
    if fwk.use_columnar:
        assert fwk.can_filter_columnar(state)
        statuses = fwk.run_filter_nodes(state, pod, nodes)
    else:
        statuses = [fwk.run_filter_with_nominated_pods(state, pod, ni) for ni in nodes]
    return {ni.name: verdict(s) for ni, s in zip(nodes, statuses)}, state


def plugin_scores(fwk: Framework, state: CycleState, pod: Pod, nodes: list) -> dict[str, Any]:
    """Raw score per plugin per node, straight from the plugins (columnar form when the
    Framework uses them), then the runtime's normalized, weighted totals."""
    st = fwk.run_pre_score(state, pod, nodes)
    if not st.is_success():
        return {"preScore": verdict(st)}
    raw: dict[str, Any] = {}
    for pl in fwk.scoring.score_plugins:
        if pl.name in state.skip_score_plugins:
            continue
        if fwk.use_columnar:
            scores, sst = pl.score_nodes(state, pod, nodes)
            raw[pl.name] = (list(scores), None if sst is None else verdict(sst))
        else:
            pairs = [pl.score(state, pod, ni) for ni in nodes]
            first_error = next((s for _, s in pairs if s is not None), None)
            raw[pl.name] = ([s for s, _ in pairs] if first_error is None else [],
                            None if first_error is None else verdict(first_error))
    totals, tst = fwk.run_score(state, pod, nodes)
    return {"raw": raw, "status": verdict(tst),
            "totals": [(n.name, n.scores, n.total_score) for n in totals]}


def schedule(fwk: Framework, pod: Pod, snapshot: Snapshot, seed: int, start: int) -> dict[str, Any]:
    algo = SchedulingAlgorithm(random.Random(seed))
    algo.next_start_node_index = start
    try:
        r = algo.schedule_pod(fwk, CycleState(), pod, snapshot)
    except FitError as e:
        out: dict[str, Any] = {"fitError": e.message(),
                               "statuses": {n: verdict(s) for n, s in e.diagnosis.node_to_status.items()}}
    else:
        out = {"host": r.suggested_host, "evaluated": r.evaluated_nodes, "feasible": r.feasible_nodes}
    out["next_start"] = algo.next_start_node_index
    return out


# --- the tests ------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed, profile", [(0, "default"), (1, "default"), (2, "default"), (3, "most-allocated-gpu"),
                                           (4, "most-allocated-gpu"), (5, "ratio-storage"), (6, "ratio-storage"),
                                           (7, "least-allocated-nvidia"), (8, "least-allocated-nvidia")],
                         ids=lambda x: str(x))
def test_filter_statuses_and_plugin_scores_are_the_same_on_both_paths(seed, profile):
    w = World(seed, num_nodes=60, num_existing=90, profile=profile)
    for i in range(25):
        pod = random_pod(w.rng, f"incoming-{i}", gpu=w.gpu)
        per_node, state_a = filter_statuses(w.per_node, pod, w.snapshot)
        columnar, state_b = filter_statuses(w.columnar, pod, w.snapshot)
        assert columnar == per_node
        feasible = [n for n in w.snapshot.list() if per_node.get(n.name, ("",))[0] == "Success"]
        if feasible:
            assert plugin_scores(w.columnar, state_b, pod, feasible) == plugin_scores(w.per_node, state_a, pod, feasible)


@pytest.mark.parametrize(
    "seed, num_nodes, pct, profile",
    [(0, 30, None, "default"), (1, 150, None, "default"), (2, 260, None, "default"), (3, 260, 20, "default"),
     (4, 400, 10, "default"), (5, 120, 100, "default"), (6, 150, None, "most-allocated-gpu"),
     (7, 150, None, "ratio-storage"), (8, 150, None, "least-allocated-nvidia")],
    ids=lambda x: str(x),
)
def test_pods_scheduled_one_after_another_land_on_the_same_nodes_on_both_paths(seed, num_nodes, pct, profile):
    w = World(seed, num_nodes=num_nodes, num_existing=num_nodes, pct=pct, profile=profile)
    start = 0
    placed = 0
    for i in range(40):
        pod = random_pod(w.rng, f"incoming-{i}", gpu=w.gpu)
        per_node = schedule(w.per_node, pod, w.snapshot, seed * 1000 + i, start)
        columnar = schedule(w.columnar, pod, w.snapshot, seed * 1000 + i, start)
        assert columnar == per_node
        start = columnar["next_start"]
        if "host" in columnar:
            placed += 1
            bound = Pod({**pod.raw, "spec": {**pod.raw["spec"], "nodeName": columnar["host"]}})
            w.cache.assume_pod(bound, columnar["host"])
            w.refresh()
    assert placed > 0


def test_a_plugin_without_columnar_forms_keeps_the_per_node_path():
    w = World(7, num_nodes=20, num_existing=10)

    class PerNodeOnly:
        name = "PerNodeOnly"

        def filter(self, state, pod, node_info):
            return None

    w.columnar.filtering.filter_plugins = [*w.columnar.filtering.filter_plugins, PerNodeOnly()]
    state = CycleState()
    w.columnar.run_pre_filter(state, random_pod(w.rng, "p"))
    assert not w.columnar.can_filter_columnar(state)


class Forwarding:
    """A proxy in front of a plugin that forwards every attribute it does not set."""

    def __init__(self, plugin, own=()):
        self._plugin = plugin
        self.name = plugin.name
        for method in own:
            setattr(self, method, getattr(plugin, method))

    def __getattr__(self, attr):
        return getattr(self._plugin, attr)


@pytest.mark.parametrize(
    "own, columnar",
    [((), False), (("filter",), False), (("filter", "filter_nodes"), True)],
    ids=["forwards-everything", "sets-filter-only", "sets-filter-nodes"],
)
def test_a_proxy_gets_the_columnar_path_only_when_it_offers_the_columnar_form_itself(own, columnar):
    w = World(8, num_nodes=20, num_existing=10)
    w.columnar.filtering.filter_plugins = [Forwarding(pl, own) for pl in w.columnar.filtering.filter_plugins]
    state = CycleState()
    w.columnar.run_pre_filter(state, random_pod(w.rng, "p"))
    assert w.columnar.can_filter_columnar(state) is columnar


class Flaky:
    """A filter/score plugin whose columnar form misbehave in the ways given."""

    name = "Flaky"

    def __init__(self, raise_in_columnar=False, short=False, fail_on=""):
        self.raise_in_columnar, self.short, self.fail_on = raise_in_columnar, short, fail_on

    def filter(self, state, pod, node_info):
        if node_info.name == self.fail_on:
            raise RuntimeError(f"boom on {node_info.name}")
        return None

    def filter_nodes(self, state, pod, nodes):
        if self.raise_in_columnar:
            raise RuntimeError("columnar boom")
        return [None] * (len(nodes) - 1 if self.short else len(nodes))

    def score(self, state, pod, node_info):
        return 0, None

    def score_nodes(self, state, pod, nodes):
        return [0] * (len(nodes) - 1 if self.short else len(nodes)), None


def test_an_exception_in_a_columnar_filter_is_reported_as_the_per_node_filter_reports_it():
    w = World(9, num_nodes=10, num_existing=0)
    pod = Pod({"metadata": {"name": "p", "namespace": "default", "uid": "p"}, "spec": {"containers": [{"name": "c"}]}})
    passing = [n for n, v in filter_statuses(w.per_node, pod, w.snapshot)[0].items() if v[0] == "Success"]
    name = passing[len(passing) // 2]
    for fwk in (w.columnar, w.per_node):
        fwk.filtering.filter_plugins = [*fwk.filtering.filter_plugins, Flaky(raise_in_columnar=True, fail_on=name)]
    assert filter_statuses(w.columnar, pod, w.snapshot)[0] == filter_statuses(w.per_node, pod, w.snapshot)[0]
    assert filter_statuses(w.columnar, pod, w.snapshot)[0][name][0] == "Error"


def test_a_columnar_form_answering_for_too_few_nodes_is_an_error():
    w = World(10, num_nodes=10, num_existing=0)
    w.nominated.clear()
    w.columnar.filtering.filter_plugins = [*w.columnar.filtering.filter_plugins, Flaky(short=True)]
    w.columnar.scoring.score_plugins = [Flaky(short=True)]
    pod = random_pod(w.rng, "p")
    statuses, state = filter_statuses(w.columnar, pod, w.snapshot)
    assert {v[0] for v in statuses.values()} <= {"Error", "UnschedulableAndUnresolvable", "Unschedulable"}
    _, st = w.columnar.run_score(CycleState(), pod, w.snapshot.list())
    assert st.code.name == "Error" and "returned 9 scores for 10 nodes" in st.message()
