"""Quota amounts: int64 in canonical units with Kueue's saturating arithmetic
(pkg/resources/amount.go), and the quantity text Kueue prints in messages
(pkg/resources/resource_formatter.go)."""
from __future__ import annotations

from fractions import Fraction

from framework.api.quantity import milli_value, parse_quantity, value

MAX_INT64 = 2**63 - 1
MIN_INT64 = -(2**63)
UNLIMITED = MAX_INT64  # Kueue's resources.Unlimited sentinel

FR = tuple[str, str]  # (flavor, resource)


def _clamp(v: int) -> int:
    return MAX_INT64 if v > MAX_INT64 else MIN_INT64 if v < MIN_INT64 else v


def add(a: int, b: int) -> int:
    if a == UNLIMITED or b == UNLIMITED:
        return UNLIMITED
    return _clamp(a + b)


def sub(a: int, b: int) -> int:
    if a == UNLIMITED and b == UNLIMITED:
        return 0
    if a == UNLIMITED:
        return UNLIMITED
    if b == UNLIMITED:
        return MIN_INT64
    return _clamp(a - b)


def amount_of(resource: str, q: Fraction) -> int:
    """AmountFromQuantity: cpu in millicores, the rest in whole units; Unlimited at the top."""
    if resource == "cpu":
        if q >= MAX_INT64 // 1000:
            return UNLIMITED
        return milli_value(q)
    if q >= MAX_INT64:
        return UNLIMITED
    return value(q)


def parse_amount(resource: str, raw: object, field: str) -> int:
    return amount_of(resource, parse_quantity(raw, field))


def request_value(resource: str, q: Fraction) -> int:
    """A request's value in canonical units (ResourceValue), saturating at int64."""
    v = milli_value(q) if resource == "cpu" else value(q)
    return _clamp(v)


_DEC = ["", "k", "M", "G", "T", "P", "E"]
_BIN = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


def _decimal(v: int) -> str:
    if v == 0:
        return "0"
    i = 0
    while i + 1 < len(_DEC) and v % 1000 == 0:
        v //= 1000
        i += 1
    return f"{v}{_DEC[i]}"


def _binary(v: int) -> str:
    if v == 0:
        return "0"
    if v % 1024 != 0 or v < 0:
        return _decimal(v) if v % 1000 == 0 else str(v)
    i = 0
    while i + 1 < len(_BIN) and v % 1024 == 0:
        v //= 1024
        i += 1
    return f"{v}{_BIN[i]}"


def format_amount(resource: str, v: int, sentinel: bool = True) -> str:
    """How Kueue prints an amount of `resource`: AmountQuantityString, or with
    sentinel=False ResourceQuantityString (a plain int64, no Unlimited)."""
    if sentinel and v == UNLIMITED:
        return "<unlimited>"
    if resource == "cpu":
        if v % 1000 == 0:
            return _decimal(v // 1000)
        return f"{v}m"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return _binary(v)
    return _decimal(v)


def quantity_text(resource: str, v: int) -> str:
    """A canonical-unit amount as a quantity string that parses back to the same value."""
    if resource == "cpu":
        return _decimal(v // 1000) if v % 1000 == 0 else f"{v}m"
    return str(v)
