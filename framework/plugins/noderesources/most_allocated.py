"""MostAllocated: favour nodes with more used capacity (upstream most_allocated.go)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from framework.interface import MAX_NODE_SCORE
from framework.plugins.helper import go_div
from framework.plugins.noderesources.resource_allocation import ResourceSpec, Scorer, weighted_mean_scorer


def most_requested_score(requested: int, capacity: int) -> int:
    """Used capacity on a 0..100 scale; over-commitment counts as full."""
    if capacity == 0:
        return 0
    if requested > capacity:
        requested = capacity
    return go_div(requested * MAX_NODE_SCORE, capacity)


# Quantities are never negative (parsing rejects them), so floor division is Go's division here.
def _most_requested_column(requested: list[int], capacity: list[int]) -> list[int]:
    return [(r if r <= c else c) * MAX_NODE_SCORE // c if c != 0 else 0 for r, c in zip(requested, capacity)]


def _most_requested_np(requested: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    offered = capacity != 0
    return np.where(offered, np.minimum(requested, capacity) * MAX_NODE_SCORE // np.where(offered, capacity, 1), 0)


def most_resource_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    return weighted_mean_scorer(resources, most_requested_score, _most_requested_column, _most_requested_np)
