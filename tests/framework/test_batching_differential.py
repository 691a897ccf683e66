"""Opportunistic batching places pods as well as the full path does.

Random clusters and random runs of pod templates (consecutive pods often share a
signature), scheduled with the gate on. Before each pod, the gate-off path scores
it on the very same snapshot. Upstream's batching may pick another node than the
gate-off path among nodes of equal score (each path breaks ties at random, and a
hint is the head of a list sorted one cycle earlier), so the placements are not
compared by name: the node batching chose must be feasible and have the highest
total score the full path gives, and a pod batching cannot place must be one the
full path cannot place either. Clusters stay under 100 nodes, so the full path
scores every feasible node (percentageOfNodesToScore does not cut the search,
which would make the lists differ legitimately).

KSCHED_BATCH_EXAMPLES raises the number of examples."""
from __future__ import annotations

import os
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from framework.algorithm import SchedulingAlgorithm
from framework.attempt_outcome import FitError
from framework.api.objects import Node, Pod
from framework.batching import Batching
from framework.cache import Cache, Snapshot
from framework.config import build_frameworks, load_config
from framework.handle import FrameworkHandle
from framework.interface import CycleState
from tests.framework.test_batching import NO_DEFAULT_SPREAD, PROFILE

EXAMPLES = int(os.environ.get("KSCHED_BATCH_EXAMPLES", "20"))


def node(i: int, cpu: str, mem: str, zone: str, images: bool) -> Node:
    alloc = {"cpu": cpu, "memory": mem, "pods": "110"}
    status: dict[str, Any] = {"capacity": alloc, "allocatable": alloc}
    if images:
        status["images"] = [{"names": ["app:1"], "sizeBytes": 300 * 1024 * 1024}]
    return Node({"kind": "Node", "metadata": {"name": f"n{i}", "labels": {"zone": zone, "kubernetes.io/hostname": f"n{i}"}},
                 "status": status})


def pod(name: str, t: dict[str, Any]) -> Pod:
    container: dict[str, Any] = {"name": "c", "image": t["image"],
                                 "resources": {"requests": {"cpu": t["cpu"], "memory": t["mem"]}}}
    if t["port"]:
        container["ports"] = [{"containerPort": 80, "hostPort": 80}]
    spec: dict[str, Any] = {"containers": [container]}
    if t["zone"]:
        spec["nodeSelector"] = {"zone": t["zone"]}
    return Pod({"kind": "Pod", "metadata": {"name": name, "uid": name, "labels": {"t": t["label"]}}, "spec": spec})


templates = st.fixed_dictionaries({
    "cpu": st.sampled_from(["0", "100m", "1", "3"]),  # 0: zero-request pods (scored at the non-zero defaults)
    "mem": st.sampled_from(["0", "100Mi", "1Gi", "6Gi"]),
    "port": st.booleans(),
    "zone": st.sampled_from(["", "a"]),
    "image": st.sampled_from(["app:1", "other:2"]),
    "label": st.sampled_from(["x", "y"]),
})
nodes_st = st.lists(st.tuples(st.sampled_from(["2", "4", "8"]), st.sampled_from(["4Gi", "32Gi"]),
                              st.sampled_from(["a", "b"]), st.booleans()), min_size=1, max_size=12)
# Runs of one template: (template index, how many pods in a row).
runs_st = st.lists(st.tuples(st.integers(0, 3), st.integers(1, 8)), min_size=1, max_size=6)


def full_path_best(fwk: Any, p: Pod, snapshot: Snapshot) -> dict[str, int] | None:
    """Every feasible node's total score with the gate off (None: nothing fits)."""
    algorithm = SchedulingAlgorithm(random.Random(0))
    state = CycleState()
    try:
        feasible, _ = algorithm.find_nodes_that_fit_pod(fwk, state, p, snapshot).send(None)
    except StopIteration as done:
        feasible, _ = done.value
    if not feasible:
        return None
    scores = algorithm.prioritize_nodes(fwk, state, p, feasible)
    return {s.name: s.total_score for s in scores}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(nodes=nodes_st, tmpls=st.lists(templates, min_size=4, max_size=4), runs=runs_st, seed=st.integers(0, 99))
def test_batched_placements_score_as_high_as_the_full_path(nodes: list, tmpls: list, runs: list, seed: int) -> None:
    fwk = build_frameworks(load_config(NO_DEFAULT_SPREAD), FrameworkHandle())[PROFILE]
    cache = Cache()
    for i, spec in enumerate(nodes):
        cache.add_node(node(i, *spec))
    snapshot = Snapshot()
    cycle = [0]
    used: list[str] = []
    algorithm = SchedulingAlgorithm(random.Random(seed))
    algorithm.batching = Batching({PROFILE: fwk}, False, lambda: 0.0, lambda: cycle[0],
                                  attempted=lambda p, r: used.append(r))
    k = 0
    for index, count in runs:
        for _ in range(count):
            p = pod(f"p{k}", tmpls[index])
            k += 1
            cycle[0] += 1
            cache.update_snapshot(snapshot)
            fwk.handle.set_snapshot(snapshot)
            best = full_path_best(fwk, p, snapshot)
            fwk.handle.set_snapshot(snapshot)
            try:
                host = algorithm.schedule_pod(fwk, CycleState(), p, snapshot).suggested_host
            except FitError:
                assert best is None, f"{p.name}: batching found no node, the full path found {best}"
                continue
            assert best is not None and host in best, f"{p.name}: {host} is not feasible"
            assert best[host] == max(best.values()), f"{p.name}: {host} scores {best[host]}, best {best}"
            cache.assume_pod(p.with_node_name(host), host)


def test_the_differential_exercises_hints() -> None:
    """The workload shape above does reach the hint path (else the test proves nothing)."""
    fwk = build_frameworks(load_config(NO_DEFAULT_SPREAD), FrameworkHandle())[PROFILE]
    cache = Cache()
    for i in range(6):
        cache.add_node(node(i, "4", "32Gi", "a", i % 2 == 0))
    used: list[str] = []
    cycle = [0]
    algorithm = SchedulingAlgorithm(random.Random(1))
    algorithm.batching = Batching({PROFILE: fwk}, False, lambda: 0.0, lambda: cycle[0],
                                  attempted=lambda p, r: used.append(r))
    snapshot = Snapshot()
    t = {"cpu": "3", "mem": "1Gi", "port": False, "zone": "", "image": "app:1", "label": "x"}
    for k in range(6):
        cycle[0] += 1
        cache.update_snapshot(snapshot)
        fwk.handle.set_snapshot(snapshot)
        p = pod(f"p{k}", t)
        host = algorithm.schedule_pod(fwk, CycleState(), p, snapshot).suggested_host
        cache.assume_pod(p.with_node_name(host), host)
    assert used.count("hint_used") == 5
