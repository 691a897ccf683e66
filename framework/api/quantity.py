"""Kubernetes resource quantities ("100m", "1.5Gi", "2e3"), parsed exactly.

A quantity is kept as a Fraction so sums stay exact; `milli_value` and `value`
round up, as upstream's Quantity.MilliValue() and Value() do.
"""
from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

from framework.api.errors import ValidationError

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<sign>[+-])?(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?[0-9]+)|(?P<dec>[numkMGTPE])?)$"
)


@lru_cache(maxsize=4096)
def _parse(text: str) -> Fraction:
    m = _QUANTITY.match(text)
    if m is None or (not m.group("int") and not m.group("frac")):
        raise ValueError(text)
    digits = (m.group("int") or "0") + "." + (m.group("frac") or "0")
    number = Fraction(digits)
    if m.group("bin"):
        number *= _BINARY[m.group("bin")]
    elif m.group("exp"):
        exponent = int(m.group("exp")[1:])
        if abs(exponent) > 64:
            raise ValueError(text)
        number *= Fraction(10) ** exponent
    else:
        number *= _DECIMAL[m.group("dec") or ""]
    return -number if m.group("sign") == "-" else number


def parse_quantity(value: object, field: str = "") -> Fraction:
    """Parse a quantity string (or a plain number) into an exact Fraction."""
    if isinstance(value, bool):
        raise ValidationError(field, f"quantity {value!r} is not valid")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    if not isinstance(value, str):
        raise ValidationError(field, f"quantity {value!r} is not valid")
    try:
        return _parse(value)
    except (ValueError, ZeroDivisionError):
        raise ValidationError(field, f'quantity "{value}" is not valid') from None


def _ceil(q: Fraction) -> int:
    return -((-q.numerator) // q.denominator)


def milli_value(q: Fraction) -> int:
    """Thousandths, rounded up (Quantity.MilliValue)."""
    return -((-q.numerator * 1000) // q.denominator)


def value(q: Fraction) -> int:
    """Whole units, rounded up (Quantity.Value)."""
    return _ceil(q)
