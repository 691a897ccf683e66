"""A score column's record of what was stored in it (framework/runtime/node_columns.py)
by its definition over every value ever stored, and the table generations' bytes one
member's window checks share (node_local.NodeLocalColumns._now_bytes), read again once
the table moved."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.api.objects import Node, Pod
from framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE
from framework.node_info import NodeInfo
from framework.node_table import NodeTable
from framework.plugins.helper import uniform_value
from framework.runtime.node_columns import ScoreColumn
from framework.runtime.node_local import NodeLocalColumns

SIZE = 12
stores = st.lists(st.tuples(st.lists(st.integers(0, SIZE - 1), unique=True, max_size=SIZE),
                            st.sampled_from([0, 0, 1, 7, 100, 101, -1])), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(stores, st.data())
def test_a_score_column_is_read_as_one_value_exactly_when_every_value_stored_was_it(batches, data) -> None:
    col = ScoreColumn(np.full(SIZE, -1, dtype=np.int64), np.zeros(SIZE, dtype=np.int64))
    stored: list[int] = []
    for generation, (rows, value) in enumerate(batches):
        # Each batch: its rows scored the one value, or (drawn) a mix around it.
        values = [data.draw(st.sampled_from([value, value, value + 1])) for _ in rows]
        col.store(np.array(rows, dtype=np.intp), np.array(values, dtype=np.int64), np.full(len(rows), generation))
        stored += values
        assert col.in_range == all(MIN_NODE_SCORE <= v <= MAX_NODE_SCORE for v in stored)
        one = stored[0] if stored and stored.count(stored[0]) == len(stored) else None
        assert col.only == one
        if one is not None:
            assert uniform_value(col.alike[:SIZE]) == one and not col.alike.flags.writeable
        else:
            assert col.alike is None
        assert col.stored == bool(stored) and not col.fresh


def _info(i: int, pods: int) -> NodeInfo:
    ni = NodeInfo(Node({"metadata": {"name": f"n{i}"}, "status": {"allocatable": {"cpu": "4", "pods": "110"}}}))
    for k in range(pods):
        ni.add_pod(Pod({"metadata": {"name": f"p{i}-{k}", "namespace": "d", "uid": f"p{i}-{k}"}, "spec": {}}))
    return ni


def test_the_generations_bytes_a_window_shares_are_read_again_after_the_table_moved() -> None:
    infos = [_info(i, 0) for i in range(8)]
    table = NodeTable.of(infos)
    columns = NodeLocalColumns()
    columns._table = table
    window = slice(2, 6)
    before = columns._now_bytes(window)
    assert before == table.generation[window].tobytes()
    assert columns._now_bytes(slice(2, 6)) is before  # the same window: the same bytes
    table.set_row(3, _info(3, 1))  # a pod assumed on a node of the window: its generation moves
    after = columns._now_bytes(slice(2, 6))
    assert after == table.generation[window].tobytes() != before
    rows = np.array([5, 1, 3], dtype=np.intp)
    assert columns._now_bytes(rows) == table.generation[rows].tobytes()  # another window: its own
