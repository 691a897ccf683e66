"""NodeResourcesBalancedAllocation: favours nodes whose resources stay evenly used
(upstream noderesources/balanced_allocation.go).

The balance of a node is (1 - std) * 100 over the used fractions of the configured
resources (float64 as upstream). The score rewards how much the pod improves that
balance: 50 + (50 + balance_with_pod - balance_without_pod) / 2, with Go integer
division, so it lies in [25, 100] and 75 means "no change". Best-effort pods (no
request for any configured resource) skip this plugin at PreScore.
"""
from __future__ import annotations

import math

import numpy as np
from collections.abc import Mapping
from typing import Any, Sequence

from framework.api.errors import ValidationError
from framework.api.objects import Pod
from framework.cache import NodeInfo
from framework.features import FeatureGates
from framework.interface import MAX_NODE_SCORE, Code, CycleState, Handle, Status
from framework.plugins.helper import go_div
from framework.plugins.noderesources.resource_allocation import (
    PodRequestsState,
    ResourceAllocationScorer,
    ResourceSpec,
    go_value,
    invalid,
    parse_resource_specs,
)

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


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """(1 - standard deviation of the used fractions) * 100, fractions capped at 1."""
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable):
        if alloc == 0:
            continue
        fraction = float(req) / float(alloc)
        if fraction > 1:
            fraction = 1.0
        total += fraction
        fractions.append(fraction)
    std = 0.0
    # Two resources (the usual cpu+memory) have the closed form |f0 - f1| / 2.
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / float(len(fractions))
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / float(len(fractions)))
    return int((1 - std) * float(MAX_NODE_SCORE))


def balanced_resource_scorer(requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
    with_pod = balanced_resource_score(requested, allocatable)
    without_pod = balanced_resource_score(allocated, allocatable)
    half = MAX_NODE_SCORE // 2
    return half + go_div(half + with_pod - without_pod, 2)


def _balanced_batch(requested: list[list[int]], allocated: list[list[int]], allocatable: list[list[int]]) -> list[int]:
    """balanced_resource_scorer over columns. The usual two resources on nodes that
    offer both take the closed form inline; anything else goes node by node."""
    if len(allocatable) != 2:
        return [balanced_resource_scorer(r, u, a) for r, u, a in zip(zip(*requested), zip(*allocated), zip(*allocatable))]
    half = MAX_NODE_SCORE // 2
    max_score = float(MAX_NODE_SCORE)
    out: list[int] = []
    for r0, r1, u0, u1, a0, a1 in zip(requested[0], requested[1], allocated[0], allocated[1], allocatable[0], allocatable[1]):
        if a0 == 0 or a1 == 0:
            out.append(balanced_resource_scorer((r0, r1), (u0, u1), (a0, a1)))
            continue
        fa0 = float(a0)
        fa1 = float(a1)
        f0 = float(r0) / fa0
        f1 = float(r1) / fa1
        g0 = float(u0) / fa0
        g1 = float(u1) / fa1
        # balanced_resource_score's closed form for two fractions capped at 1.
        with_pod = int((1 - abs(((f0 if f0 <= 1 else 1.0) - (f1 if f1 <= 1 else 1.0)) / 2)) * max_score)
        without_pod = int((1 - abs(((g0 if g0 <= 1 else 1.0) - (g1 if g1 <= 1 else 1.0)) / 2)) * max_score)
        out.append(half + go_div(half + with_pod - without_pod, 2))
    return out


def _balanced_np(requested: list[np.ndarray], allocated: list[np.ndarray], allocatable: list[np.ndarray]) -> np.ndarray:
    """_balanced_batch over numpy columns: the closed form for two resources on nodes
    offering both (the same float operations, so the same results), the rest
    node by node."""
    if len(allocatable) != 2:
        return np.array(_balanced_batch([c.tolist() for c in requested], [c.tolist() for c in allocated],
                                        [c.tolist() for c in allocatable]), dtype=np.int64)
    a0, a1 = allocatable
    both = (a0 != 0) & (a1 != 0)
    fa0 = np.where(both, a0, 1).astype(np.float64)
    fa1 = np.where(both, a1, 1).astype(np.float64)
    max_score = float(MAX_NODE_SCORE)

    def score(r0: np.ndarray, r1: np.ndarray) -> np.ndarray:
        f0 = np.minimum(r0.astype(np.float64) / fa0, 1.0)
        f1 = np.minimum(r1.astype(np.float64) / fa1, 1.0)
        # Never negative: truncation is int().
        return ((1 - np.abs((f0 - f1) / 2)) * max_score).astype(np.int64)

    half = MAX_NODE_SCORE // 2
    diff = half + score(requested[0], requested[1]) - score(allocated[0], allocated[1])
    out = half + np.sign(diff) * (np.abs(diff) // 2)  # Go's division truncates toward zero
    for i in np.flatnonzero(~both).tolist():
        out[i] = balanced_resource_scorer((int(requested[0][i]), int(requested[1][i])),
                                          (int(allocated[0][i]), int(allocated[1][i])),
                                          (int(a0[i]), int(a1[i])))
    return out


balanced_resource_scorer.batch = _balanced_batch  # type: ignore[attr-defined]
balanced_resource_scorer.batch_np = _balanced_np  # type: ignore[attr-defined]


class NodeResourcesBalancedAllocation:
    name = "NodeResourcesBalancedAllocation"

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
            return Status(Code.Skip)
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
