"""NodeResourcesFit's columnar form words every failing node from the NodeTable columns
exactly as filter() words it node by node: code, reasons and their order."""
from __future__ import annotations

import random

import pytest

from framework.api.objects import Node, Pod
from framework.cache import Cache, Snapshot
from framework.node_table import ColumnarNodes
from framework.interface import CycleState
from framework.plugins.noderesources.fit import NodeResourcesFit


def _node(rng: random.Random, i: int) -> Node:
    alloc = {"cpu": rng.choice(["500m", "1", "4"]), "memory": rng.choice(["1Gi", "4Gi"]),
             "pods": str(rng.choice([1, 2, 4, 110]))}
    if rng.random() < 0.5:
        alloc["ephemeral-storage"] = rng.choice(["1Gi", "4Gi"])
    return Node({"metadata": {"name": f"n{i}"}, "status": {"capacity": alloc, "allocatable": alloc}})


def _pod(rng: random.Random, name: str, node_name: str = "") -> Pod:
    requests = {k: v for k, v in (("cpu", rng.choice(["0", "100m", "600m", "2", "5"])),
                                  ("memory", rng.choice(["0", "256Mi", "2Gi", "8Gi"])),
                                  ("ephemeral-storage", rng.choice(["0", "0", "512Mi", "3Gi", "9Gi"]))) if v != "0"}
    spec = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec})


@pytest.mark.parametrize("seed", range(8))
def test_failing_nodes_get_the_per_node_statuses_from_the_columns(seed: int) -> None:
    rng = random.Random(seed)
    cache = Cache()
    for i in range(40):
        cache.add_node(_node(rng, i))
    names = cache.node_names()
    for i in range(60):
        cache.add_pod(_pod(rng, f"e{i}", rng.choice(names)))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    nodes = snapshot.list()
    table = snapshot.table
    assert table is not None and table.valid
    fit = NodeResourcesFit.new(None, None)
    failed = 0
    for k in range(30):
        pod = _pod(rng, f"incoming-{k}")
        state = CycleState()
        fit.pre_filter(state, pod, nodes)
        columnar = fit.filter_nodes(state, pod, ColumnarNodes(nodes, table.all_rows, table))
        one_by_one = [fit.filter(state, pod, ni) for ni in nodes]
        as_tuples = [None if st is None else (st.code, st.reasons) for st in columnar]
        assert as_tuples == [None if st is None else (st.code, st.reasons) for st in one_by_one]
        failed += sum(st is not None for st in columnar)
    assert failed > 0
