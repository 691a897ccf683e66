"""A score column's record of what was stored in it (framework/runtime/node_columns.py),
by its definition over every value ever stored."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE
from framework.plugins.helper import uniform_value
from framework.runtime.node_columns import ScoreColumn

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

