import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.interface import NodeScore
from framework.plugins.helper import (default_normalize_column, default_normalize_score, default_normalize_values,
                                     default_normalized, default_normalized_value, go_div)


def _scores(values):
    return [NodeScore(f"n{i}", v) for i, v in enumerate(values)]


@pytest.mark.parametrize(
    ("reverse", "given", "expected"),
    [
        (False, [1, 2, 3, 4], [25, 50, 75, 100]),
        (True, [1, 2, 3, 4], [75, 50, 25, 0]),
        (False, [1000, 10, 20, 30], [100, 1, 2, 3]),
        (True, [1000, 10, 20, 30], [0, 99, 98, 97]),
        (False, [1, 1, 1, 1], [100, 100, 100, 100]),
        (False, [1, 0, 1, 1], [100, 0, 100, 100]),
        (True, [0, 1, 0, 1], [100, 0, 100, 0]),
        (False, [0, 0, 0], [0, 0, 0]),
        (True, [0, 0, 0], [100, 100, 100]),
        (False, [3, 7], [42, 100]),
        (True, [], []),
    ],
    ids=["scaled", "reversed", "truncates", "reversed-truncates", "all-equal", "with-zero",
         "reversed-with-zero", "all-zero-stay", "all-zero-reversed-max", "integer-division", "empty"],
)
def test_default_normalize_score_scales_to_max_priority(reverse, given, expected):
    scores = _scores(given)
    assert default_normalize_score(100, reverse, scores) is None
    assert [s.score for s in scores] == expected


@pytest.mark.parametrize(("a", "b", "q"), [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0)])
def test_go_div_truncates_toward_zero(a, b, q):
    assert go_div(a, b) == q


@settings(max_examples=300, deadline=None)
@given(reverse=st.booleans(),
       values=st.lists(st.one_of(st.integers(-300, 300), st.integers(-(2 ** 63), 2 ** 63 - 1)), max_size=12))
def test_the_column_form_of_default_normalize_gives_the_list_forms_integers_or_hands_back(reverse, values):
    column = default_normalize_column(100, reverse, np.array(values, dtype=np.int64))
    expected = default_normalize_values(100, reverse, values)
    if column is None:  # a product past int64: the list form answers, on Python integers
        assert max(abs(v) for v in values) * 100 > 2 ** 63 - 1
    else:
        assert column.dtype == np.int64 and column.tolist() == expected


@settings(max_examples=300, deadline=None)
@given(reverse=st.booleans(),
       values=st.lists(st.one_of(st.integers(-300, 300), st.integers(-(2 ** 63), 2 ** 63 - 1)), min_size=1, max_size=12))
def test_default_normalized_gives_the_list_forms_integers_and_says_truly_when_they_are_in_range(reverse, values):
    out, within = default_normalized(100, reverse, np.array(values, dtype=np.int64))
    expected = default_normalize_values(100, reverse, values)
    if out is None:
        assert max(abs(v) for v in values) * 100 > 2 ** 63 - 1 and not within
        return
    got = [out] * len(values) if type(out) is int else out.tolist()
    assert got == expected
    if type(out) is int:  # every entry becomes that one value
        assert reverse and max(values) <= 0
    if within:
        assert all(0 <= v <= 100 for v in got)
    else:  # only claimed for scores none below 0 (or all reversed to 100)
        assert min(values) < 0 or (not reverse and max(values) <= 0)


@settings(max_examples=300, deadline=None)
@given(reverse=st.booleans(), value=st.one_of(st.integers(-300, 300), st.integers(-(2 ** 63), 2 ** 63 - 1)),
       size=st.integers(1, 5))
def test_default_normalized_value_is_what_the_column_of_that_value_normalises_to(reverse, value, size):
    got = default_normalized_value(100, reverse, value)
    column = default_normalize_column(100, reverse, np.full(size, value, dtype=np.int64))
    assert (got is None) == (column is None)
    if got is not None:
        assert [got] * size == column.tolist() == default_normalize_values(100, reverse, [value] * size)


def test_default_normalize_column_leaves_other_dtypes_to_the_list_form():
    assert default_normalize_column(100, False, np.array([1, 2], dtype=object)) is None
    assert default_normalize_column(100, True, np.array([0, 0], dtype=np.int64)).tolist() == [100, 100]
