"""LeastAllocated: favour nodes with more unused capacity (upstream least_allocated.go)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from framework.interface import MAX_NODE_SCORE
from framework.plugins.helper import go_div
from framework.plugins.noderesources.resource_allocation import ResourceSpec, Scorer, weighted_mean_scorer


def least_requested_score(requested: int, capacity: int) -> int:
    """Unused capacity on a 0..100 scale."""
    if capacity == 0 or requested > capacity:
        return 0
    return go_div((capacity - requested) * MAX_NODE_SCORE, capacity)


# Quantities are never negative (parsing rejects them), so floor division is Go's division here.
def _least_requested_column(requested: list[int], capacity: list[int]) -> list[int]:
    return [(c - r) * MAX_NODE_SCORE // c if c != 0 and r <= c else 0 for r, c in zip(requested, capacity)]


def _least_requested_np(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    ok = (capacity != 0) & (requested <= capacity)
    return np.where(ok, (capacity - requested) * MAX_NODE_SCORE // np.where(ok, capacity, 1), 0)


def least_resource_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    return weighted_mean_scorer(resources, least_requested_score, _least_requested_column, _least_requested_np)
