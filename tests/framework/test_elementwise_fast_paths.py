"""Fast paths that must give the general forms' exact values (h26-algo3): go_div of an
integer column with no entry below 0, float_divisor, and reductions.outside of an int64
column by one unsigned comparison."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.plugins.helper.elementwise import divisor, float_divisor, go_div, keep, select, to_float
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


def _old_weighted_mean(per_resource, weights, requested, allocatable):
    """weighted_mean_scorer before `offered` was handed on (the reference)."""
    node_score, weight_sum = 0, 0
    for req, alloc, weight in zip(requested, allocatable, weights):
        score = per_resource(req, alloc)
        node_score = node_score + (score if weight == 1 else score * weight)
        weight_sum = weight_sum + keep(alloc != 0, weight)
    return select(weight_sum > 0, node_score // divisor(weight_sum), 0)


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 10 ** 9), st.integers(0, 10 ** 9), st.integers(0, 10 ** 9),
                               st.integers(0, 10 ** 9)), min_size=1, max_size=20),
       weights=st.tuples(st.integers(1, 5), st.integers(1, 5)), none_offered=st.booleans())
def test_least_and_most_allocated_with_offered_handed_on_are_the_reference(rows, weights, none_offered):
    from framework.plugins.noderesources.least_allocated import least_requested_score
    from framework.plugins.noderesources.most_allocated import most_requested_score
    from framework.plugins.noderesources.resource_allocation import ResourceSpec, weighted_mean_scorer
    specs = [ResourceSpec("cpu", weights[0]), ResourceSpec("memory", weights[1])]
    cap = [np.array([r[1] if not none_offered else 0 for r in rows], dtype=np.int64),
           np.array([r[3] for r in rows], dtype=np.int64)]
    req = [np.array([r[0] for r in rows], dtype=np.int64), np.array([r[2] for r in rows], dtype=np.int64)]
    for per_resource in (least_requested_score, most_requested_score):
        got = weighted_mean_scorer(specs, per_resource)(req, req, cap)
        want = _old_weighted_mean(per_resource, weights, req, cap)
        assert np.asarray(got).tolist() == np.asarray(want).tolist()
        for i in range(len(rows)):  # one node, plain integers: the same numbers
            one = weighted_mean_scorer(specs, per_resource)([int(r[i]) for r in req], [], [int(c[i]) for c in cap])
            assert int(one) == np.asarray(want).tolist()[i]


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 10 ** 9), st.integers(0, 10 ** 9), st.integers(0, 10 ** 9),
                               st.integers(0, 10 ** 9)), min_size=1, max_size=20), zero_cpu=st.booleans())
def test_scorers_given_the_callers_offered_answer_as_when_they_compare_themselves(rows, zero_cpu):
    from framework.plugins.helper.elementwise import collapsed
    from framework.plugins.noderesources.balanced_allocation import balanced_resource_scorer
    from framework.plugins.noderesources.least_allocated import least_resource_scorer
    from framework.plugins.noderesources.most_allocated import most_resource_scorer
    from framework.plugins.noderesources.resource_allocation import DEFAULT_RESOURCES
    cap = [np.array([0 if zero_cpu and i % 2 else r[1] for i, r in enumerate(rows)], dtype=np.int64),
           np.array([r[3] for r in rows], dtype=np.int64)]
    used = [np.array([r[0] for r in rows], dtype=np.int64), np.array([r[2] for r in rows], dtype=np.int64)]
    req = [u + 7 for u in used]
    offers = [collapsed(c != 0) for c in cap]
    for scorer in (balanced_resource_scorer, least_resource_scorer(DEFAULT_RESOURCES),
                   most_resource_scorer(DEFAULT_RESOURCES)):
        assert np.asarray(scorer(req, used, cap, offers)).tolist() == np.asarray(scorer(req, used, cap)).tolist()
