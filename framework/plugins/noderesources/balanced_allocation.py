"""NodeResourcesBalancedAllocation: favours nodes whose resources stay evenly used
(upstream noderesources/balanced_allocation.go).

The balance of a node is (1 - std) * 100 over the used fractions of the configured
resources (float64 as upstream). The score rewards how much the pod improves that
balance: 50 + (50 + balance_with_pod - balance_without_pod) / 2, with Go integer
division, so it lies in [25, 100] and 75 means "no change". Best-effort pods (no
request for any configured resource) skip this plugin at PreScore.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Hashable, Sequence

from framework.api.errors import ValidationError
from framework.api.objects import Pod
from framework.cache import NodeInfo
from framework.features import FeatureGates
from framework.interface import MAX_NODE_SCORE, SKIP, CycleState, Handle, SignPurpose, Status
from framework.plugins.helper.elementwise import (collapsed, divisor, float_divisor, go_div, keep, minimum, select, sqrt,
                                                  to_float, to_int)
from framework.plugins.noderesources.resource_allocation import (
    PodRequestsState,
    ResourceAllocationScorer,
    ResourceSpec,
    go_value,
    invalid,
    parse_resource_specs,
)
from framework.plugins.helper.signing import ALL_SIGNED

PRE_SCORE_STATE_KEY = "PreScoreNodeResourcesBalancedAllocation"


def parse_balanced_allocation_args(raw: Mapping[str, Any] | None) -> tuple[ResourceSpec, ...]:
    """`resources` with defaults (cpu, memory), then ValidateNodeResourcesBalancedAllocationArgs:
    names unique, every weight 1."""
    raw = raw or {}
    if not isinstance(raw, Mapping):
        raise ValidationError("", "NodeResourcesBalancedAllocationArgs must be an object")
    resources = parse_resource_specs(raw.get("resources"), "resources")
    seen: set[str] = set()
    for i, spec in enumerate(resources):
        if spec.name in seen:
            raise ValidationError(f"resources[{i}].name", f"Duplicate value: {go_value(spec.name)}")
        seen.add(spec.name)
        if spec.weight != 1:
            raise invalid(f"resources[{i}].weight", spec.weight, "must be 1")
    return resources


def balanced_resource_score(requested: Sequence[Any], allocatable: Sequence[Any],
                            capacities: Sequence[Any] | None = None, offered: Sequence[Any] | None = None) -> Any:
    """(1 - standard deviation of the used fractions) * 100, fractions capped at 1,
    over the resources a node offers (entries of requested are 0 where allocatable
    is), for one node or a column of nodes alike (helper/elementwise.py). Floats
    are float64 as upstream's, summed in resource order (a resource left out adds
    an exact 0.0). `capacities` (the allocatable amounts as floats, 1.0 where 0)
    and `offered` (allocatable != 0) when the caller has them already."""
    if capacities is None:
        capacities = [float_divisor(alloc) for alloc in allocatable]
    if offered is None:
        offered = [alloc != 0 for alloc in allocatable]
    # float64(requested) / capacity: an integer divided by a float64 is converted to
    # float64 first, by Python and by numpy alike.
    fractions = [minimum(req / capacity, 1.0) for req, capacity in zip(requested, capacities)]
    if len(fractions) == 2:
        # Two resources (the usual cpu+memory): the closed form |f0 - f1| / 2 where both
        # are offered; one offered resource is perfectly balanced.
        std = keep(offered[0] & offered[1], abs((fractions[0] - fractions[1]) / 2))
        return to_int((1 - std) * float(MAX_NODE_SCORE))
    count: Any = 0
    total: Any = 0.0
    first: Any = 0.0  # the first two offered fractions, for the closed form
    second: Any = 0.0
    for is_offered, fraction in zip(offered, fractions):
        first = select(is_offered & (count == 0), fraction, first)
        second = select(is_offered & (count == 1), fraction, second)
        total = total + fraction
        count = count + is_offered * 1
    mean = total / to_float(divisor(count))
    acc: Any = 0.0
    for is_offered, fraction in zip(offered, fractions):
        acc = acc + select(is_offered, (fraction - mean) * (fraction - mean), 0.0)
    std = select(count == 2, abs((first - second) / 2), select(count > 2, sqrt(acc / to_float(divisor(count))), 0.0))
    return to_int((1 - std) * float(MAX_NODE_SCORE))


def balanced_resource_scorer(requested: Sequence[Any], allocated: Sequence[Any], allocatable: Sequence[Any],
                             offers: Sequence[Any] | None = None) -> Any:
    if len(allocatable) == 2 and type(allocatable[0]) is int and type(allocatable[1]) is int:
        return _two_on_one_node(requested, allocated, allocatable)
    return _scored(requested, allocated, allocatable, offers)


def _two_on_one_node(requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
    """_scored for one node and two resources (the default cpu and memory: a node-local
    column's refresh of a few nodes scores each this way), in plain Python: the same
    float64 operations in the same order, without the elementwise helpers' calls."""
    a0, a1 = allocatable
    if not (a0 and a1):  # one offered resource (or none) is perfectly balanced, with the pod and without
        return MAX_NODE_SCORE // 2 + go_div(MAX_NODE_SCORE // 2, 2)
    c0, c1 = float(a0), float(a1)
    balance = []
    for r0, r1 in ((requested[0], requested[1]), (allocated[0], allocated[1])):
        f0, f1 = r0 / c0, r1 / c1
        f0, f1 = f0 if f0 <= 1.0 else 1.0, f1 if f1 <= 1.0 else 1.0
        balance.append(int((1 - abs((f0 - f1) / 2)) * float(MAX_NODE_SCORE)))
    half = MAX_NODE_SCORE // 2
    change = half + balance[0] - balance[1]
    return half + (change // 2 if change >= 0 else -(-change // 2))


def _scored(requested: Sequence[Any], allocated: Sequence[Any], allocatable: Sequence[Any],
            offers: Sequence[Any] | None = None) -> Any:
    """balanced_resource_scorer's general form: one node or a column of nodes, any resources."""
    capacities = [float_divisor(alloc) for alloc in allocatable]
    # Counted once for both scores (given by the caller, which compared already).
    offered = [collapsed(alloc != 0) for alloc in allocatable] if offers is None else list(offers)
    with_pod = balanced_resource_score(requested, allocatable, capacities, offered)
    without_pod = balanced_resource_score(allocated, allocatable, capacities, offered)
    half = MAX_NODE_SCORE // 2
    return half + go_div(half + with_pod - without_pod, 2)


class NodeResourcesBalancedAllocation:
    name = "NodeResourcesBalancedAllocation"
    # NodeLocalScorePlugin: a node's score reads its allocatable and its pods' requests.
    score_node_local = True

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """Reads nothing of the pod beyond the common signature (SignPlugin)."""
        return ALL_SIGNED

    def __init__(self, resources: Sequence[ResourceSpec], features: FeatureGates) -> None:
        self.scorer = ResourceAllocationScorer(
            resources, balanced_resource_scorer, use_requested=True, pod_level=features.enabled("PodLevelResources")
        )

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "NodeResourcesBalancedAllocation":
        features = handle.features if handle is not None else FeatureGates()
        return cls(parse_balanced_allocation_args(args), features)

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        pod_requests = self.scorer.pod_requests(pod)
        if self.scorer.is_best_effort(pod_requests):
            # Scoring best-effort pods by balance would pile them onto one node.
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, PodRequestsState(pod_requests))
        return None

    def _pod_requests(self, state: CycleState, pod: Pod) -> list[int] | None:
        """PreScore's requests; without PreScore, None for a best-effort pod (scores 0)."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, PodRequestsState):
            return s.pod_requests
        pod_requests = self.scorer.pod_requests(pod)
        return None if self.scorer.is_best_effort(pod_requests) else pod_requests

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        pod_requests = self._pod_requests(state, pod)
        return (0 if pod_requests is None else self.scorer.score(node_info, pod_requests)), None

    def score_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[list[int], Status | None]:
        pod_requests = self._pod_requests(state, pod)
        return ([0] * len(nodes) if pod_requests is None else self.scorer.score_nodes(nodes, pod_requests)), None

    def score_extensions(self) -> None:
        return None


PLUGINS = [NodeResourcesBalancedAllocation]
