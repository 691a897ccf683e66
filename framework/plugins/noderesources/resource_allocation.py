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
from framework.identity_memo import IdentityMemo
from framework.node_table import NodeTable, columnar_table
from framework.interface import MAX_NODE_SCORE
from framework.plugins.helper.elementwise import collapsed, divisor, keep, select

# (requested with the pod, requested without it, allocatable[, offered]) -> score; each
# entry an integer (one node) or a numpy column (many nodes), the score likewise. `offered`
# (allocatable != 0 per resource, collapsed: plain True where every node offers it) is
# handed on when the caller has it; a scorer given None works it out.
Scorer = Callable[..., Any]


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

    __slots__ = ("resources", "scorer", "use_requested", "pod_level", "_scalar", "_readers", "_units")

    def __init__(self, resources: Sequence[ResourceSpec], scorer: Scorer, *, use_requested: bool, pod_level: bool) -> None:
        self.resources = tuple(resources)
        self.scorer = scorer
        self.use_requested = use_requested
        self.pod_level = pod_level
        self._scalar = tuple(is_scalar_resource(spec.name) for spec in self.resources)
        self._readers = tuple(self._reader(spec.name) for spec in self.resources)
        # The last request lists turned into units, by identity: a pod's lists are its
        # container's (Container.alone), shared by the pods of one template and never
        # changed, so the list object itself (held here) is the key.
        self._units: IdentityMemo[ResourceList, tuple[int, ...]] = IdentityMemo(64)

    def pod_requests(self, pod: Pod) -> list[int]:
        """calculatePodResourceRequestList: one integer per configured resource."""
        reqs = pod_resource_list(pod, non_missing=not self.use_requested, pod_level=self.pod_level)
        return list(self._units.of(reqs, self._in_units))

    def _in_units(self, reqs: ResourceList) -> tuple[int, ...]:
        out: list[int] = []
        for spec in self.resources:
            amount = reqs.get(spec.name)
            out.append(quantity_in_units(spec.name, amount) if amount is not None else 0)
        return tuple(out)

    @staticmethod
    def is_best_effort(pod_requests: Sequence[int]) -> bool:
        return all(r == 0 for r in pod_requests)

    def score(self, node_info: NodeInfo, pod_requests: Sequence[int]) -> int:
        readers = self._readers
        return int(self.scorer(*self._vectors(pod_requests, lambda k: readers[k](node_info))))

    def score_nodes(self, nodes: Sequence[NodeInfo], pod_requests: Sequence[int]) -> "list[int] | np.ndarray":
        """score() for every node, with the strategy on numpy columns: on a columnar
        node list the NodeTable's (extended resources gathered from the nodes that
        have any); on a plain list (nodes an extender kept, clones) columns read from
        the nodes once. Node by node only where a number is beyond the columns' range."""
        if not nodes or max(pod_requests, default=0) >= _MAX_COLUMN_VALUE:
            return [self.score(ni, pod_requests) for ni in nodes]
        tc = columnar_table(nodes)
        # The rows' index: their span when they run on (columns read as views, never written
        # here: every strategy makes new columns), else the rows themselves (a gather).
        at = None if tc is None else (tc[1] if nodes.span is None else nodes.span)  # type: ignore[attr-defined]
        columns: list[tuple[np.ndarray, np.ndarray] | None] = []
        for k, (spec, pod_request) in enumerate(zip(self.resources, pod_requests)):
            held = None if tc is None else _column_of(tc[0], spec.name, self.use_requested)
            if held is not None:
                columns.append((held[0][at], held[1][at]))  # type: ignore[index]
            elif pod_request == 0 and self._scalar[k]:
                columns.append(None)  # left out: _vectors does not ask
            else:
                gathered = _gathered(nodes, None if tc is None else tc[0].has_scalar[at], self._readers[k])
                if gathered is None:
                    return [self.score(ni, pod_requests) for ni in nodes]
                columns.append(gathered)

        def amounts(k: int) -> tuple[np.ndarray, np.ndarray]:
            return columns[k]  # type: ignore[return-value]

        scores = self.scorer(*self._vectors(pod_requests, amounts))
        # A strategy over resources no node offers is the same number for every node.
        return scores if isinstance(scores, np.ndarray) else [int(scores)] * len(nodes)

    def _vectors(self, pod_requests: Sequence[int], amounts: Callable[[int], tuple[Any, Any]]
                 ) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
        """(requested, allocated, allocatable, offered), one entry per configured resource,
        from `amounts(k)` -> (allocatable, requested without the pod) of the k-th. An extended
        resource the pod does not request, and a resource the node does not offer,
        are left out (0, 0, 0): the plain 0 for every node at once. `offered`: allocatable
        != 0, collapsed (the scorers read it rather than compare again)."""
        requested: list[Any] = []
        allocated: list[Any] = []
        allocatable: list[Any] = []
        offers: list[Any] = []
        for k, pod_request in enumerate(pod_requests):
            if pod_request == 0 and self._scalar[k]:
                alloc, used = 0, 0
            else:
                alloc, used = amounts(k)
            offered = collapsed(alloc != 0)  # every node offering it: counted once, not per keep()
            allocatable.append(alloc)
            allocated.append(keep(offered, used))
            requested.append(keep(offered, used + pod_request))
            offers.append(offered)
        return requested, allocated, allocatable, offers

    def _reader(self, name: str) -> Callable[[NodeInfo], tuple[int, int]]:
        """One node's (allocatable, requested without the pod) of a resource."""
        non_zero = not self.use_requested
        if name == CPU:
            return lambda ni: (ni.allocatable.milli_cpu, (ni.non_zero_requested if non_zero else ni.requested).milli_cpu)
        if name == MEMORY:
            return lambda ni: (ni.allocatable.memory, (ni.non_zero_requested if non_zero else ni.requested).memory)
        if name == EPHEMERAL_STORAGE:
            return lambda ni: (ni.allocatable.ephemeral_storage, ni.requested.ephemeral_storage)

        def scalar(ni: NodeInfo) -> tuple[int, int]:
            alloc = ni.allocatable.scalar.get(name)
            return (0, 0) if alloc is None else (alloc, ni.requested.scalar.get(name, 0))

        return scalar


def _column_of(table: NodeTable, name: str, use_requested: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """The NodeTable's (allocatable, requested) columns of a resource it holds."""
    if name == CPU:
        return table.alloc_cpu, (table.req_cpu if use_requested else table.nz_cpu)
    if name == MEMORY:
        return table.alloc_mem, (table.req_mem if use_requested else table.nz_mem)
    if name == EPHEMERAL_STORAGE:
        return table.alloc_eph, table.req_eph
    return None


def _gathered(nodes: Sequence[NodeInfo], flagged: np.ndarray | None,
              amounts: Callable[[NodeInfo], tuple[int, int]]) -> tuple[np.ndarray, np.ndarray] | None:
    """(allocatable, requested) columns of a resource read from the nodes: all of
    them, or only those whose has_scalar flag is set (`flagged`, for an extended
    resource: the others have none); None when a value is too large for the columns."""
    if flagged is None:
        pairs = [amounts(ni) for ni in nodes]
        if max(max(pair) for pair in pairs) >= _MAX_COLUMN_VALUE:
            return None
        both = np.array(pairs, dtype=np.int64).reshape(len(nodes), 2)
        return both[:, 0].copy(), both[:, 1].copy()
    alloc = np.zeros(len(nodes), dtype=np.int64)
    used = np.zeros(len(nodes), dtype=np.int64)
    for i in np.flatnonzero(flagged).tolist():
        a, u = amounts(nodes[i])
        if max(a, u) >= _MAX_COLUMN_VALUE:
            return None
        alloc[i] = a
        used[i] = u
    return alloc, used


def weighted_mean_scorer(resources: Sequence[ResourceSpec], per_resource: Callable[[Any, Any, Any], Any]) -> Scorer:
    """The weighted mean (Go integer division) of a per-resource score over the
    resources a node offers, for one node or a column of nodes alike;
    `per_resource(requested, capacity, offered)` is 0 where the capacity is 0 (`offered`:
    capacity != 0, plain True where every node offers)."""
    weights = [r.weight for r in resources]

    def scorer(requested: Sequence[Any], _allocated: Sequence[Any], allocatable: Sequence[Any],
               offers: Sequence[Any] | None = None) -> Any:
        node_score: Any = 0
        weight_sum: Any = 0  # a plain number while every node offers the resources so far
        for k, (req, alloc, weight) in enumerate(zip(requested, allocatable, weights)):
            # One comparison for the score and the weight (the caller's, when it has it).
            offered = collapsed(alloc != 0) if offers is None else offers[k]
            score = per_resource(req, alloc, offered)  # 0 where alloc is 0
            node_score = node_score + (score if weight == 1 else score * weight)
            weight_sum = weight_sum + keep(offered, weight)
        # Scores and weights are never negative, so floor division is Go's division.
        return select(weight_sum > 0, node_score // divisor(weight_sum), 0)

    return scorer
