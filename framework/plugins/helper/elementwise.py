"""Arithmetic that reads the same for one node and for a column of nodes.

A plugin states each formula once, over values that are either plain Python
numbers (one node: the per-node Filter/Score upstream's contract calls) or numpy
columns (every candidate node at once: the columnar forms). Operators (+ - * //
/ < & | abs) already mean the same on both; the few operations that do not are
here, each one line per kind, so a formula written with them is one piece of
arithmetic whichever way it is called. Go semantics where upstream's Go differs
from Python: integer division truncates toward zero, float -> int truncates,
math.Round takes halves away from zero.

Both branches of `select` are computed (as numpy does), so a formula guards its
own divisions (`divisor`).
"""
from __future__ import annotations

import math
from typing import Any, Union

import numpy as np

from framework.reductions import count_set

Value = Union[int, float, bool, np.ndarray]


def select(cond: Any, a: Any, b: Any) -> Any:
    """`a` where `cond` holds, else `b`."""
    if isinstance(cond, np.ndarray):
        return np.where(cond, a, b)
    return a if cond else b


def keep(cond: Any, a: Any) -> Any:
    """`a` where `cond` holds, else 0 (`a` itself, column or not, where it holds
    everywhere: the common case costs one count and no new column)."""
    if isinstance(cond, np.ndarray):
        return a if count_set(cond) == cond.size else np.where(cond, a, 0)
    return a if cond else 0


def collapsed(cond: Any) -> Any:
    """`cond`, or plain True for a column that holds everywhere: keep, select and & then
    take their one-value path (the same values, with no count or new column per use)."""
    if type(cond) is np.ndarray and count_set(cond) == cond.size:
        return True
    return cond


def anywhere(cond: Any) -> bool:
    """Whether `cond` holds for one node (a bool) or for any node of a column."""
    if isinstance(cond, np.ndarray):
        return count_set(cond) > 0
    return bool(cond)


def divisor(x: Any) -> Any:
    """`x` where it is not 0, else 1: a safe divisor for a never-negative `x` whose
    zero case the formula selects away."""
    if isinstance(x, np.ndarray):
        return np.maximum(x, 1)
    return x if x else 1


def float_divisor(x: Any) -> Any:
    """to_float(divisor(x)) in one step: float64 of `x` where it is not 0, else 1.0 (for a
    never-negative `x`). A column's maximum with 1.0 converts each entry as astype does."""
    if isinstance(x, np.ndarray):
        return np.maximum(x, 1.0)
    return float(x if x else 1)


def minimum(a: Any, b: Any) -> Any:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.minimum(a, b)
    return a if a <= b else b


def to_float(x: Any) -> Any:
    """float64(x)."""
    return x.astype(np.float64) if isinstance(x, np.ndarray) else float(x)


def to_int(x: Any) -> Any:
    """int64(x) for a float: truncation toward zero."""
    return x.astype(np.int64) if isinstance(x, np.ndarray) else int(x)


def sqrt(x: Any) -> Any:
    return np.sqrt(x) if isinstance(x, np.ndarray) else math.sqrt(x)


def go_div(a: Any, b: Any) -> Any:
    """Go's integer division a / b for b > 0 (truncates toward zero). An integer column
    with no entry below 0 is floor-divided as it is (the same quotients: no sign to
    restore), not through abs and np.where."""
    if type(a) is np.ndarray and a.dtype.kind == "i":
        negative = a < 0
        if not count_set(negative):
            return a // b
        q = abs(a) // b
        return np.where(negative, -q, q)
    q = abs(a) // b
    return select(a < 0, -q, q)


def go_round(x: Any) -> Any:
    """Go's math.Round (halves away from zero) as an integer."""
    t = to_int(x)
    return t + select(abs(x - t) >= 0.5, (x > 0) * 1 - (x < 0) * 1, 0)
