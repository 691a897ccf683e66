"""The columns framework/runtime/node_local.py keeps per pod shape and plugin signature:
one value per node-table row (a Filter verdict with its status, or a raw score) and the
node generation it was computed for."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE, Status


@dataclass(slots=True)
class FilterColumn:
    generation: np.ndarray  # per table row: the node generation the verdict is for (-1: none)
    passing: np.ndarray  # per table row: passes every active filter (True where never filtered)
    statuses: dict[int, Status] = field(default_factory=dict)  # row -> its first failing plugin's status
    fresh: bool = True  # no row computed yet
    mark: int = -1  # the table's change mark at this column's last sweep (-1: none yet)


@dataclass(slots=True)
class ScoreColumn:
    generation: np.ndarray  # per table row: the node generation the raw score is for (-1: none)
    values: np.ndarray  # per table row: the raw score (int64)
    fresh: bool = True  # no row computed yet
    # Every value ever stored lay in [MIN_NODE_SCORE, MAX_NODE_SCORE], so any read of
    # the column does: the runtime's range check of a plugin without NormalizeScore
    # has nothing to find (it stays False once a value outside was stored).
    in_range: bool = True
    mark: int = -1  # the table's change mark at this column's last sweep (-1: none yet)
    # Every value ever stored is this one (None: two differ, or none known yet), so any
    # read of the column (rows whose value was stored) is it throughout: read as `alike`,
    # one element seen through a stride of 0 (TaintToleration's zeros on untainted
    # nodes), with no copy.
    only: int | None = None
    alike: np.ndarray | None = None
    stored: bool = False  # a value was stored (`fresh` also ends with a store of no rows)

    def store(self, rows: np.ndarray, values: np.ndarray, now: np.ndarray) -> None:
        """Raw scores `values` (int64) of `rows`, computed at node generations `now`."""
        self.values[rows] = values
        self.generation[rows] = now
        if len(values) and (self.in_range or not self.stored or self.only is not None):
            low, high = values[values.argmin()], values[values.argmax()]  # the extremes, without ufunc.reduce
            if low < MIN_NODE_SCORE or high > MAX_NODE_SCORE:
                self.in_range = False
            if low != high or self.stored and low != self.only:
                self.only = self.alike = None
            elif not self.stored:
                self.only = int(low)
                self.alike = np.broadcast_to(np.array([self.only], dtype=np.int64), (len(self.values),))
            self.stored = True
        self.fresh = False


__all__ = ["FilterColumn", "ScoreColumn"]
