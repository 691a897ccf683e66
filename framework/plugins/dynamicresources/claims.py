"""A pod's ResourceClaims as the DynamicResources plugin finds them (upstream's
resourceclaim.Name, IsForPod, IsReservedForPod, CanBeReserved and the plugin's
foreachPodResourceClaim), with upstream's error texts."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from framework.api.dra_kinds import ResourceClaim
from framework.api.objects import Pod
from framework.dra.pod_claims import claim_statuses, is_for_pod

RESERVED_FOR_MAX_SIZE = 256  # resourceapi.ResourceClaimReservedForMaxSize
FINALIZER = "resource.kubernetes.io/delete-protection"


class ClaimsNotReady(Exception):
    """The pod cannot be scheduled until its claims exist as it needs them."""


def kobj(claim: ResourceClaim) -> str:
    """namespace/name, as upstream's klog.KObj prints a claim."""
    return f"{claim.namespace}/{claim.name}"


def pod_claim_entries(pod: Pod) -> list[Mapping[str, Any]]:
    """spec.resourceClaims' maps: the pod's own list when every entry is one (read it, never change it)."""
    claims = pod.spec.get("resourceClaims")
    if not claims:
        return []
    if type(claims) is list:
        for c in claims:
            if type(c) is not dict:
                break
        else:
            return claims
    return [c for c in claims if type(c) is dict or isinstance(c, Mapping)]


def claim_name(pod: Pod, entry: Mapping[str, Any], statuses: Mapping[str, str | None]) -> tuple[str | None, bool, str]:
    """(the claim's name or None when no claim is needed, whether the pod must own it,
    "" or why the pod's claims are not ready: then the name is None)."""
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"]), False, ""
    if entry.get("resourceClaimTemplateName"):
        name = str(entry.get("name", ""))
        if name in statuses:
            return statuses[name], True, ""
        return None, True, f'pod "{pod.namespace}/{pod.name}": ResourceClaim not created yet'
    return None, False, (f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{entry.get("name", "")}": '
                         "none of the supported fields are set")


def claims_or_reason(pod: Pod, lookup: Any, entries: list[Mapping[str, Any]] | None = None
                     ) -> tuple[list[ResourceClaim], str]:
    """(the pod's claims in spec order, "") or ([], why they are not ready: one is
    missing, being deleted or, made from a template, not the pod's), without raising
    (PreEnqueue meets a pod whose claim is not made yet once a pod). `lookup(namespace,
    name)` reads the view; `entries`: pod_claim_entries(pod), when the caller has it."""
    out: list[ResourceClaim] = []
    statuses = claim_statuses(pod)
    for entry in pod_claim_entries(pod) if entries is None else entries:
        name, must_own, reason = claim_name(pod, entry, statuses)
        if reason:
            return [], reason
        if name is None:
            continue
        claim = lookup(pod.namespace, name)
        if claim is None:
            return [], f'resourceclaim.resource.k8s.io "{name}" not found'
        if claim.meta.deletion_timestamp is not None:
            return [], f'resourceclaim "{name}" is being deleted'
        if must_own and not is_for_pod(claim, pod):
            return [], (f"ResourceClaim {claim.namespace}/{claim.name} was not created for pod "
                        f"{pod.namespace}/{pod.name} (pod is not owner)")
        out.append(claim)
    return out, ""


def pod_claims(pod: Pod, lookup: Any) -> list[ResourceClaim]:
    """The pod's claims, in spec order; ClaimsNotReady (with claims_or_reason's reason)
    when they are not ready."""
    claims, reason = claims_or_reason(pod, lookup)
    if reason:
        raise ClaimsNotReady(reason)
    return claims


def is_reserved_for(pod: Pod, claim: ResourceClaim) -> bool:
    return any(uid == pod.uid for _, _, uid in claim.reserved_for)


def can_be_reserved(claim: ResourceClaim) -> bool:
    return len(claim.reserved_for) < RESERVED_FOR_MAX_SIZE


def finalizer_to_add(claim: ResourceClaim) -> str:
    """FINALIZER when the claim does not have it yet, else ""."""
    meta = claim.raw.get("metadata")
    have = meta.get("finalizers") if type(meta) is dict or isinstance(meta, Mapping) else None
    return "" if isinstance(have, list) and FINALIZER in have else FINALIZER


def with_status(claim: ResourceClaim, *, allocation: Mapping[str, Any] | None,
                reserved_for: list[dict[str, str]] | None, finalizer: bool) -> dict[str, Any]:
    """The claim's object with this allocation and reservedFor (None: the field cleared).
    The drivers' device statuses (`status.devices`) go with the allocation: kept while
    it stays, cleared with it (PostFilter's deallocation), as upstream writes them."""
    raw = dict(claim.raw)
    meta = raw.get("metadata") or {}  # the claim's own (never changed in place), unless a finalizer is added
    finalizers = list(meta.get("finalizers") or [])
    if finalizer and FINALIZER not in finalizers:
        meta = {**meta, "finalizers": finalizers + [FINALIZER]}
    dropped = ("allocation", "reservedFor", "devices") if allocation is None else ("allocation", "reservedFor")
    status = {}
    for k, v in (raw.get("status") or {}).items():  # (a loop: no comprehension's frame, twice a DRA pod)
        if k not in dropped:
            status[k] = v
    if allocation is not None:
        status["allocation"] = dict(allocation)
    if reserved_for:
        status["reservedFor"] = reserved_for
    return {**raw, "metadata": meta, "status": status}


def reserved_for_entries(claim: ResourceClaim) -> list[dict[str, str]]:
    out = []
    for r in claim.status.get("reservedFor") or []:  # (a loop: no comprehension's frame)
        if type(r) is dict or isinstance(r, Mapping):
            out.append(dict(r))
    return out
