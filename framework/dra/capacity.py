"""Consumable capacity (DRAConsumableCapacity, alpha and off in 1.35), as upstream's
experimental allocator computes it (structured/internal/experimental/consumable_capacity.go).

A device with `allowMultipleAllocations` may be shared: each allocation consumes part of
its `capacity`, what the request asks (`capacity.requests`) rounded up to the capacity's
`requestPolicy` (the policy's default, or the whole capacity, when the request names no
amount). A share fits while, per capacity, what allocated claims already consume, plus
what this search took, plus this share stays within the capacity's value and the share
obeys the policy."""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Mapping

from framework.api.quantity import parse_quantity_text

Amounts = dict[str, Fraction]  # capacity name -> amount


def _q(value: Any) -> Fraction:
    return parse_quantity_text(str(value))


def requested(request_capacity: Mapping[str, Any] | None) -> dict[str, Fraction]:
    """A request's `capacity.requests` as amounts."""
    return {name: _q(v) for name, v in ((request_capacity or {}).get("requests") or {}).items()}


def _round_up_range(value: Fraction, valid_range: Mapping[str, Any]) -> Fraction:
    low = _q(valid_range["min"])
    if value < low:
        return low
    if valid_range.get("step") is None:
        return value
    step, low_int = math.ceil(_q(valid_range["step"])), math.ceil(low)
    added = math.ceil(value) - low_int
    n = added // step + (1 if added % step else 0)
    return Fraction(low_int + step * n)


def _round_up_valid_values(value: Fraction, valid_values: list[Any]) -> Fraction:
    for v in valid_values:
        if value <= _q(v):
            return _q(v)
    return value


def consumed(value: Fraction | None, capacity: Mapping[str, Any]) -> Fraction:
    """What one share consumes of this capacity when `value` (None: nothing) is asked."""
    policy = capacity.get("requestPolicy")
    if value is None:
        if policy and policy.get("default") is not None:
            return _q(policy["default"])
        return _q(capacity.get("value", "0"))
    if not policy:
        return value
    valid_range = policy.get("validRange")
    if valid_range and valid_range.get("min") is not None:
        return _round_up_range(value, valid_range)
    if policy.get("validValues") is not None:
        return _round_up_valid_values(value, policy["validValues"])
    return value


def _violates(value: Fraction, policy: Mapping[str, Any] | None) -> bool:
    if not policy:
        return False
    if policy.get("default") is not None and value == _q(policy["default"]):
        return False
    valid_range = policy.get("validRange")
    if valid_range:
        if valid_range.get("max") is not None and value > _q(valid_range["max"]):
            return True
        if valid_range.get("step") is not None:
            step, low = math.ceil(_q(valid_range["step"])), math.ceil(_q(valid_range["min"]))
            return (math.ceil(value) - low) % step != 0
        return False
    if policy.get("validValues"):
        return all(value != _q(v) for v in policy["validValues"])
    return False


class UndefinedCapacity(ValueError):
    """The request asks for a capacity the device does not have."""


def share_of(request_capacity: Mapping[str, Any] | None, device_capacity: Mapping[str, Any]) -> Amounts:
    """GetConsumedCapacityFromRequest: per capacity of the device, what one share consumes."""
    asked = requested(request_capacity)
    return {name: consumed(asked.get(name), cap or {}) for name, cap in device_capacity.items()}


def fits(in_use: Mapping[str, Fraction], request_capacity: Mapping[str, Any] | None,
         device_capacity: Mapping[str, Any], allocating: Mapping[str, Fraction]) -> bool:
    """CmpRequestOverCapacity; UndefinedCapacity when a requested capacity is not the device's."""
    asked = requested(request_capacity)
    if any(name not in device_capacity for name in asked):
        raise UndefinedCapacity("some requested capacity has not been defined")
    for name, cap in device_capacity.items():
        cap = cap or {}
        share = consumed(asked.get(name), cap)
        if _violates(share, cap.get("requestPolicy")):
            return False
        total = in_use.get(name, Fraction(0)) + share + allocating.get(name, Fraction(0))
        if total > _q(cap.get("value", "0")):
            return False
    return True


def add_to(totals: dict[str, Amounts], device_id: str, amounts: Amounts) -> None:
    mine = totals.setdefault(device_id, {})
    for name, v in amounts.items():
        mine[name] = mine.get(name, Fraction(0)) + v


def remove_from(totals: dict[str, Amounts], device_id: str, amounts: Amounts) -> None:
    mine = totals.get(device_id)
    if mine is None:
        return
    for name, v in amounts.items():
        if name in mine:
            mine[name] -= v
    if all(v == 0 for v in mine.values()):
        del totals[device_id]


_BINARY_SUFFIXES = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def quantity_text(v: Fraction) -> str:
    """An amount as a binary-SI quantity string, as resource.NewQuantity(v, BinarySI)
    prints it: the largest power-of-1024 suffix that divides it, else plain digits
    (fractions in milli-units)."""
    if v.denominator != 1:
        return f"{math.ceil(v * 1000)}m"
    n = v.numerator
    for suffix, size in _BINARY_SUFFIXES:
        if n and n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)
