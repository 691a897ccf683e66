"""The rotating window's positions (framework/runtime/window_positions.py) by their
definition: the i-th position from `start` in a list of n is (start + i) mod n."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.runtime.window_positions import rotated_positions, rotation, stale_in_rotation


@st.composite
def _windows(draw):  # noqa: ANN202 - (start, count, n, flags of n, generations computed and current)
    n = draw(st.integers(1, 60))
    flags = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    computed = np.array(draw(st.lists(st.integers(-1, 3), min_size=n, max_size=n)), dtype=np.int64)
    current = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype=np.int64)
    return draw(st.integers(0, n - 1)), draw(st.integers(0, n)), n, flags, computed, current


@settings(max_examples=300, deadline=None)
@given(_windows(), st.booleans())
def test_a_rotations_positions_wrap_at_the_end_and_the_ones_picked_keep_rotation_order(window, passing) -> None:
    start, count, n, flags, computed, current = window
    order = [(start + i) % n for i in range(count)]
    assert rotation(start, count, n).tolist() == order
    # Flags given in rotation order (a window's verdicts) name their unrotated positions...
    by_order = rotated_positions(flags[:count], start, n)
    assert by_order.dtype == np.intp
    assert by_order.tolist() == [p for i, p in enumerate(order) if flags[i]]
    # ...and a column's stale positions (passing ones, given flags per position) come in rotation order.
    stale = stale_in_rotation(computed, current, start, count, flags if passing else None)
    assert stale.dtype == np.intp
    assert stale.tolist() == [p for p in order if computed[p] != current[p] and (flags[p] or not passing)]
