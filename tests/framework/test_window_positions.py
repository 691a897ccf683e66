"""The rotating window's positions (framework/runtime/window_positions.py) by their
definition: the i-th position from `start` in a list of n is (start + i) mod n."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.runtime.window_positions import rotated_positions, rotated_where, rotation


@st.composite
def _windows(draw):  # noqa: ANN202 - (start, count, n, flags of n)
    n = draw(st.integers(1, 60))
    flags = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    return draw(st.integers(0, n - 1)), draw(st.integers(0, n)), n, flags


@settings(max_examples=300, deadline=None)
@given(_windows())
def test_a_rotations_positions_wrap_at_the_end_and_its_flagged_ones_keep_rotation_order(window) -> None:
    start, count, n, flags = window
    order = [(start + i) % n for i in range(count)]
    assert rotation(start, count, n).tolist() == order
    # Flags given in rotation order (a window's verdicts) name their unrotated positions...
    by_order = rotated_positions(flags[:count], start, n)
    # ...and flags given per position pick positions of the rotation, in its order.
    by_position = rotated_where(flags, start, count)
    assert by_order.dtype == by_position.dtype == np.intp
    assert by_order.tolist() == [p for i, p in enumerate(order) if flags[i]]
    assert by_position.tolist() == [p for p in order if flags[p]]
