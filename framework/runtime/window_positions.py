"""Positions in a rotating window of nodes, for the node-local columns
(framework/runtime/node_local.py): which rows a member's window covers, taken in
rotation order, and the nodes at those rows gathered by slices where they run on."""
from __future__ import annotations

import numpy as np

from framework.cache import NodeInfo
from framework.node_table import ColumnarNodes
from framework.reductions import all_set

# More runs of consecutive positions than this are gathered node by node.
_MAX_RUNS = 8


def rotated_positions(flags: np.ndarray, start: int, n: int) -> np.ndarray:
    """The positions of the set `flags` (taken in rotation order from `start`), as
    positions of the unrotated list of `n`."""
    at = flags.nonzero()[0] + start
    # Ascending: the positions past the end are a tail, wrapped by one slice (a boolean
    # mask's gather and scatter cost several times the whole rest).
    at[int(at.searchsorted(n)):] -= n
    return at


def union(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """np.union1d of two sets of positions below `n` (sorted, distinct), by a mask of
    the `n` positions rather than a sort."""
    mask = np.zeros(n, dtype=np.bool_)
    mask[a] = True
    mask[b] = True
    return mask.nonzero()[0]


def unset(size: int) -> np.ndarray:
    """A generation column of `size` rows, none computed."""
    return np.full(size, -1, dtype=np.int64)


def rotation(start: int, count: int, n: int) -> np.ndarray:
    """The first `count` positions of a list of `n` in rotation order from `start`."""
    at = np.arange(start, start + count, dtype=np.intp)
    at[max(n - start, 0):] -= n  # the entries from n on, by a slice
    return at


def stale_in_rotation(computed: np.ndarray, current: np.ndarray, start: int, count: int,
                      passing: np.ndarray | None = None) -> np.ndarray:
    """The positions among the first `count` (at most len(current)) in rotation order
    from `start` whose `computed` generation is not the `current` one (and, given
    `passing`, whose verdict passes), in that order, for columns indexed by position:
    compared by slices, with no position list gathered."""
    n = len(current)
    end = start + count
    if end <= n:  # a range that does not wrap: its own slices
        moved = computed[start:end] != current[start:end]
        if passing is not None:
            moved &= passing[start:end]
        at = moved.nonzero()[0]
        at += start
        return at
    # A range that wraps: one comparison of the whole columns, then its two pieces.
    moved = computed != current
    if passing is not None:
        moved &= passing
    head = moved[start:].nonzero()[0]
    head += start
    return np.concatenate((head, moved[:end - n].nonzero()[0]))


def window(passing: np.ndarray, start: int, to_find: int) -> tuple[np.ndarray, bool]:
    """The verdicts, in rotation order from `start`, up to the `to_find`-th passing
    node (all of them when fewer pass), and whether every one of them passes."""
    n = len(passing)
    if to_find <= n:  # the usual window: the next to_find nodes all pass
        first = passing[start:start + to_find]
        if len(first) < to_find:
            first = np.concatenate((first, passing[:to_find - len(first)]))
        if all_set(first):
            return first, True
    order = passing if start == 0 else np.concatenate((passing[start:], passing[:start]))
    reached = order.cumsum()  # the methods, without np.cumsum's and np.searchsorted's wrappers
    if reached[-1] < to_find:  # fewer pass than wanted: every verdict, all passing if all n do
        return order, int(reached[-1]) == n
    end = int(reached.searchsorted(to_find)) + 1
    return order[:end], end == to_find


def take(nodes: ColumnarNodes, positions: np.ndarray) -> ColumnarNodes:
    """The nodes at `positions` with their rows, in that order: runs of consecutive
    positions (a window where every node passed, a refresh in rotation order) are
    sliced, not gathered node by node."""
    k = len(positions)
    if not k:
        return ColumnarNodes([], nodes.rows[:0], nodes.table)
    # np.diff's values by one subtraction (its Python wrapper costs three times the ufunc).
    breaks = ((positions[1:] - positions[:-1]) != 1).nonzero()[0] + 1 if k > 1 else np.zeros(0, dtype=np.intp)
    if len(breaks) > _MAX_RUNS:
        return ColumnarNodes([nodes[i] for i in positions.tolist()], nodes.rows[positions], nodes.table)
    out: list[NodeInfo] = []
    rows = []
    for a, b in zip([0, *breaks.tolist()], [*breaks.tolist(), k]):
        first = int(positions[a])
        out += nodes[first:first + b - a]
        rows.append(nodes.rows[first:first + b - a])
    return ColumnarNodes(out, rows[0] if len(rows) == 1 else np.concatenate(rows), nodes.table)


def take_rotated(nodes: ColumnarNodes, flags: np.ndarray, start: int, every: bool) -> ColumnarNodes:
    """The nodes of the set `flags` (taken in rotation order from `start`), in that
    order, with their rows; `every`: every flag is set."""
    n, k = len(nodes), len(flags)
    if k and start + k <= n and every:  # the usual window: a run of passing nodes
        # Over the whole table the positions are the rows: the window's rows are a slice too.
        span = slice(start, start + k) if nodes.rows is nodes.table.all_rows else None
        return ColumnarNodes(nodes[start:start + k], nodes.rows[start:start + k], nodes.table, span)
    return take(nodes, rotated_positions(flags, start, n))
