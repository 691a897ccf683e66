"""NodeResourcesFit: does the node have room for the pod's requests, and how full
would it be (upstream noderesources/fit.go; its args and
their validation are in fit_args.py).

PreFilter computes the pod's request once; Filter compares it with the node's
allocatable minus what its pods request. A request larger than the node's whole
allocatable is UnschedulableAndUnresolvable (preemption cannot help); otherwise
Unschedulable. Score applies the configured strategy (LeastAllocated,
MostAllocated or RequestedToCapacityRatio) through the shared allocation scorer.
"""
from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Callable, Hashable, Sequence

import numpy as np

from framework.api.objects import Node, Pod
from framework.api.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    Resource,
    is_extended_resource_name,
    is_scalar_resource,
)
from framework.cache import NodeInfo
from framework.node_table import NodeTable, columnar_table
from framework.features import FeatureGates
from framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code, CycleState, FilterReads,
                                 Handle, PreFilterResult, QueueingHint, SignPurpose, Status)
from framework.plugins.helper.elementwise import anywhere
from framework.plugins.helper.hints import as_objects
from framework.plugins.noderesources.resource_allocation import (
    PodRequestsState,
    ResourceAllocationScorer,
    Scorer,
    pod_resource_list,
)
from framework.plugins.noderesources.resource_allocation import _MAX_COLUMN_VALUE
from framework.plugins.noderesources.fit_args import MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO, FitArgs, parse_fit_args
from framework.plugins.noderesources.least_allocated import least_resource_scorer
from framework.plugins.noderesources.most_allocated import most_resource_scorer
from framework.plugins.noderesources.requested_to_capacity_ratio import requested_to_capacity_ratio_scorer
from framework.plugins.helper.signing import ALL_SIGNED, POD_ADDED

PRE_FILTER_STATE_KEY = "PreFilterNodeResourcesFit"
PRE_SCORE_STATE_KEY = "PreScoreNodeResourcesFit"


FIT_NAME = "NodeResourcesFit"


# --- the plugin --------------------------------------------------------------------------------

class PreFilterState:
    """The pod's request (computePodResourceRequest), written once by PreFilter, and
    the resources Filter checks for it. Never changed after, so clone() shares it."""

    __slots__ = ("request", "checks")

    def __init__(self, request: Resource, checks: "Checks") -> None:
        self.request = request
        self.checks = checks

    def clone(self) -> "PreFilterState":
        return self


def compute_pod_resource_request(pod: Pod, pod_level: bool = True) -> Resource:
    """Containers summed, init containers as the running max (sidecars included),
    plus overhead; pod-level requests win where the gate allows them."""
    if pod_level:
        return pod.resource
    return Resource.from_list(pod_resource_list(pod, non_missing=False, pod_level=False))


_ATTRIBUTES = {CPU: "milli_cpu", MEMORY: "memory", EPHEMERAL_STORAGE: "ephemeral_storage"}


@dataclass(frozen=True, slots=True)
class Checks:
    """The resources fitsRequest compares for one pod request, in its order, with
    the amounts the pod wants; `read(resource)` gives a node's Resource's amounts
    of them, in the same order."""

    names: tuple[str, ...]
    wants: tuple[int, ...]
    read: Callable[[Resource], Sequence[int]]


def checked_resources(request: Resource, ignored_resources: frozenset[str] = frozenset(),
                      ignored_resource_groups: frozenset[str] = frozenset()) -> Checks:
    """cpu, memory, ephemeral-storage where requested, then the scalar resources
    requested and not ignored (extended resources named in ignoredResources or in
    one of ignoredResourceGroups)."""
    names = [name for name in (CPU, MEMORY, EPHEMERAL_STORAGE) if request.get(name) > 0]
    for name, want in request.scalar.items():
        if want == 0:
            continue
        if is_extended_resource_name(name) and (
            name in ignored_resources
            or (ignored_resource_groups and name.split("/", 1)[0] in ignored_resource_groups)
        ):
            continue
        names.append(name)
    attributes = [_ATTRIBUTES.get(name) for name in names]
    if len(names) > 1 and None not in attributes:
        read: Callable[[Resource], Sequence[int]] = attrgetter(*attributes)  # type: ignore[arg-type]
    else:
        def read(resource: Resource) -> Sequence[int]:
            return [resource.get(name) for name in names]
    return Checks(tuple(names), tuple(request.get(name) for name in names), read)


# Bits of a shortage: the pod count, "preemption cannot help", then one bit per
# checked resource in Checks order (bit _FIRST_RESOURCE_BIT << k).
_SHORT_PODS, _SHORT_BEYOND_ALLOCATABLE, _FIRST_RESOURCE_BIT = 1, 2, 4
_MAX_COLUMN_CHECKS = 60  # resource bits that fit an int64 column


def shortage(wants: Sequence[int], num_pods: Any, allowed_pods: Any, allocatable: Sequence[Any],
             used: Sequence[Any]) -> Any:
    """fitsRequest as a shortage mask, for one node (integers) or a column of nodes
    (numpy columns) alike: allocatable[k] and used[k] are the node's amounts of the
    k-th checked resource. 0 where the pod fits. A resource the pod asks for more
    of than the node's whole allocatable also sets _SHORT_BEYOND_ALLOCATABLE.
    Where no node is short of anything (the usual case) the mask is the plain 0,
    known from the comparisons alone: the bits are only composed when some node
    needs its reasons."""
    too_many = num_pods + 1 > allowed_pods
    any_short = too_many
    for k, want in enumerate(wants):
        any_short = any_short | (want > allocatable[k] - used[k])
    if not anywhere(any_short):
        return 0
    mask = too_many * _SHORT_PODS
    for k, want in enumerate(wants):
        short = want > allocatable[k] - used[k]
        mask = mask | short * (_FIRST_RESOURCE_BIT << k) | (short & (want > allocatable[k])) * _SHORT_BEYOND_ALLOCATABLE
    return mask


def shortage_status(mask: int, checks: Checks) -> Status | None:
    """filter()'s Status for a shortage mask: the reasons in fitsRequest's order,
    UnschedulableAndUnresolvable where preemption cannot help."""
    if not mask:
        return None
    reasons = ["Too many pods"] if mask & _SHORT_PODS else []
    reasons.extend(f"Insufficient {name}" for k, name in enumerate(checks.names) if mask & (_FIRST_RESOURCE_BIT << k))
    code = Code.UnschedulableAndUnresolvable if mask & _SHORT_BEYOND_ALLOCATABLE else Code.Unschedulable
    return Status(code, *reasons, plugin=FIT_NAME)


def node_shortage(checks: Checks, node_info: NodeInfo) -> int:
    alloc = node_info.allocatable
    return shortage(checks.wants, len(node_info.pods), alloc.allowed_pod_number, checks.read(alloc),
                    checks.read(node_info.requested))


def fits(pod: Pod, node_info: NodeInfo, pod_level: bool = True) -> Status | None:
    """Upstream's Fits, ignoring nothing: why the node has no room for the pod, or
    None when it has."""
    checks = checked_resources(compute_pod_resource_request(pod, pod_level))
    return shortage_status(node_shortage(checks, node_info), checks)


def is_fit(pod: Pod, node: Node, pod_level: bool = True) -> bool:
    """Whether the pod fits the node while no pod runs on it."""
    return fits(pod, NodeInfo(node), pod_level) is None


_TABLE_COLUMNS = {CPU: ("alloc_cpu", "req_cpu"), MEMORY: ("alloc_mem", "req_mem"),
                  EPHEMERAL_STORAGE: ("alloc_eph", "req_eph")}


def _table_columns(table: NodeTable, rows: np.ndarray | slice, nodes: Sequence[NodeInfo], names: Sequence[str]
                   ) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
    """The (allocatable, requested) columns of these resources for these rows (the
    nodes' rows, or their span: views, which shortage() only reads); an extended
    resource is gathered from the nodes that have any (None when a value is too
    large for the columns)."""
    allocatable: list[np.ndarray] = []
    used: list[np.ndarray] = []
    flagged: list[int] | None = None
    for name in names:
        held = _TABLE_COLUMNS.get(name)
        if held is not None:
            allocatable.append(getattr(table, held[0])[rows])
            used.append(getattr(table, held[1])[rows])
            continue
        if flagged is None:
            flagged = np.flatnonzero(table.has_scalar[rows]).tolist()
        alloc = np.zeros(len(nodes), dtype=np.int64)
        req = np.zeros(len(nodes), dtype=np.int64)
        for i in flagged:
            a, u = nodes[i].allocatable.get(name), nodes[i].requested.get(name)
            if a >= _MAX_COLUMN_VALUE or u >= _MAX_COLUMN_VALUE:
                return None
            alloc[i], req[i] = a, u
        allocatable.append(alloc)
        used.append(req)
    return allocatable, used


def shortage_statuses(request: Resource, num_pods: np.ndarray, alloc_pods: np.ndarray,
                      used_and_alloc: tuple[tuple[np.ndarray, np.ndarray], ...]) -> list[Status | None]:
    """filter()'s Status for nodes given by their numbers (preemption's dry run in
    columns): pod counts, pod slots, and (requested, allocatable) of cpu, memory and
    ephemeral storage, by the same shortage() as filter(); None where the pod fits.
    Nodes failing alike share one Status. `request` has no scalar resources."""
    checks = checked_resources(request)
    amounts = dict(zip((CPU, MEMORY, EPHEMERAL_STORAGE), used_and_alloc))
    masks = shortage(checks.wants, num_pods, alloc_pods, [amounts[name][1] for name in checks.names],
                     [amounts[name][0] for name in checks.names])
    if not isinstance(masks, np.ndarray):  # the plain 0: every node fits
        return [None] * len(num_pods)
    shared: dict[int, Status | None] = {}
    out: list[Status | None] = []
    for mask in masks.tolist():
        if mask not in shared:
            shared[mask] = shortage_status(mask, checks)
        out.append(shared[mask])
    return out


class NodeResourcesFit:
    """Filters out nodes without room for the pod's requests and scores the rest by
    the configured strategy. No ScoreExtensions: scores are already 0..100."""

    name = FIT_NAME
    # FilterReadsPlugin: requests summed over the node's pods; fewer pods never fail more.
    filter_reads = FilterReads.NODE_AND_POD_REQUESTS
    # NodeLocalScorePlugin: a node's score reads its allocatable and its pods' requests.
    score_node_local = True

    def monotone_events(self, pod: Pod) -> Sequence[ClusterEvent]:
        """A pod added to a node only takes room (MonotoneEventsPlugin)."""
        return (POD_ADDED,)

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """Reads nothing of the pod beyond the common signature (SignPlugin)."""
        return ALL_SIGNED

    def __init__(self, args: FitArgs, features: FeatureGates) -> None:
        self.args = args
        # Checks per distinct request (pods of one workload ask alike); immutable.
        self._checks: dict[tuple[Any, ...], Checks] = {}
        self.pod_level = features.enabled("PodLevelResources")
        self.in_place_scaling = features.enabled("InPlacePodVerticalScaling")
        self.queueing_hints = features.enabled("SchedulerQueueingHints")
        self.scorer = ResourceAllocationScorer(
            args.resources, _strategy_scorer(args), use_requested=False, pod_level=self.pod_level
        )

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "NodeResourcesFit":
        features = handle.features if handle is not None else FeatureGates()
        return cls(parse_fit_args(args), features)

    # --- PreFilter / Filter ---------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        request = compute_pod_resource_request(pod, self.pod_level)
        key = (request.milli_cpu, request.memory, request.ephemeral_storage, tuple(request.scalar.items()))
        checks = self._checks.get(key)
        if checks is None:
            if len(self._checks) >= 64:
                self._checks.clear()
            checks = self._checks[key] = checked_resources(request, self.args.ignored_resources,
                                                           self.args.ignored_resource_groups)
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(request, checks))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def _pre_filter_state(self, state: CycleState) -> PreFilterState | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        return s if isinstance(s, PreFilterState) else None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if s is None:
            return Status.error_of(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        return shortage_status(node_shortage(s.checks, node_info), s.checks)

    def filter_nodes_reads_table(self, state: CycleState) -> bool:
        """Whether filter_nodes, over a ColumnarNodes of a valid table, reads what
        the pods on a node request only from the table's req_cpu, req_mem, req_eph
        and num_pods for this cycle's pod (TableFilterPlugin): it checks no extended
        resource, and every amount it wants fits the columns."""
        s = self._pre_filter_state(state)
        return s is not None and all(name in _TABLE_COLUMNS and want < _MAX_COLUMN_VALUE
                                     for name, want in zip(s.checks.names, s.checks.wants))

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[Status | None]:
        """filter() for each node, by the same shortage() over the NodeTable's columns
        on a columnar node list: one Status per distinct shortage, shared by the nodes
        that have it (the runtime names the plugin once per object)."""
        s = self._pre_filter_state(state)
        tc = columnar_table(nodes)
        columns = None
        # The rows' index: their span when they run on (the columns read as views), else the rows.
        at = None if tc is None else (tc[1] if nodes.span is None else nodes.span)  # type: ignore[attr-defined]
        if (s is not None and tc is not None and len(s.checks.wants) <= _MAX_COLUMN_CHECKS
                and all(want < _MAX_COLUMN_VALUE for want in s.checks.wants)):
            columns = _table_columns(tc[0], at, nodes, s.checks.names)
        if columns is None or s is None or tc is None:
            return [self.filter(state, pod, ni) for ni in nodes]
        table = tc[0]
        masks = shortage(s.checks.wants, table.num_pods[at], table.alloc_pods[at], *columns)
        out: list[Status | None] = [None] * len(nodes)
        if not isinstance(masks, np.ndarray):  # the plain 0: every node fits
            return out
        bad = np.flatnonzero(masks)
        if len(bad):
            shared: dict[int, Status | None] = {}
            for i, mask in zip(bad.tolist(), masks[bad].tolist()):
                st = shared.get(mask)
                if st is None:
                    st = shared[mask] = shortage_status(mask, s.checks)
                out[i] = st
        return out

    # --- PreScore / Score ---------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, PodRequestsState(self.scorer.pod_requests(pod)))
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        pod_requests = s.pod_requests if isinstance(s, PodRequestsState) else self.scorer.pod_requests(pod)
        return self.scorer.score(node_info, pod_requests), None

    def score_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[list[int], Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        pod_requests = s.pod_requests if isinstance(s, PodRequestsState) else self.scorer.pod_requests(pod)
        return self.scorer.score_nodes(nodes, pod_requests), None

    def score_extensions(self) -> None:
        return None

    # --- EnqueueExtensions ----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        pod_action = ActionType.Delete
        if self.in_place_scaling:
            pod_action |= ActionType.UpdatePodScaleDown
        # Without queueing hints upstream also listens to taint/label updates, since
        # its pre-check may have dropped the Node/Add event.
        node_action = ActionType.Add | ActionType.UpdateNodeAllocatable
        if not self.queueing_hints:
            node_action |= ActionType.UpdateNodeTaint | ActionType.UpdateNodeLabel
        return [
            ClusterEventWithHint(ClusterEvent("Pod", pod_action), self.is_schedulable_after_pod_event),
            ClusterEventWithHint(ClusterEvent("Node", node_action), self.is_schedulable_after_node_change),
        ]

    def is_schedulable_after_pod_event(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A deleted pod frees room only if it was bound or nominated; an updated one
        only if it shrank a request the pending pod makes."""
        old, new = as_objects(Pod, old, new)
        if new is None:
            if old is None or (not old.node_name and not old.nominated_node_name):
                return QueueingHint.QueueSkip
            return QueueingHint.Queue
        if not self.in_place_scaling or old is None:
            return QueueingHint.QueueSkip
        return QueueingHint.Queue if self._scaled_down_for(pod, old, new) else QueueingHint.QueueSkip

    def _scaled_down_for(self, target: Pod, old: Pod, new: Pod) -> bool:
        if new.uid == target.uid:
            return True
        if not new.node_name:
            return False
        before, after = old.resource, new.resource
        for name, amount in target.requests.items():
            if amount == 0:
                continue
            if name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource(name):
                if before.get(name) > after.get(name):
                    return True
        return False

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Queue when a new node fits the pod, or an updated one fits it now and grew
        in pod count or in a resource the pod requests."""
        old, new = as_objects(Node, old, new)
        if new is None or not is_fit(pod, new, self.pod_level):
            return QueueingHint.QueueSkip
        if old is None:
            return QueueingHint.Queue
        if not _requested_resources_increased(compute_pod_resource_request(pod, self.pod_level), old, new):
            return QueueingHint.QueueSkip
        return QueueingHint.Queue


def _requested_resources_increased(request: Resource, old: Node, new: Node) -> bool:
    before, after = old.allocatable, new.allocatable
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    if request.milli_cpu == 0 and request.memory == 0 and request.ephemeral_storage == 0 and not request.scalar:
        return False
    if ((request.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
            or (request.memory > 0 and after.memory > before.memory)
            or (request.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)):
        return True
    return any(want != 0 and after.scalar.get(name, 0) > before.scalar.get(name, 0) for name, want in request.scalar.items())


def _strategy_scorer(args: FitArgs) -> Scorer:
    if args.strategy == MOST_ALLOCATED:
        return most_resource_scorer(args.resources)
    if args.strategy == REQUESTED_TO_CAPACITY_RATIO:
        return requested_to_capacity_ratio_scorer(args.resources, args.shape)
    return least_resource_scorer(args.resources)


PLUGINS = [NodeResourcesFit]
