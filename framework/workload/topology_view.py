"""The topology layer's ClusterView over a Snapshot (framework/workload/topology.py).
No I/O.

With the snapshot's NodeTable (framework/node_table.py) the domains of a label are
grouped once per table labelling (the table's label codes, rebuilt by the Cache when a
node's labels change) and a domain's free cpu and memory are summed over the numpy
columns at once (integer segment sums over the rows ordered by domain, kept with the
grouping), so a gang in a 5,000-node cluster pays no per-node Python loop; the
domains are ranked for BestFit by one numpy sort over those sums, not a Python sort
over per-domain capacities. A
hand-built snapshot with no table (or one whose numbers overflow int64) falls back to
LabelledNodes over the NodeInfos."""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from framework.cache import Snapshot
from framework.workload.topology import ClusterView, Domain, LabelledNodes
from framework.workload.topology_score import Capacity


@dataclass(frozen=True, slots=True)
class Grouping:
    """The domains of one label over the snapshot's nodes: the table's label codes it
    was built from, the domains (in code order), value -> position, the snapshot's
    node index it was built over, and each domain's rank by value (the BestFit order's
    last key)."""

    codes: np.ndarray
    domains: list[Domain]
    index: dict[str, int]
    node_index: dict[str, int]
    value_rank: np.ndarray
    # the labelled rows ordered by domain, and where each domain's rows start there
    # (every value the table lists labels some row, so no domain is empty)
    order: np.ndarray
    starts: np.ndarray


class TableView:
    _grouped: dict[str, Grouping]  # label key -> its grouping, kept between cycles

    def __init__(self, snapshot: Snapshot, cache: dict[str, Any]) -> None:
        self.snapshot = snapshot
        self.table = snapshot.table
        assert self.table is not None
        self._grouped = cache
        self._sums: dict[str, tuple[np.ndarray, ...]] = {}
        self._checked: dict[str, np.ndarray] = {}  # keys whose grouping this view has checked

    def node_count(self) -> int:
        return len(self.table)

    def all_nodes(self) -> tuple[str, ...]:
        return tuple(ni.name for ni in self.snapshot.node_info_list)

    def label(self, node: str, key: str) -> str | None:
        ni = self.snapshot.get(node)
        return ni.node.labels.get(key) if ni is not None and ni.node is not None else None

    def _group(self, key: str) -> Grouping:
        got = self._grouped.get(key)
        if got is not None and got.node_index is self.snapshot.index and got.codes is self._checked.get(key):
            return got
        codes, values = self.table.label_codes(key)
        # the same nodes in the same order (the Cache replaces the index when they change), labelled alike
        if got is None or got.node_index is not self.snapshot.index or not np.array_equal(got.codes, codes):
            names = [ni.name for ni in self.snapshot.node_info_list]
            members: list[list[str]] = [[] for _ in values]
            for row in np.flatnonzero(codes >= 0).tolist():
                members[codes[row]].append(names[row])
            domains = [Domain(key, v, tuple(m)) for v, m in zip(values, members)]
            rank = np.empty(len(values), dtype=np.int64)
            rank[sorted(range(len(values)), key=values.__getitem__)] = np.arange(len(values))
            labelled = np.flatnonzero(codes >= 0)
            order = labelled[np.argsort(codes[labelled], kind="stable")]
            by_domain = codes[order]
            starts = np.flatnonzero(np.r_[True, by_domain[1:] != by_domain[:-1]]) if len(order) else order
            assert len(starts) == len(values), f"a value of {key} labels no node"
            got = self._grouped[key] = Grouping(codes.copy(), domains, {v: i for i, v in enumerate(values)},
                                                self.snapshot.index, rank, order, starts)
        self._checked[key] = got.codes
        return got

    def domains(self, key: str, pinned_value: str | None) -> list[Domain]:
        g = self._group(key)
        if pinned_value is None:
            return list(g.domains)
        i = g.index.get(pinned_value)
        return [g.domains[i]] if i is not None else []

    def _sums_of(self, key: str) -> tuple[np.ndarray, ...]:
        """Per domain of `key`: allocatable cpu and memory, free cpu and memory, in
        int64 (a segment sum over the rows ordered by domain)."""
        sums = self._sums.get(key)
        if sums is None:
            g = self._group(key)
            t = self.table
            columns = (t.alloc_cpu, t.alloc_mem, t.req_cpu, t.req_mem)
            if g.domains:
                a_cpu, a_mem, r_cpu, r_mem = (np.add.reduceat(col[g.order], g.starts) for col in columns)
            else:
                a_cpu = a_mem = r_cpu = r_mem = np.zeros(0, dtype=np.int64)
            sums = self._sums[key] = (a_cpu, a_mem, a_cpu - r_cpu, a_mem - r_mem)
        return sums

    def free(self, domain: Domain) -> Capacity:
        sums = self._sums_of(domain.key)
        i = self._group(domain.key).index[domain.value]
        return Capacity(int(sums[0][i]), int(sums[1][i]), int(sums[2][i]), int(sums[3][i]))

    def best_fit_order(self, domains: Sequence[Domain]) -> Sequence[int]:
        if not domains:
            return []
        key = domains[0].key
        g = self._group(key)
        sums = self._sums_of(key)
        # lexsort: the last key first; stable, so the order is sorted()'s on the same triples
        if len(domains) == len(g.domains) and all(map(operator.is_, domains, g.domains)):
            return np.lexsort((g.value_rank, sums[3], sums[2])).tolist()  # the whole level, in code order
        at = np.fromiter((g.index[d.value] for d in domains), dtype=np.intp, count=len(domains))
        return np.lexsort((g.value_rank[at], sums[3][at], sums[2][at])).tolist()


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


__all__ = ["Grouping", "TableView", "cluster_view"]
