"""framework/reductions.py gives what numpy's reductions give, on the columns the
cycle reduces (int64 scores, object columns past int64, boolean verdicts)."""
from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from framework.reductions import all_set, any_set, column_max, column_min, differ, outside

ints = st.lists(st.integers(-(1 << 63), (1 << 63) - 1), min_size=1, max_size=600)


@given(ints)
def test_the_largest_and_smallest_entries_of_an_int64_column_are_numpys(values: list[int]) -> None:
    column = np.array(values, dtype=np.int64)
    assert column_max(column) == column.max() and column_min(column) == column.min()
    assert outside(column, 0, 100) == bool(column.min() < 0 or column.max() > 100)


@given(st.lists(st.integers(-(1 << 80), 1 << 80), min_size=1, max_size=50))
def test_a_column_of_python_integers_past_int64_reduces_as_numpy_reduces_it(values: list[int]) -> None:
    column = np.array(values, dtype=object)
    assert column_max(column) == max(values) and column_min(column) == min(values)
    assert outside(column, 0, 100) == any(v < 0 or v > 100 for v in values)


@given(st.lists(st.booleans(), max_size=600))
def test_every_and_some_of_a_boolean_column_are_numpys(values: list[bool]) -> None:
    flags = np.array(values, dtype=np.bool_)
    assert all_set(flags) == bool(flags.all()) and any_set(flags) == bool(flags.any())


@given(st.lists(st.tuples(st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-2, 2)), max_size=40),
       st.integers(0, 5))
def test_two_int64_columns_differ_by_their_bytes_where_numpy_finds_an_entry_not_equal(pairs, step) -> None:
    a = np.array([x for x, _ in pairs], dtype=np.int64)
    b = np.array([max(-(1 << 63), min((1 << 63) - 1, x + d)) for x, d in pairs], dtype=np.int64)
    assert differ(a, b) == bool((a != b).any())
    # as node_local reads them: slices and gathers of a wider column
    wide = np.concatenate((a, b))
    assert differ(wide[:len(a)], wide[len(a):][::1]) == bool((a != b).any())
    if step:
        assert differ(a[::step], b[::step]) == bool((a[::step] != b[::step]).any())
