"""Coscheduling's per-member work is O(group), not O(cluster): the placement
check stops at a prefix of the nodes when the group fits there, and the index of
members per group re-reads only the nodes the snapshot refreshed."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from framework.api.objects import Node, Pod
from framework.api.resources import Resource
from framework.cache import Cache, Snapshot
from framework.plugins.coscheduling.core import _SnapshotGroupIndex
from framework.plugins.coscheduling.placement import PREFIX_NODES_PER_MEMBER, check_placement
from tests.gang.harness import NS, node, pod


def nodes_with(cpus: list[int]) -> list:
    return Snapshot.build([Node(node(f"n{i}", c)) for i, c in enumerate(cpus)], []).list()


def cpu(n: int) -> Resource:
    return Pod(pod("x", n)).resource


class Unreadable:
    """A node the check must not look at."""

    def __getattr__(self, name: str):  # noqa: ANN204
        raise AssertionError(f"read node field {name} past the prefix")


def test_a_group_that_fits_early_is_checked_without_reading_the_rest_of_the_cluster() -> None:
    prefix = PREFIX_NODES_PER_MEMBER * 3
    nodes = nodes_with([4] * prefix) + [Unreadable()] * 5000
    result = check_placement([cpu(1)] * 3, 3, nodes)
    assert result.fits is True


def test_a_group_that_does_not_fit_early_is_still_found_a_place_further_on() -> None:
    prefix = PREFIX_NODES_PER_MEMBER * 2
    nodes = nodes_with([1] * prefix + [8])
    assert check_placement([cpu(4)] * 2, 2, nodes).fits is True
    assert check_placement([cpu(5)] * 2, 2, nodes).fits is False


@settings(max_examples=60, deadline=None)
@given(cpus=st.lists(st.integers(0, 6), min_size=1, max_size=60),
       reqs=st.lists(st.integers(0, 5), min_size=1, max_size=5),
       reserved=st.lists(st.integers(0, 5), max_size=4))
def test_the_prefix_answer_never_differs_from_reading_every_node(cpus: list[int], reqs: list[int],
                                                                  reserved: list[int]) -> None:
    nodes = nodes_with(cpus)
    fast = check_placement([cpu(r) for r in reqs], len(reqs), nodes, [cpu(r) for r in reserved])
    import framework.plugins.coscheduling.placement as placement

    full = placement._check_all([cpu(r) for r in reqs], len(reqs), nodes, [cpu(r) for r in reserved],
                                placement.DEFAULT_SEARCH_BUDGET, None)
    # Node sizes 0..6 and at most 5 members keep the full search inside its budget:
    # it decides every draw, and the prefix answer must be that decision.
    assert full.fits is not None
    assert fast.fits is full.fits


def test_members_per_group_follow_incremental_snapshot_updates_as_a_fresh_read_does() -> None:
    rand = random.Random(7)
    cache = Cache()
    for i in range(30):
        cache.add_node(Node(node(f"n{i}", 64)))
    snap = Snapshot()
    cache.update_snapshot(snap)
    index = _SnapshotGroupIndex()
    placed: list[Pod] = []
    for step in range(200):
        if placed and rand.random() < 0.3:
            cache.remove_pod(placed.pop(rand.randrange(len(placed))))
        else:
            p = Pod({**pod(f"p{step}", 1, group=f"g{step % 4}"), "spec": {
                **pod(f"p{step}", 1, group=f"g{step % 4}")["spec"], "nodeName": f"n{rand.randrange(30)}"}})
            cache.add_pod(p)
            placed.append(p)
        cache.update_snapshot(snap)
        fresh = _SnapshotGroupIndex()
        for g in (f"{NS}/g0", f"{NS}/g1", f"{NS}/g2", f"{NS}/g3"):
            assert sorted(p.key for p in index.members(snap, g)) == sorted(p.key for p in fresh.members(snap, g))
    assert sum(len(index.members(snap, f"{NS}/g{i}")) for i in range(4)) == len(placed) > 0
