"""One request or subrequest of a claim as the allocator works on it, the devices it may
take and the devices it took."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

# resourceapi.AllocationResultsMaxSize: at most this many devices in one claim's allocation.
ALLOCATION_RESULTS_MAX_SIZE = 32


@dataclass(frozen=True, slots=True)
class Request:
    """The fields the allocator reads, whether from `exactly` or from a `firstAvailable` entry."""
    name: str
    class_name: str
    mode: str
    count: int
    admin_access: bool
    has_admin_access: bool
    selectors: tuple[Mapping[str, Any], ...]
    tolerations: tuple[Mapping[str, Any], ...] = ()
    capacity: Mapping[str, Any] | None = None  # capacity.requests (DRAConsumableCapacity)

    @classmethod
    def exact(cls, request: Mapping[str, Any]) -> Request:
        ex = request.get("exactly") or {}
        return cls(name=request.get("name", ""), class_name=ex.get("deviceClassName") or "",
                   mode=ex.get("allocationMode") or "ExactCount", count=int(ex.get("count") or 0),
                   admin_access=bool(ex.get("adminAccess")), has_admin_access=ex.get("adminAccess") is not None,
                   selectors=tuple(ex.get("selectors") or ()), tolerations=tuple(ex.get("tolerations") or ()),
                   capacity=ex.get("capacity"))

    @classmethod
    def sub(cls, sub: Mapping[str, Any]) -> Request:
        return cls(name=sub.get("name", ""), class_name=sub.get("deviceClassName") or "",
                   mode=sub.get("allocationMode") or "ExactCount", count=int(sub.get("count") or 0),
                   admin_access=False, has_admin_access=False, selectors=tuple(sub.get("selectors") or ()),
                   tolerations=tuple(sub.get("tolerations") or ()), capacity=sub.get("capacity"))


@dataclass(frozen=True, slots=True)
class Candidate:
    """A device of a pool's slice that the node can reach."""
    driver: str
    pool: str
    name: str
    device: Mapping[str, Any]
    slice: Mapping[str, Any]

    @property
    def device_id(self) -> str:
        return f"{self.driver}/{self.pool}/{self.name}"


@dataclass(slots=True)
class RequestData:
    request: Request
    parent: Request | None
    device_class: Mapping[str, Any] | None
    num_devices: int = 0
    all_devices: list[Candidate] = field(default_factory=list)
    selected_sub: int = 0

    @property
    def request_name(self) -> str:
        return f"{self.parent.name}/{self.request.name}" if self.parent else self.request.name


@dataclass(frozen=True, slots=True)
class DeviceResult:
    request: str        # the request's name, "<request>/<subrequest>" for a chosen subrequest
    base_request: str
    sub_request: str
    candidate: Candidate
    admin_access: bool
    tolerations: tuple[Mapping[str, Any], ...] = ()
    share_id: str = ""  # a share of a device that allows multiple allocations
    consumed_capacity: Mapping[str, Any] = field(default_factory=dict)  # capacity name -> Fraction
