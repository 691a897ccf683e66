"""The controller's sets of keys to sync (actors/resourceclaims/controller.py `_take`):
every key comes out once, at most SYNC_WORKERS a batch, and a set drained after a burst
is small again, so that taking the one key a later pod adds does not scan the table the
burst grew it to."""
from __future__ import annotations

import sys

from actors.resourceclaims.controller import SYNC_WORKERS, _take


def test_every_key_is_taken_once_in_batches_of_at_most_the_workers() -> None:
    dirty = {f"default/pod-{i}" for i in range(3 * SYNC_WORKERS + 5)}
    want = set(dirty)
    batches = []
    while dirty:
        batches.append(_take(dirty))
    assert [len(b) for b in batches] == [SYNC_WORKERS] * 3 + [5]
    assert sorted(k for b in batches for k in b) == sorted(want)


def test_a_set_drained_after_a_burst_gets_its_smallest_table_back() -> None:
    small = sys.getsizeof(set())
    dirty = {f"default/pod-{i}" for i in range(5000)}
    while dirty:
        _take(dirty)
    assert sys.getsizeof(dirty) == small  # pop() alone keeps the burst's table
    dirty.add("default/later")
    assert _take(dirty) == ["default/later"] and not dirty
