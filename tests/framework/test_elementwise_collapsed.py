"""A condition column that holds everywhere collapses to plain True (elementwise.collapsed),
and the formulas that use it give the same integers as before, column or node by node."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.plugins.helper.elementwise import collapsed, keep, select
from framework.plugins.noderesources.balanced_allocation import balanced_resource_scorer
from framework.reductions import count_set

flags = st.lists(st.booleans(), min_size=1, max_size=6)


@given(flags, st.integers(-5, 5))
def test_keep_and_select_of_a_collapsed_condition_are_those_of_the_column(cond, value) -> None:
    column = np.array(cond)
    values = np.arange(len(cond), dtype=np.int64) + value
    assert count_set(column) == np.count_nonzero(column)
    c = collapsed(column)
    assert (c is True) == all(cond)
    assert np.broadcast_to(keep(c, values), values.shape).tolist() == keep(column, values).tolist()
    assert np.broadcast_to(select(c, values, -values), values.shape).tolist() == select(column, values, -values).tolist()


node = st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 2 * 10**6))  # requested, allocated, allocatable


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(node, min_size=1, max_size=5), min_size=2, max_size=3).filter(
    lambda rs: len({len(r) for r in rs}) == 1))
def test_balanced_allocation_scores_a_column_as_it_scores_each_node(resources) -> None:
    """resources[k][i]: the k-th resource's (requested, allocated, allocatable) on node i,
    every node offering it or some not (allocatable 0: that resource left out there)."""
    def column(k: int, part: int) -> np.ndarray:
        return np.array([amounts[part] for amounts in resources[k]], dtype=np.int64)

    cols = [[column(k, part) for k in range(len(resources))] for part in range(3)]
    got = balanced_resource_scorer(*cols)
    got = got.tolist() if isinstance(got, np.ndarray) else [got] * len(resources[0])
    want = [balanced_resource_scorer(*[[resources[k][i][part] for k in range(len(resources))] for part in range(3)])
            for i in range(len(resources[0]))]
    assert got == want
