"""LeastAllocated: favour nodes with more unused capacity (upstream least_allocated.go)."""
from __future__ import annotations

from typing import Any, Sequence

from framework.interface import MAX_NODE_SCORE
from framework.plugins.helper.elementwise import divisor, keep
from framework.plugins.noderesources.resource_allocation import ResourceSpec, Scorer, weighted_mean_scorer


def least_requested_score(requested: Any, capacity: Any, offered: Any = None) -> Any:
    """Unused capacity on a 0..100 scale (0 where nothing is unused), for one node or
    a column. Quantities are never negative, so floor division is Go's division.
    `offered`: capacity != 0, as the caller has it (True: every node offers, so the
    capacity is its own divisor and only the requests decide what fits)."""
    if offered is None:
        offered = capacity != 0
    if offered is True:
        return keep(requested <= capacity, (capacity - requested) * MAX_NODE_SCORE // capacity)
    fits = offered & (requested <= capacity)
    return keep(fits, (capacity - requested) * MAX_NODE_SCORE // divisor(capacity))


def least_resource_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    return weighted_mean_scorer(resources, least_requested_score)
