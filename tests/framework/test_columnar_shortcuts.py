"""The shortcuts the shared formulas take on columns give what the per-node form gives:
Fit's shortage answers the plain 0 when no node is short (one None per node, from
the filter and from the preemption dry run's shortage_statuses), and a scorer over
resources no node is asked about scores every node alike, one integer per node."""
from __future__ import annotations

import numpy as np
import pytest

from framework.api.objects import Node, Pod
from framework.cache import Cache, Snapshot
from framework.interface import Code, CycleState
from framework.node_table import ColumnarNodes
from framework.plugins.noderesources.fit import NodeResourcesFit, shortage, shortage_statuses

GPU = "nvidia.com/gpu"


def _snapshot(allocatables: list[dict[str, str]]) -> Snapshot:
    cache = Cache()
    for i, alloc in enumerate(allocatables):
        cache.add_node(Node({"metadata": {"name": f"n{i}"}, "status": {"capacity": alloc, "allocatable": alloc}}))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    return snapshot


def _pod(requests: dict[str, str]) -> Pod:
    return Pod({"metadata": {"name": "p", "namespace": "default", "uid": "p"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}})


def _columnar(snapshot: Snapshot) -> ColumnarNodes:
    table = snapshot.table
    assert table is not None and table.valid
    return ColumnarNodes(snapshot.list(), table.all_rows, table)


def test_the_shortage_of_nodes_that_all_fit_is_the_plain_zero_and_of_one_short_node_a_column() -> None:
    wants = (100, 1 << 20)
    fitting = shortage(wants, np.array([0, 3]), np.array([4, 4]), [np.array([200, 300]), np.array([2 << 20, 2 << 20])],
                       [np.array([0, 100]), np.array([0, 0])])
    assert not isinstance(fitting, np.ndarray) and fitting == 0
    one_short = shortage(wants, np.array([0, 4]), np.array([4, 4]), [np.array([200, 300]), np.array([2 << 20, 2 << 20])],
                         [np.array([0, 100]), np.array([0, 0])])
    assert isinstance(one_short, np.ndarray) and one_short.tolist() == [0, 1]  # the second node: too many pods
    assert shortage(wants, 0, 4, [200, 2 << 20], [0, 0]) == 0
    assert shortage(wants, 0, 4, [50, 2 << 20], [0, 0]) != 0


@pytest.mark.parametrize("requests", [{"cpu": "100m", "memory": "1Gi"}, {}])
def test_fit_filter_over_nodes_that_all_fit_gives_one_none_per_node(requests: dict[str, str]) -> None:
    snapshot = _snapshot([{"cpu": "4", "memory": "8Gi", "pods": "10"}] * 5)
    fit = NodeResourcesFit.new(None, None)
    pod = _pod(requests)
    state = CycleState()
    fit.pre_filter(state, pod, snapshot.list())
    assert fit.filter_nodes(state, pod, _columnar(snapshot)) == [None] * 5
    assert [fit.filter(state, pod, ni) for ni in snapshot.list()] == [None] * 5


def test_shortage_statuses_of_nodes_that_all_fit_is_one_none_per_node_and_otherwise_the_reasons() -> None:
    request = _pod({"cpu": "1"}).resource
    zeros = np.zeros(3, dtype=np.int64)
    cpu = (np.array([0, 0, 3500]), np.array([4000, 4000, 4000]))  # (requested, allocatable)
    memory = (zeros, np.full(3, 1 << 30))
    storage = (zeros, zeros)
    fits_all = shortage_statuses(request, zeros, np.full(3, 10), ((zeros, cpu[1]), memory, storage))
    assert fits_all == [None, None, None]
    statuses = shortage_statuses(request, zeros, np.full(3, 10), (cpu, memory, storage))
    assert statuses[:2] == [None, None]
    assert statuses[2] is not None and statuses[2].code == Code.Unschedulable
    assert statuses[2].reasons == ["Insufficient cpu"]


@pytest.mark.parametrize("strategy", [
    {"type": "LeastAllocated", "resources": [{"name": GPU, "weight": 2}]},
    {"type": "MostAllocated", "resources": [{"name": GPU, "weight": 1}]},
    {"type": "RequestedToCapacityRatio", "resources": [{"name": GPU, "weight": 3}],
     "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 4}, {"utilization": 100, "score": 9}]}},
])
def test_a_strategy_over_a_resource_the_pod_does_not_request_scores_each_node_as_per_node(strategy: dict) -> None:
    snapshot = _snapshot([{"cpu": "4", "memory": "8Gi", "pods": "10", GPU: "2"},
                          {"cpu": "2", "memory": "4Gi", "pods": "10"},
                          {"cpu": "8", "memory": "8Gi", "pods": "10", GPU: "0"}])
    fit = NodeResourcesFit.new({"scoringStrategy": strategy}, None)
    pod = _pod({"cpu": "100m"})
    state = CycleState()
    fit.pre_score(state, pod, snapshot.list())
    columnar, st = fit.score_nodes(state, pod, _columnar(snapshot))
    assert st is None
    per_node = [fit.score(state, pod, ni)[0] for ni in snapshot.list()]
    assert [int(s) for s in columnar] == per_node and len(columnar) == 3
    plain, _ = fit.score_nodes(state, pod, list(snapshot.list()))
    assert [int(s) for s in plain] == per_node
