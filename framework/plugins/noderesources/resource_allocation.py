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
from framework.cache import NodeInfo
from framework.node_table import NodeTable, columnar_table
from framework.interface import MAX_NODE_SCORE
from framework.plugins.helper.elementwise import divisor, select

# (requested with the pod, requested without it, allocatable) -> score; each entry an
# integer (one node) or a numpy column (many nodes), the score likewise.
Scorer = Callable[[Sequence[Any], Sequence[Any], Sequence[Any]], Any]


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

# The columnar form keeps to numbers well inside int64 (scores multiply by 100 and
# by weights); a node or pod beyond them is scored node by node, by the same formula.
_MAX_COLUMN_VALUE = 1 << 55


class ResourceAllocationScorer:
    """resourceAllocationScorer: turns a node and the pod's per-resource requests into
    the three vectors a strategy scores: per configured resource what the node would
    have requested with the pod, what it has requested without it, and what it can
    allocate (all three 0 where the resource is left out).

    A strategy is one formula over those vectors whose entries are either plain
    integers (one node: score()) or numpy columns (every node of a columnar node
    list at once: score_nodes()); see helper/elementwise.py.

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
        return int(self.scorer(*self._vectors(pod_requests, 0, lambda name: self._amounts(node_info, name))))

    def score_nodes(self, nodes: Sequence[NodeInfo], pod_requests: Sequence[int]) -> "list[int] | np.ndarray":
        """score() for every node: on a columnar node list the strategy scores numpy
        columns of the snapshot's NodeTable (extended resources gathered from the
        nodes that have any); otherwise node by node."""
        tc = columnar_table(nodes)
        if tc is None or max(pod_requests, default=0) >= _MAX_COLUMN_VALUE:
            return [self.score(ni, pod_requests) for ni in nodes]
        table, rows = tc
        zero = np.zeros(len(rows), dtype=np.int64)
        extended: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for spec, pod_request in zip(self.resources, pod_requests):
            if _column_of(table, spec.name, self.use_requested) is None and not (
                    pod_request == 0 and is_scalar_resource(spec.name)):
                columns = _gathered(nodes, table.has_scalar[rows], spec.name, self._amounts)
                if columns is None:
                    return [self.score(ni, pod_requests) for ni in nodes]
                extended[spec.name] = columns

        def amounts(name: str) -> tuple[np.ndarray, np.ndarray]:
            got = extended.get(name)
            if got is not None:
                return got
            alloc, used = _column_of(table, name, self.use_requested)  # type: ignore[misc]
            return alloc[rows], used[rows]

        return self.scorer(*self._vectors(pod_requests, zero, amounts))

    def _vectors(self, pod_requests: Sequence[int], zero: Any, amounts: Callable[[str], tuple[Any, Any]]
                 ) -> tuple[list[Any], list[Any], list[Any]]:
        """(requested, allocated, allocatable), one entry per configured resource, from
        `amounts(name)` -> (allocatable, requested without the pod). An extended
        resource the pod does not request, and a resource the node does not offer,
        are left out (0, 0, 0)."""
        requested: list[Any] = []
        allocated: list[Any] = []
        allocatable: list[Any] = []
        for spec, pod_request in zip(self.resources, pod_requests):
            if pod_request == 0 and is_scalar_resource(spec.name):
                alloc, used = zero, zero
            else:
                alloc, used = amounts(spec.name)
            offered = alloc != 0
            allocatable.append(alloc)
            allocated.append(select(offered, used, 0))
            requested.append(select(offered, used + pod_request, 0))
        return requested, allocated, allocatable

    def _amounts(self, node_info: NodeInfo, name: str) -> tuple[int, int]:
        """(allocatable, requested without the pod) of one resource on one node."""
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


def _column_of(table: NodeTable, name: str, use_requested: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """The NodeTable's (allocatable, requested) columns of a resource it holds."""
    if name == CPU:
        return table.alloc_cpu, (table.req_cpu if use_requested else table.nz_cpu)
    if name == MEMORY:
        return table.alloc_mem, (table.req_mem if use_requested else table.nz_mem)
    if name == EPHEMERAL_STORAGE:
        return table.alloc_eph, table.req_eph
    return None


def _gathered(nodes: Sequence[NodeInfo], flagged: np.ndarray, name: str,
              amounts: Callable[[NodeInfo, str], tuple[int, int]]) -> tuple[np.ndarray, np.ndarray] | None:
    """(allocatable, requested) columns of an extended resource, read from the nodes
    whose has_scalar flag is set (the others have none); None when a value is too
    large for the columns."""
    alloc = np.zeros(len(nodes), dtype=np.int64)
    used = np.zeros(len(nodes), dtype=np.int64)
    for i in np.flatnonzero(flagged).tolist():
        a, u = amounts(nodes[i], name)
        if max(a, u) >= _MAX_COLUMN_VALUE:
            return None
        alloc[i] = a
        used[i] = u
    return alloc, used


def weighted_mean_scorer(resources: Sequence[ResourceSpec], per_resource: Callable[[Any, Any], Any]) -> Scorer:
    """The weighted mean (Go integer division) of a per-resource score over the
    resources a node offers, for one node or a column of nodes alike."""
    weights = [r.weight for r in resources]

    def scorer(requested: Sequence[Any], _allocated: Sequence[Any], allocatable: Sequence[Any]) -> Any:
        node_score: Any = 0
        weight_sum: Any = 0
        for req, alloc, weight in zip(requested, allocatable, weights):
            offered = alloc != 0
            node_score = node_score + offered * per_resource(req, alloc) * weight
            weight_sum = weight_sum + offered * weight
        # Scores and weights are never negative, so floor division is Go's division.
        return select(weight_sum > 0, node_score // divisor(weight_sum), 0)

    return scorer
