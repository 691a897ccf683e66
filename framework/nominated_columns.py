"""What pods nominated to nodes add to each node, as columns over the snapshot's rows.

RunFilterPluginsWithNominatedPods (upstream's addGENominatedPods) runs a node's
filters with the pods nominated to it of at least the incoming pod's priority
(the pod itself excluded) added. Where only NodeResourcesFit reads the pods
(Framework.pods_read_only_by_fit), "added" means: their count and their summed
cpu, memory and ephemeral-storage requests join the node's. `NominatedColumns`
keeps every nominated pod as one entry (row, priority, requests) and gives, for
one incoming pod, those sums per snapshot row (`NominatedAdds`) with one numpy
pass instead of a Python loop over the nominated nodes.

Entries are rebuilt only when the nominations move (the owner's nominator version,
`Handle.nominations_version`) or the snapshot's rows do (its change epoch); a
handle that cannot say its version gets them rebuilt on every ask. Pure: no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Literal

import numpy as np

from framework.api.objects import Pod
from framework.cache import Snapshot

# Sums stay below this (NodeTable's own limit is 2**55 per value): entries whose
# largest value times their number could pass it are not summed in columns.
_SUM_LIMIT = 1 << 62


@dataclass(frozen=True, slots=True)
class NominatedAdds:
    """Per snapshot row, what the nominated pods joining an incoming pod's filters
    add: `count` pods requesting `cpu`, `mem`, `eph` in sum; `scalar` where one of
    them requests an extended resource (its amounts are not in the columns)."""

    count: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray
    eph: np.ndarray
    scalar: np.ndarray


class NominatedColumns:
    """Every nominated pod as a column entry; `adds(handle, snapshot, pod)` sums the
    entries that join `pod`'s filters, per snapshot row."""

    def __init__(self) -> None:
        self._key: Hashable | None = None
        self._valid = False
        self._row = np.zeros(0, dtype=np.intp)
        self._priority = np.zeros(0, dtype=np.int64)
        self._amounts = np.zeros((3, 0), dtype=np.int64)
        self._scalar = np.zeros(0, dtype=np.bool_)
        self._uid: dict[str, list[int]] = {}
        self._rows = 0
        self._last: tuple[Hashable, NominatedAdds | None | Literal[False]] | None = None

    def adds(self, handle: Any, snapshot: Snapshot, pod: Pod) -> NominatedAdds | None | Literal[False]:
        """The sums for `pod` per row of `snapshot.node_info_list`; None when no
        nominated pod joins its filters anywhere; False when the sums cannot be
        kept in columns (the caller then adds the pods node by node)."""
        version = getattr(handle, "nominations_version", None)
        version = version() if version is not None else None
        key = None if version is None else (version, id(snapshot), snapshot.change_epoch, len(snapshot.index))
        if key is None or key != self._key:
            self._build(handle, snapshot)
            self._key = key
            self._last = None
        query = (pod.priority, pod.uid)
        if key is not None and self._last is not None and self._last[0] == query:
            return self._last[1]
        got = self._sum(pod) if self._valid else False
        self._last = (query, got)
        return got

    def _build(self, handle: Any, snapshot: Snapshot) -> None:
        index = snapshot.index
        names = handle.nodes_with_nominated_pods()
        if names is None:
            names = [ni.name for ni in snapshot.node_info_list]
        rows: list[int] = []
        priorities: list[int] = []
        amounts: list[tuple[int, int, int]] = []
        scalar: list[bool] = []
        uids: dict[str, list[int]] = {}
        for name in names:
            r = index.get(name)
            if r is None:
                continue
            for pi in handle.nominated_pods_for_node(name):
                p = pi.pod
                res = p.resource
                uids.setdefault(p.uid, []).append(len(rows))
                rows.append(r)
                priorities.append(p.priority)
                amounts.append((res.milli_cpu, res.memory, res.ephemeral_storage))
                scalar.append(bool(res.scalar))
        self._rows = len(index)
        self._uid = uids
        biggest = max((max(a) for a in amounts), default=0)
        smallest = min((min(a) for a in amounts), default=0)
        self._valid = smallest >= 0 and biggest * max(len(amounts), 1) < _SUM_LIMIT
        if not self._valid:
            return
        self._row = np.array(rows, dtype=np.intp)
        self._priority = np.array(priorities, dtype=np.int64)
        self._amounts = np.array(amounts, dtype=np.int64).reshape(len(amounts), 3).T.copy()
        self._scalar = np.array(scalar, dtype=np.bool_)

    def _sum(self, pod: Pod) -> NominatedAdds | None:
        joins = self._priority >= pod.priority
        own = self._uid.get(pod.uid)
        if own:
            joins[own] = False
        if not joins.any():
            return None
        rows = self._row[joins]
        n = self._rows
        count = np.bincount(rows, minlength=n).astype(np.int64)
        sums = [np.zeros(n, dtype=np.int64) for _ in range(3)]
        for k in range(3):
            np.add.at(sums[k], rows, self._amounts[k][joins])
        scalar = np.zeros(n, dtype=np.bool_)
        scalar[rows[self._scalar[joins]]] = True
        return NominatedAdds(count, sums[0], sums[1], sums[2], scalar)
