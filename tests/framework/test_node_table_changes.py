"""A NodeTable's log of the rows it rewrote (`changes_mark` / `changed_since`): the
node-local columns' sweeps read it instead of comparing every row's generation, and
fall back to that comparison once the log no longer reaches back to their mark; either
way pods land where cycles without the columns put them."""
from __future__ import annotations

import pytest

import framework.node_table as node_table
from framework.api.objects import Node, Pod
from framework.cache import Cache, Snapshot
from tests.framework.test_node_local_across_cycles import Change, PodShape, assert_same
from tests.framework.test_node_local_columns import NodeSpec


def _node(name: str) -> Node:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return Node({"metadata": {"name": name}, "status": {"capacity": alloc, "allocatable": alloc}})


def _pod(name: str, node: str) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}})


def _snapshot(cache: Cache) -> Snapshot:
    snap = Snapshot()
    cache.update_snapshot(snap)
    return snap


def test_a_built_table_has_logged_nothing_and_each_refreshed_node_logs_its_row_in_order() -> None:
    cache = Cache()
    for i in range(4):
        cache.add_node(_node(f"n{i}"))
    snap = _snapshot(cache)
    table = snap.table
    assert table is not None
    mark = table.changes_mark()
    assert table.changed_since(0) == []
    cache.add_pod(_pod("a", "n2"))
    cache.update_snapshot(snap)
    cache.add_pod(_pod("b", "n0"))
    cache.add_pod(_pod("c", "n2"))
    cache.update_snapshot(snap)
    assert snap.table is table  # the same nodes: rows rewritten in place
    rows = table.changed_since(mark)
    assert rows is not None and rows[0] == snap.index["n2"]
    assert sorted(rows[1:]) == sorted([snap.index["n0"], snap.index["n2"]])
    assert table.changed_since(table.changes_mark()) == []


def test_a_mark_older_than_the_kept_log_gets_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_table, "_MAX_LOGGED_CHANGES", 4)
    cache = Cache()
    cache.add_node(_node("n0"))
    snap = _snapshot(cache)
    table = snap.table
    assert table is not None
    old = table.changes_mark()
    for i in range(6):
        cache.add_pod(_pod(f"p{i}", "n0"))
        cache.update_snapshot(snap)
    assert table.changed_since(old) is None
    recent = table.changes_mark()
    cache.add_pod(_pod("last", "n0"))
    cache.update_snapshot(snap)
    assert table.changed_since(recent) == [0]


def test_sweeps_past_the_kept_log_compare_every_row_and_place_pods_as_cycles_without_the_columns(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A log of two rows: nearly every sweep finds its mark dropped and compares every row.
    monkeypatch.setattr(node_table, "_MAX_LOGGED_CHANGES", 2)
    nodes = [NodeSpec(cpu=1000, used=0, prefer_taints=i % 5 == 0) for i in range(450)]
    changes = [None, Change(kind="start", at=7, cpu=300), None, Change(kind="end", at=7)] * 8
    run = assert_same(nodes, [PodShape(cpu=400)] * 32, changes, seed=11)
    assert run.columns.counts.rows_read > run.columns.counts.rows_computed


def test_sweeps_from_the_log_place_pods_as_cycles_without_the_columns_while_nodes_fill() -> None:
    nodes = [NodeSpec(cpu=1000, used=0, hard_taint=i % 7 == 0) for i in range(420)]
    changes = [None, Change(kind="start", at=3, cpu=600), Change(kind="end", at=3), None] * 10
    run = assert_same(nodes, [PodShape(cpu=400), PodShape(cpu=400, tolerate_prefer=True)] * 20, changes, seed=5)
    assert run.columns.counts.rows_read > run.columns.counts.rows_computed
