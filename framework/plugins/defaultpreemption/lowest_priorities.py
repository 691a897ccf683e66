"""The lowest priority of a pod per snapshot row, for DefaultPreemption's victimless
check (a dry run that no node's pods could answer), and the rows of a node list."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from framework.cache import NodeInfo, Snapshot
from framework.node_table import ColumnarNodes

PAD_PRIORITY = np.iinfo(np.int64).max  # never lower than a preemptor's priority


class LowestPriorities:
    """Per snapshot row, the lowest priority of a pod on the node (the padding's when
    it holds none), for DefaultPreemption's victimless check: rows refreshed when
    their NodeInfo's generation moved, as VictimColumns' are, but only this number
    of each (a completion moves two rows; the victim columns, with their sums and
    orders, wait for a dry run that needs them)."""

    def __init__(self) -> None:
        self.generation = np.zeros(0, dtype=np.int64)
        self.lowest = np.zeros(0, dtype=np.int64)

    def refresh(self, snapshot: Snapshot) -> bool:
        """Bring the rows in step with the snapshot; False when its table is unusable."""
        table = snapshot.table
        nodes = snapshot.node_info_list
        if table is None or not table.valid or len(table) != len(nodes):
            return False
        if len(self.generation) != len(nodes):
            self.generation = np.full(len(nodes), -1, dtype=np.int64)
            self.lowest = np.full(len(nodes), PAD_PRIORITY, dtype=np.int64)
        for r in np.flatnonzero(table.generation != self.generation).tolist():
            ni = nodes[r]
            self.lowest[r] = min((pi.pod.priority for pi in ni.pods), default=PAD_PRIORITY)
            self.generation[r] = ni.generation
        return True

    def of(self, snapshot: Snapshot, potential: Sequence[NodeInfo]) -> int:
        """The lowest priority of a pod on the `potential` nodes (refreshed to
        `snapshot`); the padding's (never lower than a preemptor's) when they hold none."""
        if not len(potential):
            return int(PAD_PRIORITY)
        if len(potential) == len(self.lowest):  # every node: no row gather
            return int(self.lowest.min())
        return int(self.lowest[rows_of(snapshot, potential)].min())



def rows_of(snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> np.ndarray:
    """The snapshot rows of `nodes`: carried by a ColumnarNodes of the snapshot's
    table, else looked up by name."""
    if isinstance(nodes, ColumnarNodes) and nodes.table is snapshot.table:
        return nodes.rows
    index = snapshot.index
    return np.fromiter((index[ni.name] for ni in nodes), dtype=np.intp, count=len(nodes))
