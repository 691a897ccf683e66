"""The Filter pass's chunks (framework/algorithm.py): after the first chunk, the next
is sized by the pass rate seen so far, and the chunking never changes what the
node-by-node loop decides."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from framework.algorithm import SchedulingAlgorithm, _next_chunk_size
from framework.api.objects import Node, Pod
from framework.cache import Cache, Snapshot
from framework.config import build_frameworks, load_config
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, Status
from framework.node_table import ColumnarNodes
from framework.runtime import run_unsuspended


def _node(i: int, cordoned: bool) -> Node:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return Node({"metadata": {"name": f"n{i:03d}", "labels": {"kubernetes.io/hostname": f"n{i:03d}"}},
                 "spec": {"unschedulable": cordoned}, "status": {"capacity": alloc, "allocatable": alloc}})


def _pod(name: str) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}})


def _framework(snapshot: Snapshot, columnar: bool):
    handle = FrameworkHandle(snapshot=snapshot, objects=InMemoryObjects([]))
    fwk = build_frameworks(load_config({}), handle)["default-scheduler"]
    fwk.use_columnar = columnar
    return fwk


def _cluster(cordoned: set[int], n: int) -> Snapshot:
    cache = Cache()
    for i in range(n):
        cache.add_node(_node(i, i in cordoned))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    return snapshot


def _outcome(fwk, snapshot: Snapshot, start: int) -> tuple:
    algo = SchedulingAlgorithm(random.Random(7))
    algo.next_start_node_index = start
    state = CycleState()
    feasible, diagnosis = run_unsuspended(algo.find_nodes_that_fit_pod(fwk, state, _pod("p"), snapshot))
    return ([ni.name for ni in feasible], sorted((k, v.code, tuple(v.reasons), v.plugin)
                                               for k, v in diagnosis.node_to_status.items()),
            algo.next_start_node_index)


def test_the_chunk_after_the_first_is_sized_by_the_pass_rate_seen():
    assert _next_chunk_size(230, 0, 0, 500) == 230
    assert _next_chunk_size(184, 46, 230, 270) == 270  # 1 in 5 passed: 920 wanted, 270 left
    assert _next_chunk_size(20, 200, 220, 280) == 22
    assert _next_chunk_size(2, 200, 220, 280) == 16  # at least MIN_FILTER_CHUNK
    assert _next_chunk_size(10, 0, 100, 400) == 400  # none passed: every node left


def test_a_cluster_where_most_nodes_fail_is_filtered_in_two_chunks_with_the_per_node_verdicts():
    rng = random.Random(3)
    n = 500
    snapshot = _cluster(set(rng.sample(range(n), 400)), n)
    columnar, per_node = _framework(snapshot, True), _framework(snapshot, False)
    calls = []
    original = columnar.run_filter_nodes_failed

    def counted(state, pod, nodes):
        calls.append(len(nodes))
        return original(state, pod, nodes)

    columnar.run_filter_nodes_failed = counted
    for start in (0, 137, 499):
        calls.clear()
        assert _outcome(columnar, snapshot, start) == _outcome(per_node, snapshot, start)
        assert len(calls) == 2 and sum(calls) == n


def test_every_status_is_true_so_the_runtime_can_tell_an_all_pass_answer_by_any():
    """ColumnarFiltering._filter_columnar takes `not any(raw)` for "every node passed";
    a Status that could be false (a __len__ or __bool__) would read as a pass."""
    assert all(Status(code) for code in Code)
    assert all(Status(code, "reason", plugin="P") for code in Code)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 60), cordoned=st.sets(st.integers(0, 59)), start=st.integers(0, 59),
       pct=st.sampled_from([None, 10, 50, 100]))
def test_each_chunk_and_the_feasible_nodes_carry_their_own_rows_and_a_span_only_where_consecutive(n, cordoned, start,
                                                                                                     pct):
    """A chunk that does not wrap over the whole table is a slice of its rows (with the span
    plugins read columns through); the feasible nodes keep exactly their rows, and a span
    only when those rows run on (h26-algo3)."""
    snapshot = _cluster({i for i in cordoned if i < n}, n)
    fwk = _framework(snapshot, True)
    fwk.settings.percentage_of_nodes_to_score = pct
    chunks = []
    original = fwk.run_filter_nodes_failed

    def seen(state, pod, nodes):
        chunks.append(nodes)
        return original(state, pod, nodes)

    fwk.run_filter_nodes_failed = seen
    algo = SchedulingAlgorithm(random.Random(7))
    algo.next_start_node_index = start % n
    feasible, _ = run_unsuspended(algo.find_nodes_that_fit_pod(fwk, CycleState(), _pod("p"), snapshot))
    table = snapshot.table
    row_of = {name: row for row, name in enumerate(table.node_names())}
    for part in [*chunks, feasible] if feasible else chunks:
        assert isinstance(part, ColumnarNodes) and part.table is table
        assert part.rows.tolist() == [row_of[ni.name] for ni in part]
        if part.span is not None:
            assert part.rows.tolist() == list(range(part.span.start, part.span.stop))
    first = start % n
    if first + len(chunks[0]) <= n:  # a first chunk that does not wrap is read by slices
        assert chunks[0].span == slice(first, first + len(chunks[0]))
        if len(chunks) == 1 and not any(i in cordoned for i in range(first, first + len(chunks[0]))):
            assert feasible.span == slice(first, first + len(feasible))
    assert _outcome(fwk, snapshot, start % n) == _outcome(_framework(snapshot, False), snapshot, start % n)
