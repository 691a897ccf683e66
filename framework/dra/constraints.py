"""Claim constraints over the devices the allocator picks: matchAttribute (one value
across the devices) and, with DRAConsumableCapacity, distinctAttribute (all values
different). A constraint names requests (`request` or `request/subrequest`; none: all of
the claim's) and is told each device added to or removed from them."""
from __future__ import annotations

from typing import Any

from framework.dra.requests import Candidate


class _AttributeConstraint:
    def __init__(self, requests: list[str], attribute: str) -> None:
        self.requests = set(requests)
        self.attribute = attribute
        self.members = 0

    def _applies(self, base: str, sub: str) -> bool:
        if not self.requests:
            return True
        return base in self.requests or (bool(sub) and f"{base}/{sub}" in self.requests)

    def add(self, base: str, sub: str, c: Candidate) -> bool:
        """Whether the device may join; a device without the attribute never may."""
        if not self._applies(base, sub):
            return True
        value = _lookup_attribute(c, self.attribute)
        if value is None or not self._accepts(value):
            return False
        self._keep(base, value)
        self.members += 1
        return True

    def remove(self, base: str, sub: str, c: Candidate) -> None:
        if self._applies(base, sub):
            self._forget(base)
            self.members -= 1

    def _accepts(self, value: tuple[str, Any]) -> bool:
        raise NotImplementedError

    def _keep(self, base: str, value: tuple[str, Any]) -> None:
        raise NotImplementedError

    def _forget(self, base: str) -> None:
        raise NotImplementedError


class MatchAttribute(_AttributeConstraint):
    """matchAttribute: every device of the listed requests has the attribute, with one
    value. Counts members only, as the set never needs listing."""

    value: tuple[str, Any] | None = None

    def _accepts(self, value: tuple[str, Any]) -> bool:
        return self.members == 0 or value == self.value

    def _keep(self, base: str, value: tuple[str, Any]) -> None:
        self.value = value

    def _forget(self, base: str) -> None:
        pass


class DistinctAttribute(_AttributeConstraint):
    """distinctAttribute: the devices of the listed requests each have the attribute, with
    values no other of them has. As upstream, the values are kept per request name (a
    later device of the same request replaces the earlier one's value, and removing a
    device forgets its request's)."""

    def __init__(self, requests: list[str], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.values: dict[str, tuple[str, Any]] = {}

    def _accepts(self, value: tuple[str, Any]) -> bool:
        return self.members == 0 or value not in self.values.values()

    def _keep(self, base: str, value: tuple[str, Any]) -> None:
        self.values[base] = value

    def _forget(self, base: str) -> None:
        self.values.pop(base, None)


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
