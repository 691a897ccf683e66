"""RequestedToCapacityRatio: score by a user-given utilization -> score curve
(upstream requested_to_capacity_ratio.go and helper/shape_score.go). Every
function here takes one node's integers or numpy columns alike
(helper/elementwise.py)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from framework.interface import MAX_NODE_SCORE
from framework.plugins.helper.elementwise import divisor, go_div, go_round, select, to_float
from framework.plugins.noderesources.resource_allocation import ResourceSpec, Scorer

# Upstream's config.MaxCustomPriorityScore: shape scores are given in [0, 10].
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100

__all__ = ["build_broken_linear_function", "go_round", "requested_to_capacity_ratio_scorer", "scaled_utilization"]


def build_broken_linear_function(shape: Sequence[tuple[int, int]]) -> Callable[[Any], Any]:
    """helper.BuildBrokenLinearFunction over (utilization, score) points sorted by
    strictly increasing utilization: constant before the first and after the last
    point, linear (Go integer division) in between."""
    points = tuple(shape)

    def f(p: Any) -> Any:
        # The first point at or above p decides: walk from the last one back.
        out: Any = points[-1][1]
        for (prev_util, prev_score), (util, score) in reversed(list(zip(points, points[1:]))):
            out = select(p <= util, prev_score + go_div((score - prev_score) * (p - prev_util), util - prev_util), out)
        return select(p <= points[0][0], points[0][1], out)

    return f


def scaled_utilization(requested: Any, capacity: Any, maximum: int) -> Any:
    """requested * maximum / capacity with requested clamped to [0, capacity]."""
    return select((capacity <= 0) | (requested <= 0), 0,
                  select(requested >= capacity, maximum, requested * maximum // divisor(capacity)))


def requested_to_capacity_ratio_scorer(resources: Sequence[ResourceSpec], shape: Sequence[tuple[int, int]]) -> Scorer:
    """Bin packing by a user-given utilization -> score curve. Shape scores are in
    [0, 10] and scaled to [0, 100]; resources scoring 0 do not count in the mean."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = build_broken_linear_function([(u, s * scale) for u, s in shape])
    weights = [r.weight for r in resources]

    def resource_score(requested: Any, capacity: Any) -> Any:
        return select((capacity == 0) | (requested > capacity), raw(MAX_UTILIZATION),
                      raw(scaled_utilization(requested, capacity, MAX_UTILIZATION)))

    def scorer(requested: Sequence[Any], _allocated: Sequence[Any], allocatable: Sequence[Any],
               _offers: Sequence[Any] | None = None) -> Any:
        node_score: Any = 0
        weight_sum: Any = 0
        for req, alloc, weight in zip(requested, allocatable, weights):
            score = resource_score(req, alloc)
            counted = (alloc != 0) & (score > 0)
            node_score = node_score + counted * score * weight
            weight_sum = weight_sum + counted * weight
        return select(weight_sum > 0, go_round(to_float(node_score) / to_float(divisor(weight_sum))), 0)

    return scorer
