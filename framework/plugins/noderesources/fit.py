"""NodeResourcesFit: does the node have room for the pod's requests, and how full
would it be (upstream noderesources/fit.go with its args validation).

PreFilter computes the pod's request once; Filter compares it with the node's
allocatable minus what its pods request. A request larger than the node's whole
allocatable is UnschedulableAndUnresolvable (preemption cannot help); otherwise
Unschedulable. Score applies the configured strategy (LeastAllocated,
MostAllocated or RequestedToCapacityRatio) through the shared allocation scorer.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any

import numpy as np

from framework.api.affinity import qualified_name_errors
from framework.api.errors import ValidationError
from framework.api.objects import Node, Pod
from framework.api.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    Resource,
    is_extended_resource_name,
    is_scalar_resource,
)
from framework.cache import NodeInfo, NodeTable, batch_table
from framework.features import FeatureGates
from framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    PreFilterResult,
    QueueingHint,
    Status,
)
from framework.plugins.helper.hints import as_objects
from framework.plugins.noderesources.resource_allocation import (
    DEFAULT_RESOURCES,
    PodRequestsState,
    ResourceAllocationScorer,
    ResourceSpec,
    Scorer,
    go_value,
    invalid,
    parse_resource_specs,
    pod_resource_list,
    require_int,
)
from framework.plugins.noderesources.least_allocated import least_resource_scorer
from framework.plugins.noderesources.most_allocated import most_resource_scorer
from framework.plugins.noderesources.requested_to_capacity_ratio import MAX_CUSTOM_PRIORITY_SCORE, requested_to_capacity_ratio_scorer

PRE_FILTER_STATE_KEY = "PreFilterNodeResourcesFit"
PRE_SCORE_STATE_KEY = "PreScoreNodeResourcesFit"

# --- args: upstream's v1 defaults and ValidateNodeResourcesFitArgs -------------------------------
# Field paths and messages are upstream's, including its quirk of reporting shape
# errors under `scoringStrategy.shape`.

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)


@dataclass(frozen=True, slots=True)
class FitArgs:
    ignored_resources: frozenset[str] = frozenset()
    ignored_resource_groups: frozenset[str] = frozenset()
    strategy: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[tuple[int, int], ...] = ()  # (utilization, score) for RequestedToCapacityRatio


def parse_fit_args(raw: Mapping[str, Any] | None) -> FitArgs:
    """Defaults applied, then validated; the first error raises ValidationError."""
    raw = raw or {}
    if not isinstance(raw, Mapping):
        raise ValidationError("", "NodeResourcesFitArgs must be an object")
    ignored = _string_list(raw, "ignoredResources")
    groups = _string_list(raw, "ignoredResourceGroups")
    for i, name in enumerate(ignored):
        _check_label_name(name, f"ignoredResources[{i}]")
    for i, group in enumerate(groups):
        if "/" in group:
            raise invalid(f"ignoredResourceGroups[{i}]", group, "resource group name can't contain '/'")
        _check_label_name(group, f"ignoredResourceGroups[{i}]")

    strategy_raw = raw.get("scoringStrategy")
    if strategy_raw is None:
        return FitArgs(frozenset(ignored), frozenset(groups))
    if not isinstance(strategy_raw, Mapping):
        raise ValidationError("scoringStrategy", "must be an object")
    strategy = strategy_raw.get("type", "")
    if strategy not in SCORING_STRATEGY_TYPES:
        supported = ", ".join(go_value(t) for t in SCORING_STRATEGY_TYPES)
        raise ValidationError("scoringStrategy.type", f"Unsupported value: {go_value(strategy)}: supported values: {supported}")
    resources = parse_resource_specs(strategy_raw.get("resources"), "scoringStrategy.resources")
    for i, spec in enumerate(resources):
        if not 0 < spec.weight <= 100:
            raise invalid(f"scoringStrategy.resources[{i}].weight", spec.weight,
                          f"resource weight of {spec.name} not in valid range (0, 100]")
    shape: tuple[tuple[int, int], ...] = ()
    ratio = strategy_raw.get("requestedToCapacityRatio")
    if ratio is not None or strategy == REQUESTED_TO_CAPACITY_RATIO:
        # Upstream dereferences requestedToCapacityRatio for this type; absent, we
        # report it as the empty shape it amounts to instead of failing outright.
        if ratio is not None and not isinstance(ratio, Mapping):
            raise ValidationError("scoringStrategy.requestedToCapacityRatio", "must be an object")
        shape = _parse_shape((ratio or {}).get("shape"))
    return FitArgs(frozenset(ignored), frozenset(groups), strategy, resources, shape)


def _string_list(raw: Mapping[str, Any], key: str) -> list[str]:
    v = raw.get(key)
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValidationError(key, "must be a list of strings")
    return list(v)


def _parse_shape(raw: Any) -> tuple[tuple[int, int], ...]:
    """validateFunctionShape: at least one point, utilization strictly increasing
    within [0, 100], score within [0, 10]."""
    path = "scoringStrategy.shape"
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise ValidationError("scoringStrategy.requestedToCapacityRatio.shape", "must be a list")
    if not raw:
        raise ValidationError(path, "Required value: at least one point must be specified")
    points: list[tuple[int, int]] = []
    for i, p in enumerate(raw):
        f = f"scoringStrategy.requestedToCapacityRatio.shape[{i}]"
        if not isinstance(p, Mapping):
            raise ValidationError(f, "must be an object")
        points.append((require_int(p, "utilization", f), require_int(p, "score", f)))
    for i in range(1, len(points)):
        if points[i - 1][0] >= points[i][0]:
            raise invalid(f"{path}[{i}].utilization", points[i][0], "values must be sorted in increasing order")
    for i, (util, score) in enumerate(points):
        if not 0 <= util <= 100:
            raise invalid(f"{path}[{i}].utilization", util, "not in valid range [0, 100]")
        if not 0 <= score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise invalid(f"{path}[{i}].score", score, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]")
    return tuple(points)


def _check_label_name(value: str, field: str) -> None:
    errs = qualified_name_errors(value)
    if errs:
        raise invalid(field, value, errs[0])


# --- the plugin --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """One resource the node lacks. `unresolvable` means the pod asks for more than
    the node's whole allocatable, so preempting pods there cannot help."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False


class PreFilterState:
    """The pod's request (computePodResourceRequest), written once by PreFilter.
    Never changed after, so clone() shares it."""

    __slots__ = ("request",)

    def __init__(self, request: Resource) -> None:
        self.request = request

    def clone(self) -> "PreFilterState":
        return self


def compute_pod_resource_request(pod: Pod, pod_level: bool = True) -> Resource:
    """Containers summed, init containers as the running max (sidecars included),
    plus overhead; pod-level requests win where the gate allows them."""
    if pod_level:
        return pod.resource
    return Resource.from_list(pod_resource_list(pod, non_missing=False, pod_level=False))


def fits_request(
    pod_request: Resource,
    node_info: NodeInfo,
    ignored_resources: frozenset[str] = frozenset(),
    ignored_resource_groups: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """Every resource the node cannot give the pod, in upstream's order: pod count,
    cpu, memory, ephemeral-storage, then scalar resources."""
    out: list[InsufficientResource] = []
    alloc = node_info.allocatable
    used = node_info.requested
    pod_count = len(node_info.pods)
    if pod_count + 1 > alloc.allowed_pod_number:
        out.append(InsufficientResource(PODS, "Too many pods", 1, pod_count, alloc.allowed_pod_number))
    if (pod_request.milli_cpu == 0 and pod_request.memory == 0 and pod_request.ephemeral_storage == 0
            and not pod_request.scalar):
        return out
    for name, want, have, total in (
        (CPU, pod_request.milli_cpu, used.milli_cpu, alloc.milli_cpu),
        (MEMORY, pod_request.memory, used.memory, alloc.memory),
        (EPHEMERAL_STORAGE, pod_request.ephemeral_storage, used.ephemeral_storage, alloc.ephemeral_storage),
    ):
        if want > 0 and want > total - have:
            out.append(InsufficientResource(name, f"Insufficient {name}", want, have, total, want > total))
    for name, want in pod_request.scalar.items():
        if want == 0:
            continue
        if is_extended_resource_name(name) and (
            name in ignored_resources
            or (ignored_resource_groups and name.split("/", 1)[0] in ignored_resource_groups)
        ):
            continue
        total = alloc.scalar.get(name, 0)
        have = used.scalar.get(name, 0)
        if want > total - have:
            out.append(InsufficientResource(name, f"Insufficient {name}", want, have, total, want > total))
    return out


def fits(pod: Pod, node_info: NodeInfo, pod_level: bool = True) -> list[InsufficientResource]:
    """Upstream's Fits: what the node lacks for the pod, ignoring nothing."""
    return fits_request(compute_pod_resource_request(pod, pod_level), node_info)


def is_fit(pod: Pod, node: Node, pod_level: bool = True) -> bool:
    """Whether the pod fits the node while no pod runs on it."""
    return not fits(pod, NodeInfo(node), pod_level)


# Bits of a node's shortage in shortage_statuses, in fits_request's reason order.
_SHORT_PODS, _SHORT_CPU, _SHORT_MEM, _SHORT_EPH, _SHORT_BEYOND_ALLOCATABLE = 1, 2, 4, 8, 16
_SHORTAGE_REASONS = ((_SHORT_PODS, "Too many pods"), (_SHORT_CPU, f"Insufficient {CPU}"),
                     (_SHORT_MEM, f"Insufficient {MEMORY}"), (_SHORT_EPH, f"Insufficient {EPHEMERAL_STORAGE}"))


def _column_statuses(request: Resource, table: NodeTable, rows: np.ndarray) -> list[Status]:
    """filter()'s Status for each of these table rows, which all fail, from the
    columns. `request` has no scalar resources."""
    return shortage_statuses(request, table.num_pods[rows], table.alloc_pods[rows],
                             ((table.req_cpu[rows], table.alloc_cpu[rows]), (table.req_mem[rows], table.alloc_mem[rows]),
                              (table.req_eph[rows], table.alloc_eph[rows])))


def shortage_statuses(request: Resource, num_pods: np.ndarray, alloc_pods: np.ndarray,
                      used_and_alloc: tuple[tuple[np.ndarray, np.ndarray], ...]) -> list[Status]:
    """filter()'s Status for nodes that all fail, from their numbers: pod counts,
    pod slots, and (requested, allocatable) of cpu, memory and ephemeral storage.
    The same code, reasons in the same order, UnschedulableAndUnresolvable where the
    pod asks for more than a node's whole allocatable. `request` has no scalar
    resources."""
    short = np.where(num_pods + 1 > alloc_pods, _SHORT_PODS, 0)
    if request.milli_cpu != 0 or request.memory != 0 or request.ephemeral_storage != 0:
        for want, bit, (used, total) in zip((request.milli_cpu, request.memory, request.ephemeral_storage),
                                            (_SHORT_CPU, _SHORT_MEM, _SHORT_EPH), used_and_alloc):
            if want > 0:
                lacking = want > total - used
                short |= np.where(lacking, bit, 0)
                short |= np.where(lacking & (want > total), _SHORT_BEYOND_ALLOCATABLE, 0)
    # One Status per distinct shortage, shared by the nodes that have it: the runtime
    # only names the plugin on a filter status, the same name for all of them.
    shared: dict[int, Status] = {}
    for mask in np.unique(short).tolist():
        code = Code.UnschedulableAndUnresolvable if mask & _SHORT_BEYOND_ALLOCATABLE else Code.Unschedulable
        shared[mask] = Status(code, *(reason for bit, reason in _SHORTAGE_REASONS if mask & bit))
    return [shared[mask] for mask in short.tolist()]


class NodeResourcesFit:
    """Filters out nodes without room for the pod's requests and scores the rest by
    the configured strategy. No ScoreExtensions: scores are already 0..100."""

    name = "NodeResourcesFit"

    def __init__(self, args: FitArgs, features: FeatureGates) -> None:
        self.args = args
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
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(compute_pod_resource_request(pod, self.pod_level)))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return Status.error_of(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        insufficient = fits_request(s.request, node_info, self.args.ignored_resources, self.args.ignored_resource_groups)
        if not insufficient:
            return None
        code = Code.UnschedulableAndUnresolvable if any(r.unresolvable for r in insufficient) else Code.Unschedulable
        return Status(code, *(r.reason for r in insufficient))

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[Status | None]:
        """filter() for each node; nodes with room for the pod's pod count, cpu,
        memory and ephemeral storage pass at once, the others (and pods asking for
        scalar resources) take filter() for its exact reasons."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState) or s.request.scalar:
            return [self.filter(state, pod, ni) for ni in nodes]
        req = s.request
        cpu, mem, eph = req.milli_cpu, req.memory, req.ephemeral_storage
        tb = batch_table(nodes)
        if tb is not None:
            table, rows = tb
            ok = table.num_pods[rows] < table.alloc_pods[rows]
            for want, alloc, used in ((cpu, table.alloc_cpu, table.req_cpu), (mem, table.alloc_mem, table.req_mem),
                                      (eph, table.alloc_eph, table.req_eph)):
                if want > 0:
                    ok &= want <= alloc[rows] - used[rows]
            out: list[Status | None] = [None] * len(nodes)
            bad = np.flatnonzero(~ok)
            if len(bad):
                for i, st in zip(bad.tolist(), _column_statuses(req, table, rows[bad])):
                    out[i] = st
            return out
        out = []
        for ni in nodes:
            alloc = ni.allocatable
            used = ni.requested
            if (len(ni.pods) < alloc.allowed_pod_number
                    and (cpu <= 0 or cpu <= alloc.milli_cpu - used.milli_cpu)
                    and (mem <= 0 or mem <= alloc.memory - used.memory)
                    and (eph <= 0 or eph <= alloc.ephemeral_storage - used.ephemeral_storage)):
                out.append(None)
            else:
                out.append(self.filter(state, pod, ni))
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
