"""Hint keys of DynamicResources' queueing hints (ClusterEventWithHint.event_keys /
pod_keys, framework/events.py): a claim event concerns the pods that may use that
claim by name, a pod event the pod itself, so the queue offers them only to those."""
from __future__ import annotations

from typing import Any, Hashable

from framework.api.dra_kinds import ResourceClaim
from framework.api.objects import Pod
from framework.dra.pod_claims import claim_statuses
from framework.plugins.dynamicresources.claims import pod_claim_entries


def claim_names_used(pod: Pod) -> frozenset[str]:
    """The names of the claims the pod may use: named ones and those its status records."""
    used = set()
    for e in pod_claim_entries(pod):  # (loops, not set comprehensions: two pod versions a DRA pod)
        if e.get("resourceClaimName"):
            used.add(str(e["resourceClaimName"]))
    for n in claim_statuses(pod).values():
        if n:
            used.add(str(n))
    return frozenset(used)


def claim_event_keys(old: Any, new: Any) -> frozenset[Hashable] | None:
    """Hint keys of a claim event: the claim itself; a claim deallocated (or no claim
    object) concerns every pod, as the claim hint answers."""
    if not isinstance(new, ResourceClaim) or (isinstance(old, ResourceClaim) and old.allocated is not None
                                              and new.allocated is None):
        return None
    return frozenset({("claim", new.namespace, new.name)})


def pod_event_keys(old: Any, new: Any) -> frozenset[Hashable] | None:
    return frozenset({("pod", new.uid)}) if isinstance(new, Pod) else None


def pod_keys(pod: Pod) -> frozenset[Hashable]:
    return frozenset({("pod", pod.uid)})
