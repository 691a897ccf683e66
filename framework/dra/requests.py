"""One request or subrequest of a claim as the allocator works on it."""
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


class MatchAttribute:
    """matchAttribute: every device of the listed requests (all requests when none) has the
    attribute, with one value. Counts members only, as the set never needs listing."""

    def __init__(self, requests: list[str], attribute: str) -> None:
        self.requests = set(requests)
        self.attribute = attribute
        self.value: tuple[str, Any] | None = None
        self.members = 0

    def _applies(self, base: str, sub: str) -> bool:
        if not self.requests:
            return True
        return base in self.requests or (bool(sub) and f"{base}/{sub}" in self.requests)

    def add(self, base: str, sub: str, c: Candidate) -> bool:
        if not self._applies(base, sub):
            return True
        value = _lookup_attribute(c, self.attribute)
        if value is None:
            return False
        if self.members == 0:
            self.value, self.members = value, 1
            return True
        if value != self.value:
            return False
        self.members += 1
        return True

    def remove(self, base: str, sub: str, c: Candidate) -> None:
        if self._applies(base, sub):
            self.members -= 1


class DistinctAttribute:
    """distinctAttribute (DRAConsumableCapacity): the devices of the listed requests (all
    when none) each have the attribute, with values no other device of them has. As
    upstream, the values are kept per request name (a later device of the same request
    replaces the earlier one's value, and removing a device forgets its request's)."""

    def __init__(self, requests: list[str], attribute: str) -> None:
        self.requests = set(requests)
        self.attribute = attribute
        self.values: dict[str, tuple[str, Any]] = {}
        self.members = 0

    def _applies(self, base: str, sub: str) -> bool:
        if not self.requests:
            return True
        return base in self.requests or (bool(sub) and f"{base}/{sub}" in self.requests)

    def add(self, base: str, sub: str, c: Candidate) -> bool:
        if not self._applies(base, sub):
            return True
        value = _lookup_attribute(c, self.attribute)
        if value is None:
            return False
        if self.members and value in self.values.values():
            return False
        self.values[base] = value
        self.members += 1
        return True

    def remove(self, base: str, sub: str, c: Candidate) -> None:
        if self._applies(base, sub):
            self.values.pop(base, None)
            self.members -= 1


def _lookup_attribute(c: Candidate, name: str) -> tuple[str, Any] | None:
    attrs = c.device.get("attributes") or {}
    attr = attrs.get(name)
    if attr is None:
        domain, sep, ident = name.partition("/")
        if not sep or domain != c.driver:
            return None
        attr = attrs.get(ident)
    if not attr:
        return None
    for kind in ("string", "int", "bool", "version"):
        if kind in attr:
            return kind, attr[kind]
    return None
