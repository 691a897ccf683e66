"""The resource allocation scorer shared by NodeResourcesFit and
NodeResourcesBalancedAllocation (upstream noderesources/resource_allocation.go).
The strategies live beside it: least_allocated.py, most_allocated.py and
requested_to_capacity_ratio.py.

A scorer sees, per configured resource, three integers in the scheduler's units:
what the node would have requested with the pod, what it has requested without
it, and what it can allocate. Entries whose allocatable is 0 are left at 0 and
every strategy skips them. All arithmetic is Go int64 arithmetic (`go_div`),
except where upstream itself uses float64.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from collections.abc import Mapping
from typing import Any, Callable, Sequence

import numpy as np

from framework.api.errors import ValidationError
from framework.api.objects import Pod
from framework.api.resources import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    EPHEMERAL_STORAGE,
    MEMORY,
    ResourceList,
    is_scalar_resource,
    pod_requests,
    quantity_in_units,
)
from framework.cache import NodeInfo, NodeTable, batch_table
from framework.interface import MAX_NODE_SCORE
from framework.plugins.helper import go_div

# (requested with the pod, requested without it, allocatable) -> score
Scorer = Callable[[Sequence[int], Sequence[int], Sequence[int]], int]


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """One entry of `resources` in the plugin args (config.ResourceSpec)."""

    name: str
    weight: int


DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


# --- args helpers ---------------------------------------------------------------------------

def go_value(value: Any) -> str:
    """A value as apimachinery's field errors print it (strings quoted)."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def invalid(field: str, value: Any, detail: str) -> ValidationError:
    """field.Invalid."""
    return ValidationError(field, f"Invalid value: {go_value(value)}: {detail}")


def require_int(raw: Mapping[str, Any], key: str, field: str, default: int = 0) -> int:
    v = raw.get(key, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValidationError(f"{field}.{key}", "must be an integer")
    return v


def parse_resource_specs(raw: Any, field: str) -> tuple[ResourceSpec, ...]:
    """`resources` with upstream's v1 defaults: an empty list becomes cpu:1, memory:1
    and an absent or zero weight becomes 1."""
    if raw is None:
        return DEFAULT_RESOURCES
    if not isinstance(raw, list):
        raise ValidationError(field, "must be a list")
    specs: list[ResourceSpec] = []
    for i, item in enumerate(raw):
        f = f"{field}[{i}]"
        if not isinstance(item, Mapping):
            raise ValidationError(f, "must be an object")
        name = item.get("name", "")
        if not isinstance(name, str):
            raise ValidationError(f"{f}.name", "must be a string")
        weight = require_int(item, "weight", f)
        specs.append(ResourceSpec(name, weight or 1))
    return tuple(specs) if specs else DEFAULT_RESOURCES


# --- pod requests ----------------------------------------------------------------------------

# Upstream's defaults for cpu/memory a container leaves unstated, when scoring.
_NON_MISSING: ResourceList = {CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000), MEMORY: Fraction(DEFAULT_MEMORY_REQUEST)}


def pod_resource_list(pod: Pod, *, non_missing: bool, pod_level: bool) -> ResourceList:
    """resourcehelper.PodRequests for a pod that is not bound yet. `non_missing` fills
    in cpu/memory a container does not state (NonMissingContainerRequests);
    `pod_level` is the PodLevelResources gate."""
    if pod_level:
        return pod.non_zero_requests_list if non_missing else pod.requests
    return pod_requests(
        [c.requests for c in pod.containers],
        [(c.requests, c.restart_policy == "Always") for c in pod.init_containers],
        pod.overhead,
        None,
        non_missing=_NON_MISSING if non_missing else None,
    )


class PodRequestsState:
    """PreScore's record of the pod's request per configured resource, in that order.
    Never changed after it is written, so clone() shares it."""

    __slots__ = ("pod_requests",)

    def __init__(self, pod_requests: list[int]) -> None:
        self.pod_requests = pod_requests

    def clone(self) -> "PodRequestsState":
        return self


# --- the scorer ------------------------------------------------------------------------------

class ResourceAllocationScorer:
    """resourceAllocationScorer: turns a node and the pod's per-resource requests into
    the three vectors a strategy scores.

    `use_requested` picks the node's plain requested sums for cpu and memory
    (BalancedAllocation) instead of the non-zero ones (NodeResourcesFit), and also
    whether the pod's own missing cpu/memory requests count as the defaults."""

    __slots__ = ("resources", "scorer", "use_requested", "pod_level")

    def __init__(self, resources: Sequence[ResourceSpec], scorer: Scorer, *, use_requested: bool, pod_level: bool) -> None:
        self.resources = tuple(resources)
        self.scorer = scorer
        self.use_requested = use_requested
        self.pod_level = pod_level

    def pod_requests(self, pod: Pod) -> list[int]:
        """calculatePodResourceRequestList: one integer per configured resource."""
        reqs = pod_resource_list(pod, non_missing=not self.use_requested, pod_level=self.pod_level)
        out: list[int] = []
        for spec in self.resources:
            amount = reqs.get(spec.name)
            out.append(quantity_in_units(spec.name, amount) if amount is not None else 0)
        return out

    @staticmethod
    def is_best_effort(pod_requests: Sequence[int]) -> bool:
        return all(r == 0 for r in pod_requests)

    def score(self, node_info: NodeInfo, pod_requests: Sequence[int]) -> int:
        n = len(self.resources)
        requested = [0] * n
        allocated = [0] * n
        allocatable = [0] * n
        for i, spec in enumerate(self.resources):
            alloc, used = self.allocatable_and_allocated(node_info, spec.name, pod_requests[i])
            if alloc == 0:
                continue
            allocatable[i] = alloc
            allocated[i] = used
            requested[i] = used + pod_requests[i]
        return self.scorer(requested, allocated, allocatable)

    def score_nodes(self, nodes: Sequence[NodeInfo], pod_requests: Sequence[int]) -> "list[int] | np.ndarray":
        """score() for every node: the three vectors are built as columns (one list per
        resource) and handed to the strategy's batch form when it has one. On a
        NodeBatch the columns are numpy columns of the snapshot's NodeTable and the
        strategy's numpy form (`batch_np`) scores them."""
        batch_np = getattr(self.scorer, "batch_np", None)
        tb = batch_table(nodes) if batch_np is not None else None
        if tb is not None:
            columns = self._np_columns(tb[0], tb[1], pod_requests)
            if columns is not None:
                return batch_np(*columns)
        requested: list[list[int]] = []
        allocated: list[list[int]] = []
        allocatable: list[list[int]] = []
        for spec, pod_request in zip(self.resources, pod_requests):
            allocs, used = self._columns(nodes, spec.name, pod_request)
            allocatable.append(allocs)
            if 0 in allocs:
                used = [u if a else 0 for a, u in zip(allocs, used)]
                requested.append([u + pod_request if a else 0 for a, u in zip(allocs, used)])
            else:
                requested.append([u + pod_request for u in used])
            allocated.append(used)
        batch = getattr(self.scorer, "batch", None)
        if batch is not None:
            return batch(requested, allocated, allocatable)
        scorer = self.scorer
        return [scorer(r, u, a) for r, u, a in zip(zip(*requested), zip(*allocated), zip(*allocatable))]

    def _np_columns(self, table: NodeTable, rows: np.ndarray, pod_requests: Sequence[int]
                    ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]] | None:
        """(requested, allocated, allocatable) as numpy columns, one per resource; None
        when a resource has no column (an extended resource the pod requests)."""
        requested: list[np.ndarray] = []
        allocated: list[np.ndarray] = []
        allocatable: list[np.ndarray] = []
        for spec, pod_request in zip(self.resources, pod_requests):
            name = spec.name
            if pod_request == 0 and is_scalar_resource(name):
                zeros = np.zeros(len(rows), dtype=np.int64)
                allocatable.append(zeros)
                allocated.append(zeros)
                requested.append(zeros)
                continue
            if name == CPU:
                alloc, used = table.alloc_cpu, (table.req_cpu if self.use_requested else table.nz_cpu)
            elif name == MEMORY:
                alloc, used = table.alloc_mem, (table.req_mem if self.use_requested else table.nz_mem)
            elif name == EPHEMERAL_STORAGE:
                alloc, used = table.alloc_eph, table.req_eph
            else:
                return None
            alloc = alloc[rows]
            used = used[rows]
            offered = alloc != 0
            if not offered.all():
                used = np.where(offered, used, 0)
                requested.append(np.where(offered, used + pod_request, 0))
            else:
                requested.append(used + pod_request)
            allocatable.append(alloc)
            allocated.append(used)
        return requested, allocated, allocatable

    def _columns(self, nodes: Sequence[NodeInfo], name: str, pod_request: int) -> tuple[list[int], list[int]]:
        """allocatable_and_allocated for every node, as (allocatable, requested) columns."""
        if pod_request == 0 and is_scalar_resource(name):
            zeros = [0] * len(nodes)
            return zeros, list(zeros)
        if name == CPU:
            if self.use_requested:
                return [ni.allocatable.milli_cpu for ni in nodes], [ni.requested.milli_cpu for ni in nodes]
            return [ni.allocatable.milli_cpu for ni in nodes], [ni.non_zero_requested.milli_cpu for ni in nodes]
        if name == MEMORY:
            if self.use_requested:
                return [ni.allocatable.memory for ni in nodes], [ni.requested.memory for ni in nodes]
            return [ni.allocatable.memory for ni in nodes], [ni.non_zero_requested.memory for ni in nodes]
        pairs = [self.allocatable_and_allocated(ni, name, pod_request) for ni in nodes]
        return [a for a, _ in pairs], [u for _, u in pairs]

    def allocatable_and_allocated(self, node_info: NodeInfo, name: str, pod_request: int) -> tuple[int, int]:
        """(allocatable, requested without the pod) for one resource; (0, 0) leaves it
        out of the score: an extended resource the pod does not request, or a
        resource the node does not offer."""
        if pod_request == 0 and is_scalar_resource(name):
            return 0, 0
        requested = node_info.requested if self.use_requested else node_info.non_zero_requested
        if name == CPU:
            return node_info.allocatable.milli_cpu, requested.milli_cpu
        if name == MEMORY:
            return node_info.allocatable.memory, requested.memory
        if name == EPHEMERAL_STORAGE:
            return node_info.allocatable.ephemeral_storage, node_info.requested.ephemeral_storage
        alloc = node_info.allocatable.scalar.get(name)
        if alloc is not None:
            return alloc, node_info.requested.scalar.get(name, 0)
        return 0, 0


def weighted_mean_scorer(resources: Sequence[ResourceSpec], per_resource: Callable[[int, int], int],
                         column: Callable[[list[int], list[int]], list[int]],
                         column_np: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None) -> Scorer:
    """The weighted mean of a per-resource score over the resources a node offers;
    `column` is `per_resource` over whole columns with the same arithmetic, and
    `column_np` the same over numpy columns (0 where the capacity is 0)."""
    weights = [r.weight for r in resources]

    def batch_np(requested: list[np.ndarray], _allocated: list[np.ndarray], allocatable: list[np.ndarray]) -> np.ndarray:
        """batch() over numpy columns."""
        n = len(allocatable[0]) if allocatable else 0
        node_scores = np.zeros(n, dtype=np.int64)
        weight_sums = np.zeros(n, dtype=np.int64)
        for reqs, allocs, w in zip(requested, allocatable, weights):
            assert column_np is not None
            node_scores += column_np(reqs, allocs) * w
            weight_sums += (allocs != 0) * w
        # Scores and weights are never negative, so floor division is Go's division.
        return np.where(weight_sums > 0, node_scores // np.maximum(weight_sums, 1), 0)

    def scorer(requested: Sequence[int], _allocated: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for i, req in enumerate(requested):
            if allocatable[i] == 0:
                continue
            node_score += per_resource(req, allocatable[i]) * weights[i]
            weight_sum += weights[i]
        return go_div(node_score, weight_sum) if weight_sum else 0

    def batch(requested: list[list[int]], _allocated: list[list[int]], allocatable: list[list[int]]) -> list[int]:
        """scorer() over columns: the same sums, resource by resource. A resource
        every node offers adds its weight to every node's weight sum."""
        n = len(allocatable[0]) if allocatable else 0
        node_scores = [0] * n
        common_weight = 0
        weight_sums: list[int] | None = None
        for reqs, allocs, w in zip(requested, allocatable, weights):
            scores = column(reqs, allocs)
            if 0 not in allocs:
                node_scores = [t + s * w for t, s in zip(node_scores, scores)]
                common_weight += w
                continue
            if weight_sums is None:
                weight_sums = [0] * n
            for k, alloc in enumerate(allocs):
                if alloc != 0:
                    node_scores[k] += scores[k] * w
                    weight_sums[k] += w
        # Scores and weights are never negative, so floor division is Go's division.
        if weight_sums is None:
            return [t // common_weight for t in node_scores] if common_weight else [0] * n
        return [t // (ws + common_weight) if ws + common_weight else 0 for t, ws in zip(node_scores, weight_sums)]

    scorer.batch = batch  # type: ignore[attr-defined]
    if column_np is not None:
        scorer.batch_np = batch_np  # type: ignore[attr-defined]
    return scorer
