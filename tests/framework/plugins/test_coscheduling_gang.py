"""Gang hold arithmetic: node-by-node placement and the group holds."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.api.objects import Node, Pod
from framework.api.resources import Resource
from framework.cache import Snapshot
from framework.plugins.coscheduling.placement import GroupHolds, check_placement
from tests.gang.harness import node, pod


def nodes_with(cpus: list[int]) -> list:
    return Snapshot.build([Node(node(f"n{i}", c)) for i, c in enumerate(cpus)], []).list()


def cpu(n: int) -> Resource:
    return Pod(pod("x", n)).resource


@pytest.mark.parametrize(("cpus", "requests", "needed", "fits"), [
    ([6, 2, 2, 2], [4] * 6, 6, False),  # scheduler-plugins #429: 12 cpu in total, one 4-cpu slot
    ([4, 4], [2] * 4, 4, True),
    ([4, 4], [3, 3, 2], 3, False),  # 8 cpu in total cover 8, but 3+3 cannot share a node
    ([4, 4], [3, 1, 3, 1], 4, True),
    ([4, 4], [3, 3, 1, 1, 5], 4, True),  # more candidates than needed
], ids=["fragmented identical", "identical fit", "heterogeneous proven impossible", "heterogeneous fit",
        "choose among candidates"])
def test_placement_check_decides_node_by_node(cpus: list[int], requests: list[int], needed: int, fits: bool) -> None:
    assert check_placement([cpu(r) for r in requests], needed, nodes_with(cpus)).fits is fits


def test_a_fragmented_group_is_told_apart_from_a_too_large_one() -> None:
    frag = check_placement([cpu(4)] * 6, 6, nodes_with([6, 2, 2, 2]))
    assert (frag.fits, frag.placeable, frag.summed_fit) == (False, 1, False)
    frag = check_placement([cpu(3)] * 2, 2, nodes_with([2, 2, 2]))
    assert (frag.fits, frag.placeable, frag.summed_fit) == (False, 0, True)


def test_reserved_members_of_other_groups_are_set_aside_first() -> None:
    assert check_placement([cpu(1)] * 3, 3, nodes_with([4])).fits is True
    assert check_placement([cpu(1)] * 3, 3, nodes_with([4]), reserved=[cpu(1)] * 2).fits is False


def _brute_force(cpus: list[int], reqs: list[int]) -> bool:
    for assignment in itertools.product(range(len(cpus)), repeat=len(reqs)):
        used = [0] * len(cpus)
        for r, n in zip(reqs, assignment):
            used[n] += r
        if all(u <= c for u, c in zip(used, cpus)):
            return True
    return False


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=3), st.lists(st.integers(0, 4), min_size=1, max_size=5))
def test_placement_check_answers_exactly_whether_a_group_fits(cpus: list[int], reqs: list[int]) -> None:
    # At most 3 nodes and 5 members (zero-cpu ones included) stay far inside the
    # search budget, so "could not decide" (None) is never the right answer here.
    result = check_placement([cpu(r) for r in reqs], len(reqs), nodes_with(cpus))
    assert result.fits is _brute_force(cpus, reqs)


def test_ledger_hands_back_the_groups_a_hold_held_back_when_it_is_released() -> None:
    ledger = GroupHolds()
    ledger.hold("ns/a", now=0, ttl=10, min_member=3, requests=[cpu(1)] * 3)
    ledger.block("ns/b", ["ns/a"])
    assert ledger.is_held("ns/a", 9.9) and not ledger.is_held("ns/a", 10)
    assert [g for g, _ in ledger.others("ns/b", 5)] == ["ns/a"]
    assert ledger.expired(10) == ["ns/a"]
    assert ledger.release("ns/a") == {"ns/b"}
    assert ledger.release("ns/a") == set()


def test_a_hold_is_extended_while_members_wait_but_never_shortened() -> None:
    ledger = GroupHolds()
    ledger.hold("ns/a", now=0, ttl=10, min_member=3, requests=[cpu(1)] * 3)
    ledger.extend("ns/a", 25)
    ledger.extend("ns/a", 12)
    ledger.extend("ns/missing", 50)
    assert ledger.is_held("ns/a", 24.9) and not ledger.is_held("ns/a", 25)
    assert "ns/missing" not in ledger.entries


def test_pods_preemption_could_evict_count_as_room() -> None:
    low = [Pod({**pod(f"low-{i}", 2), "spec": {**pod(f"low-{i}", 2)["spec"], "nodeName": f"n{i}", "priority": 0}})
           for i in range(2)]
    nodes = Snapshot.build([Node(node("n0", 4)), Node(node("n1", 4))], low).list()
    assert check_placement([cpu(4)] * 2, 2, nodes).fits is False
    assert check_placement([cpu(4)] * 2, 2, nodes, removable=lambda p: p.priority < 10).fits is True


def test_lower_priority_holds_do_not_hold_back_a_higher_priority_group() -> None:
    ledger = GroupHolds()
    ledger.hold("ns/low", now=0, ttl=10, min_member=2, requests=[cpu(1)] * 2, priority=0)
    ledger.hold("ns/high", now=0, ttl=10, min_member=2, requests=[cpu(1)] * 2, priority=100)
    assert [g for g, _ in ledger.others("ns/x", 1, priority=100)] == ["ns/high"]
    assert [g for g, _ in ledger.others("ns/x", 1, priority=0)] == ["ns/low", "ns/high"]


def test_members_of_mixed_sizes_whose_smallest_quorum_exceeds_the_free_room_are_rejected() -> None:
    # Any 3 of (4, 2, 4, 2) ask at least 2 + 2 + 4 = 8 cpu; the node has 7.
    result = check_placement([cpu(c) for c in (4, 2, 4, 2)], 3, nodes_with([7]))
    assert result.fits is False and result.summed_fit is False
    # With 8 cpu the smallest three fit on one node.
    assert check_placement([cpu(c) for c in (4, 2, 4, 2)], 3, nodes_with([8])).fits is True
