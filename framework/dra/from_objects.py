"""The one conversion from stored DRA objects (framework.api.dra_kinds) to the structured
allocator's inputs: classes by name, every ResourceSlice, and the devices that
allocated claims already hold (a result with adminAccess does not hold its device, as
upstream's allocated-state gathering skips it). What the DynamicResources plugin and
tests hand to framework.dra.allocator.Allocator."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from framework.api.dra_kinds import AllocationInFlight, DeviceClass, ResourceClaim, ResourceSlice
from framework.dra.allocator import Allocator, Features


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocatorInputs:
    classes: Mapping[str, Mapping[str, Any]]  # DeviceClass name -> the stored object
    slices: tuple[Mapping[str, Any], ...]
    allocated: frozenset[str]  # "<driver>/<pool>/<device>" of every device an allocated claim holds

    def allocator(self, features: Features) -> Allocator:
        return Allocator(features=features, classes=self.classes, slices=self.slices, allocated=set(self.allocated))


def allocated_devices(claims: Iterable[ResourceClaim | AllocationInFlight]) -> frozenset[str]:
    """The devices held by the claims' allocations (admin-access results hold none)."""
    held: set[str] = set()
    for claim in claims:
        if claim.allocated is None:
            continue
        results = ((claim.status.get("allocation") or {}).get("devices") or {}).get("results") or []
        for ref, result in zip(claim.allocated, results):
            if not ((type(result) is dict or isinstance(result, Mapping)) and result.get("adminAccess") is True):
                held.add(ref.id)
    return frozenset(held)


def allocator_inputs(classes: Iterable[DeviceClass], slices: Iterable[ResourceSlice],
                     claims: Iterable[ResourceClaim]) -> AllocatorInputs:
    """The allocator's view of the stored classes, slices and claims (the claims count
    only for the devices their allocations hold)."""
    return AllocatorInputs(classes={c.name: c.raw for c in classes}, slices=tuple(s.raw for s in slices),
                           allocated=allocated_devices(claims))


def claims_to_allocate(claims: Iterable[ResourceClaim]) -> list[Mapping[str, Any]]:
    """The claims in the form the allocator takes (the stored objects)."""
    return [c.raw for c in claims]
