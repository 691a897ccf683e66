"""NodeResourcesFit's arguments: upstream's v1 defaults and
ValidateNodeResourcesFitArgs (field paths and messages as upstream words them)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from framework.api.affinity import qualified_name_errors
from framework.api.errors import ValidationError
from framework.plugins.noderesources.resource_allocation import (
    DEFAULT_RESOURCES,
    ResourceSpec,
    go_value,
    invalid,
    parse_resource_specs,
    require_int,
)
from framework.plugins.noderesources.requested_to_capacity_ratio import MAX_CUSTOM_PRIORITY_SCORE

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
