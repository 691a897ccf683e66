"""Explain a pod as if it were not bound yet.

`explain` of a pod the cache already holds (bound, or assumed and waiting at
Permit) would count the pod on its own node, so that node would answer
"Insufficient cpu" against the pod's own requests. The README, the CLI and the
page promise the question "where would this pod go now?", so the dry run takes
the pod out of the cache first and puts it back, as it was, right after. The
Scheduler actor does both inside one message, so no cycle sees the gap.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from framework.cache import Cache


@contextmanager
def without_pod(cache: Cache, key: str) -> Iterator[str | None]:
    """Within the block `cache` does not hold the pod `key`; yields the node it
    was counted on (None if it held no such pod). Afterwards it holds the pod
    again, bound or assumed as before."""
    placed = cache.get_pod(key)
    if placed is None:
        yield None
        return
    assumed = cache.is_assumed(placed)
    cache.remove_pod(placed)
    try:
        yield placed.node_name
    finally:
        if assumed:
            cache.assume_pod(placed, placed.node_name)
        else:
            cache.add_pod(placed)
