"""The topology layer's ClusterView over a Snapshot (framework/workload/topology.py).
No I/O.

With the snapshot's NodeTable (framework/node_table.py) the domains of a label are
grouped once per table labelling (the table's label codes, rebuilt by the Cache when a
node's labels change) and a domain's free cpu and memory are summed over the numpy
columns at once, so a gang in a 5,000-node cluster pays no per-node Python loop. A
hand-built snapshot with no table (or one whose numbers overflow int64) falls back to
LabelledNodes over the NodeInfos."""
from __future__ import annotations

from typing import Any

import numpy as np

from framework.cache import Snapshot
from framework.workload.topology import ClusterView, Domain, LabelledNodes
from framework.workload.topology_score import Capacity


class TableView:
    # key -> (the label codes the grouping was built from, its domains, value -> index,
    # the snapshot's node index it was built over)
    _grouped: dict[str, tuple[np.ndarray, list[Domain], dict[str, int], dict[str, int]]]

    def __init__(self, snapshot: Snapshot, cache: dict[str, Any]) -> None:
        self.snapshot = snapshot
        self.table = snapshot.table
        assert self.table is not None
        self._grouped = cache
        self._free_cpu = self.table.alloc_cpu - self.table.req_cpu
        self._free_mem = self.table.alloc_mem - self.table.req_mem
        self._sums: dict[str, tuple[np.ndarray, ...]] = {}
        self._checked: dict[str, np.ndarray] = {}  # keys whose grouping this view has checked

    def node_count(self) -> int:
        return len(self.table)

    def all_nodes(self) -> tuple[str, ...]:
        return tuple(ni.name for ni in self.snapshot.node_info_list)

    def label(self, node: str, key: str) -> str | None:
        ni = self.snapshot.get(node)
        return ni.node.labels.get(key) if ni is not None and ni.node is not None else None

    def _group(self, key: str) -> tuple[np.ndarray, list[Domain], dict[str, int], dict[str, int]]:
        got = self._grouped.get(key)
        if got is not None and got[3] is self.snapshot.index and got[0] is self._checked.get(key):
            return got
        codes, values = self.table.label_codes(key)
        # the same nodes in the same order (the Cache replaces the index when they change), labelled alike
        if got is None or got[3] is not self.snapshot.index or not np.array_equal(got[0], codes):
            names = [ni.name for ni in self.snapshot.node_info_list]
            members: list[list[str]] = [[] for _ in values]
            for row in np.flatnonzero(codes >= 0).tolist():
                members[codes[row]].append(names[row])
            domains = [Domain(key, v, tuple(m)) for v, m in zip(values, members)]
            got = self._grouped[key] = (codes.copy(), domains, {v: i for i, v in enumerate(values)},
                                        self.snapshot.index)
        self._checked[key] = got[0]
        return got

    def domains(self, key: str, pinned_value: str | None) -> list[Domain]:
        _, domains, index, _ = self._group(key)
        if pinned_value is None:
            return list(domains)
        i = index.get(pinned_value)
        return [domains[i]] if i is not None else []

    def free(self, domain: Domain) -> Capacity:
        sums = self._sums.get(domain.key)
        if sums is None:
            codes, domains, _, _ = self._group(domain.key)
            rows = codes >= 0
            k = codes[rows]
            n = len(domains)
            sums = self._sums[domain.key] = tuple(
                np.bincount(k, weights=col[rows], minlength=n).astype(np.int64)
                for col in (self.table.alloc_cpu, self.table.alloc_mem, self._free_cpu, self._free_mem))
        i = self._group(domain.key)[2][domain.value]
        return Capacity(int(sums[0][i]), int(sums[1][i]), int(sums[2][i]), int(sums[3][i]))


def cluster_view(snapshot: Snapshot, cache: dict[str, Any]) -> ClusterView:
    """The columnar view when the snapshot has a valid table, else the plain one.
    `cache` keeps the label groupings between cycles (the owner's, per profile)."""
    if snapshot.table is not None and snapshot.table.valid and len(snapshot.table) == len(snapshot.node_info_list):
        return TableView(snapshot, cache)
    infos = {ni.name: ni for ni in snapshot.node_info_list}

    def capacity(name: str) -> Capacity:
        ni = infos[name]
        a, r = ni.allocatable, ni.requested
        return Capacity(a.milli_cpu, a.memory, a.milli_cpu - r.milli_cpu, a.memory - r.memory)

    return LabelledNodes([(n, ni.node.labels if ni.node is not None else {}) for n, ni in infos.items()], capacity)


__all__ = ["TableView", "cluster_view"]
