"""Fast paths that must give the general forms' exact values (h26-algo3): go_div of an
integer column with no entry below 0, float_divisor, and reductions.outside of an int64
column by one unsigned comparison."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.plugins.helper.elementwise import divisor, float_divisor, go_div, select, to_float
from framework.reductions import outside

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)


def _go_div_general(a, b):
    q = abs(a) // b
    return select(a < 0, -q, q)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(-10 ** 12, 10 ** 12), min_size=1, max_size=40), b=st.integers(1, 10 ** 6),
       nonnegative=st.booleans())
def test_go_div_of_a_column_is_the_general_forms_and_truncates_toward_zero(values, b, nonnegative):
    a = np.array([abs(v) for v in values] if nonnegative else values, dtype=np.int64)
    got, want = go_div(a, b), _go_div_general(a, b)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    assert got.tolist() == [abs(v) // b * (1 if v >= 0 else -1) for v in a.tolist()]  # Go's quotient
    assert go_div(int(a[0]), b) == _go_div_general(int(a[0]), b)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.integers(0, (1 << 63) - 1), min_size=1, max_size=40))
def test_float_divisor_is_to_float_of_divisor(values):
    a = np.array(values, dtype=np.int64)
    got, want = float_divisor(a), to_float(divisor(a))
    assert got.dtype == np.float64 and got.tobytes() == want.tobytes()
    assert float_divisor(values[0]) == to_float(divisor(values[0])) and float_divisor(0) == 1.0


@settings(max_examples=300, deadline=None)
@given(values=st.lists(INT64, min_size=1, max_size=30), bounds=st.tuples(INT64, INT64), stride0=st.booleans())
def test_outside_of_an_int64_column_is_min_below_or_max_above(values, bounds, stride0):
    low, high = min(bounds), max(bounds)
    column = np.array(values, dtype=np.int64)
    if stride0:
        column = np.broadcast_to(column[:1], (len(values),))
    want = bool(column.min() < low or column.max() > high)
    assert outside(column, low, high) == want
    assert outside(column, 0, 100) == bool(column.min() < 0 or column.max() > 100)
    as_objects = np.array([int(v) for v in column.tolist()] + [1 << 70], dtype=object)
    assert outside(as_objects, 0, 100)  # a column past int64 keeps the general form
