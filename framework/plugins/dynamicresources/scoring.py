"""DynamicResources' Score (kube-scheduler 1.35, kubernetes PR 134711): a node scores by
the `firstAvailable` subrequests the allocation there chose, FirstAvailableDeviceRequestMaxSize
(8) minus the subrequest's position for each, summed over the pod's claims; the plugin's
NormalizeScore is the default one. A claim allocated already counts with its allocation,
the others with this node's allocation, in order (upstream's later fix of its index
pairing, which paired every claim by position)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from framework.interface import Status

FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE = 8


def has_first_available(claim_spec: Mapping[str, Any]) -> bool:
    for r in (claim_spec.get("devices") or {}).get("requests") or []:  # (loops: no generator frames a pod)
        if r.get("firstAvailable"):
            return True
    return False


def any_first_available(claims: Sequence[Any]) -> bool:
    """Whether a claim has a prioritized list: else every node scores 0."""
    for c in claims:
        if has_first_available(c.spec):
            return True
    return False


def prioritized_list_score(claims: Sequence[Any], allocations: Sequence[Mapping[str, Any]]) -> int:
    """The node's score; ValueError when there are fewer allocations than claims to allocate."""
    score = 0
    pending = iter(allocations)
    for claim in claims:
        allocation = claim.status.get("allocation") if claim.allocated is not None else next(pending, None)
        if allocation is None:
            raise ValueError(f"number of allocations {len(allocations)} is smaller than number of claims "
                             "needing allocation")
        chosen = {r.get("request") for r in (allocation.get("devices") or {}).get("results") or []
                  if "/" in str(r.get("request") or "")}
        for request in (claim.spec.get("devices") or {}).get("requests") or []:
            for i, sub in enumerate(request.get("firstAvailable") or []):
                if f"{request.get('name')}/{sub.get('name')}" in chosen:
                    score += FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE - i
    return score


def node_scores(claims: Sequence[Any], node_allocations: Mapping[str, Sequence[Mapping[str, Any]]],
                node_names: Sequence[str], plugin: str) -> tuple[list[int], Status | None]:
    """Score per node (0 for a pod without prioritized lists, and where no allocation was
    made: the fast path's plain requests choose no subrequest); an Error status when a
    node's allocations do not cover the claims."""
    if not any_first_available(claims):
        return [0] * len(node_names), None
    out = []
    for name in node_names:
        allocations = node_allocations.get(name)
        try:
            out.append(0 if allocations is None else prioritized_list_score(claims, allocations))
        except ValueError as e:
            return [], Status.error_of(str(e), plugin)
    return out, None
