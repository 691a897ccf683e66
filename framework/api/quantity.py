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
        if abs(exponent) > 400:  # far beyond int64 either way; keeps the Fraction small
            raise ValueError(text)
        number *= Fraction(10) ** exponent
    else:
        number *= _DECIMAL[m.group("dec") or ""]
    return -number if m.group("sign") == "-" else number


# apimachinery's ErrFormatWrong, the text kube-apiserver answers for a malformed quantity.
QUANTITY_REGEX_MSG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
# Beyond this a quantity's Value() does not fit int64; the scheduler could not count it.
MAX_QUANTITY = Fraction(2**63 - 1)


def parse_quantity_text(text: str) -> Fraction:
    """The amount a quantity string stands for; ValueError when it is not one."""
    try:
        return _parse(text)
    except ZeroDivisionError:
        raise ValueError(text) from None


def parse_quantity(value: object, field: str = "") -> Fraction:
    """Parse a quantity string (or a plain number, read by its text as Kubernetes
    decodes a JSON number) into an exact Fraction; at most int64's largest value."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValidationError(field, f"quantity {value!r} is not valid")
    text = value if isinstance(value, str) else repr(value)
    try:
        amount = Fraction(value) if isinstance(value, int) else parse_quantity_text(text)
    except ValueError:
        raise ValidationError(field, f'quantity "{text}" is not valid') from None
    if abs(amount) > MAX_QUANTITY:
        raise ValidationError(field, f'quantity "{text}" is too large (at most {MAX_QUANTITY})')
    return amount


def _ceil(q: Fraction) -> int:
    return -((-q.numerator) // q.denominator)


def milli_value(q: Fraction) -> int:
    """Thousandths, rounded up (Quantity.MilliValue)."""
    return -((-q.numerator * 1000) // q.denominator)


def value(q: Fraction) -> int:
    """Whole units, rounded up (Quantity.Value)."""
    return _ceil(q)
