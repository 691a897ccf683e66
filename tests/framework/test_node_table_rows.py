"""NodeTable.set_row's cheap paths: the range told by one OR of the row's numbers, the
pod flags of a row whose Node stands written only when they moved. Held against the
plain row write (every number range-checked by max and min, every flag written) over
random rows, values at and past the columns' range, negative ones, nodes replaced and
kept, images, host ports and extended resources coming and going."""
from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings, strategies as st

from framework.api.objects import Node
from framework.api.resources import Resource
from framework.node_info import ImageStateSummary, NodeInfo
from framework.node_table import NodeTable, _DO_NOT_SCHEDULE_EFFECTS, _MAX_COLUMN_VALUE


def plain_set_row(table: NodeTable, i: int, ni: NodeInfo) -> None:
    """set_row before its cheap paths."""
    table._changes.rows.append(i)
    a, r, nz = ni.allocatable, ni.requested, ni.non_zero_requested
    row = (a.milli_cpu, a.memory, a.ephemeral_storage, a.allowed_pod_number, r.milli_cpu,
           r.memory, r.ephemeral_storage, nz.milli_cpu, nz.memory, len(ni.pods), ni.generation)
    if max(row) >= _MAX_COLUMN_VALUE or min(row) < -_MAX_COLUMN_VALUE:
        table.valid = False
        return
    table._ints[i] = row
    node = ni.node
    if node is not table._nodes[i]:
        table._nodes[i] = node
    effects = {t.effect for t in node.taints} if node is not None else set()
    hard, prefer = bool(effects & set(_DO_NOT_SCHEDULE_EFFECTS)), "PreferNoSchedule" in effects
    table._flags[i] = (node is not None and bool(node.unschedulable), hard, prefer, bool(ni.image_states),
                       len(ni.used_ports) > 0, bool(a.scalar) or bool(r.scalar), node is None)


def random_node(rng: random.Random, k: int) -> Node:
    spec: dict = {}
    if rng.random() < 0.3:
        spec["taints"] = [{"key": "k", "effect": rng.choice(["NoSchedule", "PreferNoSchedule", "NoExecute"])}]
    if rng.random() < 0.2:
        spec["unschedulable"] = True
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return Node({"metadata": {"name": f"n{k}"}, "spec": spec, "status": {"capacity": alloc, "allocatable": alloc}})


def number(rng: random.Random) -> int:
    edge = _MAX_COLUMN_VALUE
    return rng.choice([0, 1, 100, 4000, 8 << 30, edge - 1, edge, -edge, -edge - 1, -1, rng.randrange(-edge, edge)])


def random_info(rng: random.Random, nodes: list[Node], pod_infos: list) -> NodeInfo:
    ni = NodeInfo()
    ni.node = rng.choice([*nodes, None]) if rng.random() < 0.95 else None
    ni.name = ni.node.name if ni.node is not None else ""
    usual = (lambda: rng.choice([0, 100, 4000, 8 << 30]))
    ni.allocatable = Resource(usual(), usual(), usual(), usual(), {"example.com/gpu": 1} if rng.random() < 0.1 else {})
    ni.requested = Resource(usual(), usual(), usual(), 0, {"example.com/gpu": 1} if rng.random() < 0.1 else {})
    ni.non_zero_requested = Resource(usual(), usual())
    ni.generation = rng.randrange(1 << 40)
    # Now and then one or two numbers anywhere, past the range or negative included.
    for _ in range(rng.choice([0, 0, 1, 2])):
        owner, field = rng.choice([(ni.allocatable, f) for f in ("milli_cpu", "memory", "ephemeral_storage",
                                                                 "allowed_pod_number")]
                                  + [(ni.requested, f) for f in ("milli_cpu", "memory", "ephemeral_storage")]
                                  + [(ni.non_zero_requested, f) for f in ("milli_cpu", "memory")] + [(ni, "generation")])
        setattr(owner, field, number(rng))
    ni.pods = pod_infos[:rng.randrange(4)]
    if rng.random() < 0.2:
        ni.image_states = {"img:latest": ImageStateSummary(10, 1)}
    if rng.random() < 0.2:
        ni.used_ports.add("", "TCP", 8080)
    return ni


def table_state(table: NodeTable) -> tuple:
    return (table.valid, table._ints.tolist(), table._flags.tolist(), [id(n) for n in table._nodes],
            table.changed_since(0))


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_set_row_writes_what_the_plain_row_write_does(seed):
    rng = random.Random(seed)
    nodes = [random_node(rng, k) for k in range(3)]
    pod_infos = [object()] * 3
    fast, plain = NodeTable(4), NodeTable(4)
    for _ in range(30):
        i, ni = rng.randrange(4), random_info(rng, nodes, pod_infos)
        fast.set_row(i, ni)
        plain_set_row(plain, i, ni)
        if fast.valid:  # (an invalid table is not read: its rows after that may differ)
            assert table_state(fast) == table_state(plain)
        else:
            assert not plain.valid
            break


def test_a_kept_nodes_pod_flags_are_written_only_when_they_moved():
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    ni = NodeInfo(Node({"metadata": {"name": "n"}, "status": {"capacity": alloc, "allocatable": alloc}}))
    table = NodeTable.of([ni])
    table._flags[0, NodeTable.FLAG_COLUMNS.index("has_ports")] = True  # a mark a write would clear
    table.set_row(0, ni)
    assert table.has_ports[0]  # the flags stood: not written
    ni.used_ports.add("", "TCP", 80)
    ni.image_states = {"img:latest": ImageStateSummary(1, 1)}
    table.set_row(0, ni)
    assert table.has_ports[0] and table.has_images[0] and not table.has_scalar[0]
    assert np.array_equal(table.req_cpu, [0])


def test_a_node_whose_pods_were_only_confirmed_has_its_generation_rewritten_alone(monkeypatch):
    """(The whole path against it: tests/framework/test_cache_confirm_in_place.py, whose
    states hold every column.)"""
    from framework.cache import Cache, Snapshot
    from tests.framework.test_cache import node, pod
    from tests.framework.test_cache_confirm_in_place import bound_copy

    cache, snap = Cache(), Snapshot()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    p, q = pod("p", "n1"), pod("q", "n2")
    cache.assume_pod(p, "n1")
    cache.assume_pod(q, "n2")
    cache.update_snapshot(snap)
    table, mark = snap.table, snap.table.changes_mark()
    written: list[int] = []
    monkeypatch.setattr(NodeTable, "set_row", lambda self, i, ni: written.append(i))
    cache.add_pod(bound_copy(p, 5))  # confirmed in place: the generation alone moved
    cache.remove_pod(q)  # and another node's sums
    cache.update_snapshot(snap)
    assert snap.table is table and written == [snap.index["n2"]]
    assert table.generation[snap.index["n1"]] == snap.get("n1").generation
    assert table.changed_since(mark) is not None and snap.index["n1"] in table.changed_since(mark)
