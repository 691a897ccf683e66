"""MostAllocated: favour nodes with more used capacity (upstream most_allocated.go)."""
from __future__ import annotations

from typing import Any, Sequence

from framework.interface import MAX_NODE_SCORE
from framework.plugins.helper.elementwise import divisor, keep, minimum
from framework.plugins.noderesources.resource_allocation import ResourceSpec, Scorer, weighted_mean_scorer


def most_requested_score(requested: Any, capacity: Any, offered: Any = None) -> Any:
    """Used capacity on a 0..100 scale, over-commitment counting as full, for one node
    or a column. Quantities are never negative, so floor division is Go's division.
    `offered`: capacity != 0, as the caller has it (True: every node offers)."""
    if offered is None:
        offered = capacity != 0
    return keep(offered, minimum(requested, capacity) * MAX_NODE_SCORE // (capacity if offered is True else
                                                                          divisor(capacity)))


def most_resource_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    return weighted_mean_scorer(resources, most_requested_score)
