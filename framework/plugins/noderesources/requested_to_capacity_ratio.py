"""RequestedToCapacityRatio: score by a user-given utilization -> score curve
(upstream requested_to_capacity_ratio.go and helper/shape_score.go)."""
from __future__ import annotations

import math
from typing import Callable, Sequence

from framework.interface import MAX_NODE_SCORE
from framework.plugins.helper import go_div
from framework.plugins.noderesources.resource_allocation import ResourceSpec, Scorer

# Upstream's config.MaxCustomPriorityScore: shape scores are given in [0, 10].
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100


def build_broken_linear_function(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """helper.BuildBrokenLinearFunction over (utilization, score) points sorted by
    utilization: constant before the first and after the last point, linear
    (Go integer division) in between."""
    points = tuple(shape)

    def f(p: int) -> int:
        for i, (util, score) in enumerate(points):
            if p <= util:
                if i == 0:
                    return score
                prev_util, prev_score = points[i - 1]
                return prev_score + go_div((score - prev_score) * (p - prev_util), util - prev_util)
        return points[-1][1]

    return f


def scaled_utilization(requested: int, capacity: int, maximum: int) -> int:
    """requested * maximum / capacity with requested clamped to [0, capacity]."""
    if capacity <= 0 or requested <= 0:
        return 0
    if requested >= capacity:
        return maximum
    return requested * maximum // capacity


def go_round(x: float) -> int:
    """Go's math.Round: halves away from zero (Python's round() goes to even)."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return int(t)


def requested_to_capacity_ratio_scorer(resources: Sequence[ResourceSpec], shape: Sequence[tuple[int, int]]) -> Scorer:
    """Bin packing by a user-given utilization -> score curve. Shape scores are in
    [0, 10] and scaled to [0, 100]; resources scoring 0 do not count in the mean."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = build_broken_linear_function([(u, s * scale) for u, s in shape])
    weights = [r.weight for r in resources]

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(scaled_utilization(requested, capacity, MAX_UTILIZATION))

    def scorer(requested: Sequence[int], _allocated: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for i, req in enumerate(requested):
            if allocatable[i] == 0:
                continue
            s = resource_score(req, allocatable[i])
            if s > 0:
                node_score += s * weights[i]
                weight_sum += weights[i]
        if weight_sum == 0:
            return 0
        return go_round(float(node_score) / float(weight_sum))

    return scorer
