"""A pod's QoS class as kube-apiserver computes it on create (pkg/apis/core/helper/qos
ComputePodQOS), over the manifest: only cpu and memory count, and only amounts above
zero. With pod-level resources (spec.resources, the PodLevelResources gate, on by
default) those decide; otherwise every container and init container (ephemeral
containers have no resources). A container's limits stand for its missing requests,
as SetDefaults_Pod fills them before the strategy runs.

- BestEffort: no request and no limit above zero.
- Guaranteed: every container (or the pod level) has cpu and memory limits, and the
  summed requests equal the summed limits, resource by resource.
- Burstable: anything else.
"""
from __future__ import annotations

from functools import lru_cache
from collections.abc import Mapping
from typing import Any

from framework.api.errors import ValidationError
from framework.api.quantity import parse_quantity

QOS_RESOURCES = ("cpu", "memory")
NANO = 10**9


@lru_cache(maxsize=4096)
def _amount(value: str | int | float) -> int:
    """A quantity's amount in billionths, rounded up as a Quantity rounds below its
    nano scale; 0 when unreadable (validation names it)."""
    try:
        q = parse_quantity(value)
    except ValidationError:
        return 0
    return -((-q.numerator * NANO) // q.denominator)


def _amounts(resources: Any) -> dict[str, int]:
    """The cpu and memory amounts above zero of a ResourceList."""
    out: dict[str, int] = {}
    if isinstance(resources, Mapping):
        for name in QOS_RESOURCES:
            value = resources.get(name)
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                amount = _amount(value)
                if amount > 0:
                    out[name] = amount
    return out


def _add(total: dict[str, int], more: dict[str, int]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, 0) + amount


def _requirements(holder: Any) -> tuple[dict[str, int], dict[str, int]]:
    """(requests, limits) of a container or a pod spec's `resources`, a limit standing
    for its missing request."""
    res = holder.get("resources") if isinstance(holder, Mapping) else None
    if not isinstance(res, Mapping):
        return {}, {}
    requests = _amounts(res.get("requests"))
    limits = _amounts(res.get("limits"))
    given = res.get("requests") if isinstance(res.get("requests"), Mapping) else {}
    for name, amount in limits.items():
        if name not in given:
            requests[name] = amount
    return requests, limits


def pod_qos_class(pod: Mapping[str, Any]) -> str:
    spec = pod.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    pod_level = spec.get("resources")
    if isinstance(pod_level, Mapping) and pod_level:
        holders: list[Any] = [spec]
    else:
        holders = [c for key in ("containers", "initContainers") for c in (spec.get(key) or [])
                   if isinstance(spec.get(key), list)]
    for holder in holders:
        req, lim = _requirements(holder)
        _add(requests, req)
        _add(limits, lim)
        if not all(name in lim for name in QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and requests == limits:
        return "Guaranteed"
    return "Burstable"
