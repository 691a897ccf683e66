"""NodeResourcesFit's columnar Filter and the resource scorers (Fit's, BalancedAllocation's)
read the table's columns through a node list's span when its rows run on (views, not
gathers; h26-algo3): the same statuses and scores as over the gathered rows and node by
node, for any window of any cluster."""
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.config import build_frameworks, load_config
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import CycleState
from framework.node_table import ColumnarNodes


def _node(i: int, cpu: int, mem: int, pods: int) -> Node:
    alloc = {"cpu": f"{cpu}m", "memory": f"{mem}Mi", "pods": str(pods)}
    return Node({"metadata": {"name": f"n{i:03d}"}, "status": {"capacity": alloc, "allocatable": alloc}})


def _pod(name: str, cpu: int, mem: int, node: str = "") -> Pod:
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}}}]}
    if node:
        spec["nodeName"] = node
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec})


def _answers(fwk, pod: Pod, nodes) -> tuple:
    fit, balanced = fwk.plugins["NodeResourcesFit"], fwk.plugins["NodeResourcesBalancedAllocation"]
    state = CycleState()
    fit.pre_filter(state, pod, nodes)
    fit.pre_score(state, pod, nodes)
    balanced.pre_score(state, pod, nodes)
    statuses = [None if s is None else (s.code, tuple(s.reasons)) for s in fit.filter_nodes(state, pod, nodes)]
    scores = [list(map(int, pl.score_nodes(state, pod, nodes)[0])) for pl in (fit, balanced)]
    return statuses, scores


@settings(max_examples=60, deadline=None)
@given(shapes=st.lists(st.tuples(st.integers(500, 4000), st.integers(512, 8192), st.integers(1, 4),
                                 st.lists(st.tuples(st.integers(0, 1500), st.integers(0, 3000)), max_size=3)),
                       min_size=1, max_size=20),
       window=st.tuples(st.integers(0, 19), st.integers(1, 20)), want=st.tuples(st.integers(1, 2500), st.integers(1, 4000)))
def test_a_window_read_through_its_span_answers_as_its_gathered_rows_and_node_by_node(shapes, window, want):
    nodes = [_node(i, cpu, mem, pods) for i, (cpu, mem, pods, _) in enumerate(shapes)]
    placed = [_pod(f"q{i}-{k}", c, m, f"n{i:03d}") for i, (_, _, _, running) in enumerate(shapes)
              for k, (c, m) in enumerate(running)]
    snapshot = Snapshot.build(nodes, placed)
    listed = snapshot.list()
    table = snapshot.table
    assert listed.rows is table.all_rows
    a = min(window[0], len(listed) - 1)
    b = min(len(listed), a + window[1])
    part = list(listed[a:b])
    handle = FrameworkHandle(snapshot=snapshot, objects=InMemoryObjects(nodes))
    fwk = build_frameworks(load_config({}), handle)["default-scheduler"]
    pod = _pod("p", *want)
    by_span = _answers(fwk, pod, ColumnarNodes(part, table.all_rows[a:b], table, slice(a, b)))
    assert by_span == _answers(fwk, pod, ColumnarNodes(part, table.all_rows[a:b].copy(), table))
    assert by_span == _answers(fwk, pod, part)
    # The span is what is read: rows that say otherwise change nothing.
    wrong = table.all_rows[a:b][::-1].copy()
    assert by_span == _answers(fwk, pod, ColumnarNodes(part, wrong, table, slice(a, b)))
