"""The rotating window's positions (framework/runtime/window_positions.py) by their
definition: the i-th position from `start` in a list of n is (start + i) mod n."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.runtime.window_positions import rotated_positions, rotated_where, rotation


@st.composite
def _windows(draw):  # noqa: ANN202 - (start, count, n)
    n = draw(st.integers(1, 60))
    return draw(st.integers(0, n - 1)), draw(st.integers(0, n)), n


@settings(max_examples=300, deadline=None)
@given(_windows())
def test_a_rotation_lists_the_positions_from_start_wrapping_at_the_end(window) -> None:
    start, count, n = window
    assert rotation(start, count, n).tolist() == [(start + i) % n for i in range(count)]


@settings(max_examples=300, deadline=None)
@given(_windows(), st.data())
def test_the_set_flags_of_a_rotated_window_name_their_unrotated_positions(window, data) -> None:
    start, count, n = window
    flags = np.array(data.draw(st.lists(st.booleans(), min_size=count, max_size=count)), dtype=np.bool_)
    got = rotated_positions(flags, start, n)
    assert got.dtype == np.intp
    assert got.tolist() == [(start + i) % n for i in range(count) if flags[i]]


@settings(max_examples=300, deadline=None)
@given(_windows(), st.data())
def test_the_set_flags_among_a_rotations_positions_come_in_rotation_order(window, data) -> None:
    start, count, n = window
    flags = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    got = rotated_where(flags, start, count)
    assert got.dtype == np.intp
    assert got.tolist() == [p for p in ((start + i) % n for i in range(count)) if flags[p]]
