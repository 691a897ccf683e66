"""DynamicResources' PreFilterExtensions: preemption's dry run sees the devices a victim's
claims hold as free once every consumer of the claim is removed (RemovePod), and taken
again when a victim is reprieved (AddPod). After the preemption the resourceclaim
controller (actors/resourceclaims) clears the victim from status.reservedFor and, with
no consumer left, removes the allocation, so the devices are free for real.

kube-scheduler 1.35's plugin returns no PreFilterExtensions (its dry run cannot free
devices and its Filter's "cannot allocate all claims" is UnschedulableAndUnresolvable,
so preemption never helps a pod waiting for devices). ksched models it: see
docs/decisions.md, "DRA preemption frees devices".

Nothing here changes the plugin's PreFilter or Filter: RemovePod/AddPod write, into
the (cloned) cycle state, a copy of the plugin's state whose allocator counts fewer
devices as allocated; the same Filter then runs on it."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

from framework.api.dra_kinds import ResourceClaim
from framework.api.objects import Pod
from framework.cache import NodeInfo, PodInfo
from framework.dra.from_objects import allocated_devices
from framework.interface import CycleState, Status
from framework.plugins.dynamicresources.claims import ClaimsNotReady, pod_claims

VICTIMS_KEY = "DynamicResources/victims"


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldClaim:
    """An allocated claim of a pod the dry run removed: its devices and its consumers."""

    devices: frozenset[str]
    consumers: frozenset[str]  # pod uids in status.reservedFor


@dataclass(frozen=True, slots=True, kw_only=True)
class Victims:
    """What the dry run removed so far (copied on change: cycle states share values)."""

    base: frozenset[str]  # the devices PreFilter's allocator counted as allocated
    removed: frozenset[str] = frozenset()  # pod uids
    claims: dict[str, HeldClaim] = field(default_factory=dict)  # claim uid -> HeldClaim

    def freed(self) -> frozenset[str]:
        """Devices whose every consumer is removed (a claim reserved for no one is not
        freed by removing pods)."""
        out: set[str] = set()
        for held in self.claims.values():
            if held.consumers and held.consumers <= self.removed:
                out |= held.devices
        return frozenset(out)


def held_claims(pod: Pod, lookup: Callable[[str, str], ResourceClaim | None]) -> dict[str, HeldClaim]:
    """The pod's allocated claims reserved for it (claims it cannot resolve are skipped:
    they hold nothing the dry run could free)."""
    try:
        claims = pod_claims(pod, lookup)
    except ClaimsNotReady:
        return {}
    out: dict[str, HeldClaim] = {}
    for claim in claims:
        consumers = frozenset(uid for _, _, uid in claim.reserved_for)
        if claim.allocated is None or pod.uid not in consumers:
            continue
        out[claim.uid] = HeldClaim(devices=allocated_devices([claim]), consumers=consumers)
    return out


class DeviceRelease:
    """PreFilterExtensions of DynamicResources (upstream's AddPod/RemovePod)."""

    def __init__(self, state_key: str, lookup: Callable[[str, str], ResourceClaim | None]) -> None:
        self._state_key = state_key
        self._lookup = lookup

    def remove_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_remove: PodInfo,
                   node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_info_to_remove.pod, removed=True)

    def add_pod(self, state: CycleState, pod_to_schedule: Pod, pod_info_to_add: PodInfo,
                node_info: NodeInfo) -> Status | None:
        return self._update(state, pod_info_to_add.pod, removed=False)

    def _update(self, state: CycleState, other: Pod, *, removed: bool) -> Status | None:
        s = state.get(self._state_key)
        allocator = getattr(s, "allocator", None)
        if allocator is None:  # nothing to allocate for this pod: devices do not matter
            return None
        victims: Victims | None = state.get(VICTIMS_KEY)
        if victims is None:
            if not removed:
                return None  # a pod added before any removal (nominated pods) holds what it held
            victims = Victims(base=frozenset(allocator.allocated))
        if removed:
            claims = {**victims.claims, **held_claims(other, self._lookup)}
            victims = Victims(base=victims.base, removed=victims.removed | {other.uid}, claims=claims)
        else:
            victims = Victims(base=victims.base, removed=victims.removed - {other.uid}, claims=victims.claims)
        state.write(VICTIMS_KEY, victims)
        state.write(self._state_key, with_allocated(s, set(victims.base - victims.freed())))
        return None


def with_allocated(s: Any, allocated: set[str]) -> Any:
    """A copy of the plugin's cycle state whose allocator counts `allocated` as taken,
    with its own per-node results (Filter records into them)."""
    out = copy.copy(s)
    out.allocator = copy.copy(s.allocator)
    out.allocator.allocated = allocated
    out.node_allocations = {}
    out.unavailable = set()
    out.allocated_here = {}
    return out
