"""framework/reductions.py gives what numpy's reductions give, on the columns the
cycle reduces (int64 scores, object columns past int64, boolean verdicts)."""
from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from framework.reductions import all_set, any_set, column_max, column_min, outside

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
