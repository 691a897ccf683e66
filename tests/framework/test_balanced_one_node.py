"""BalancedAllocation's plain-Python score of one node over two resources (the per-node
form a node-local column's refresh of a few nodes runs) against the general form the
columns and every other case run: the same score for any integers."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from framework.plugins.noderesources import balanced_allocation as ba

amounts = st.one_of(st.integers(0, 64), st.integers(0, 1 << 40), st.integers(-(1 << 20), 1 << 62))


@settings(max_examples=600, deadline=None)
@given(amounts, amounts, amounts, amounts, amounts, amounts)
def test_one_node_two_resources_scores_as_the_general_form(a0: int, a1: int, u0: int, u1: int, p0: int, p1: int) -> None:
    allocatable = [a0, a1]
    # As _vectors hands them: a resource the node does not offer is left out (0, 0).
    allocated = [u0 if a0 else 0, u1 if a1 else 0]
    requested = [u0 + p0 if a0 else 0, u1 + p1 if a1 else 0]
    offers = [a0 != 0, a1 != 0]
    assert ba.balanced_resource_scorer(requested, allocated, allocatable, offers) == ba._scored(
        requested, allocated, allocatable, offers)
    assert ba.balanced_resource_scorer(requested, allocated, allocatable) == ba._scored(requested, allocated, allocatable)


def test_the_plain_form_is_the_one_taken_for_one_node() -> None:
    assert ba.balanced_resource_scorer([1500, 1 << 30], [1000, 1 << 29], [4000, 1 << 34]) == ba._two_on_one_node(
        [1500, 1 << 30], [1000, 1 << 29], [4000, 1 << 34])
    assert ba._two_on_one_node([0, 0], [0, 0], [0, 5]) == 75  # one offered resource: balanced either way
