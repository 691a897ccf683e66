"""Filtering many nodes at once: each Filter plugin's columnar form (`filter_nodes`)
called once over the nodes still passing, with the same verdict per node as
Filtering.run_filter_with_nominated_pods node by node. ColumnarFiltering is the
filtering part a Framework holds."""
from __future__ import annotations

from typing import Any, Literal

import numpy as np

from framework.api.objects import Pod
from framework.cache import NodeInfo, PodInfo, next_generation
from framework.interface import CycleState, FilterReads, Status
from framework.node_table import ColumnarNodes
from framework.nominated_columns import NominatedAdds
from framework.runtime.filtering import Filtering
from framework.runtime.common import _OK, _SUCCESS, _error, has_columnar_form



def _reads(plugin: Any) -> FilterReads | None:
    """What the plugin declares its Filter reads (FilterReadsPlugin); None: anything."""
    reads = getattr(plugin, "filter_reads", None)
    return reads if isinstance(reads, FilterReads) else None


def _with_pods_for_fit(node_info: NodeInfo, added: list[PodInfo]) -> NodeInfo:
    """`node_info` with `added` running on it, as far as the filters
    pods_read_only_by_fit allows read it: its pods and their summed requests
    (FilterReads.NODE_AND_POD_REQUESTS); the node itself (FilterReads.NODE). Cheaper than
    clone() and add_pod(), which also keep ports, volume claims, affinity lists and
    scoring sums that none of those filters reads; the other fields are shared with
    `node_info`, which filters never change."""
    c = NodeInfo.__new__(NodeInfo)
    c.node, c.name, c.allocatable = node_info.node, node_info.name, node_info.allocatable
    c.pods_with_affinity = node_info.pods_with_affinity
    c.pods_with_required_anti_affinity = node_info.pods_with_required_anti_affinity
    c.used_ports, c.non_zero_requested = node_info.used_ports, node_info.non_zero_requested
    c.image_states, c.pvc_ref_counts = node_info.image_states, node_info.pvc_ref_counts
    c.pods = [*node_info.pods, *added]
    requested = node_info.requested.clone()
    for pi in added:
        requested.add(pi.pod.resource)
    c.requested = requested
    c.generation = next_generation()
    return c


class NominatedCopies:
    """_with_pods_for_fit's copies kept across cycles: a node's copy is made again
    only when the node (its generation) or the pods added to it (the same PodInfo
    objects, which the nominator keeps while a nomination stands) change, so the
    nominated-pods pass of a preemption-heavy queue does not rebuild the same
    copies for every pod."""

    _LIMIT = 1 << 16  # entries; cleared beyond (a node list changing wholesale)

    def __init__(self) -> None:
        self._copies: dict[str, tuple[int, list[PodInfo], NodeInfo]] = {}

    def get(self, node_info: NodeInfo, added: list[PodInfo]) -> NodeInfo:
        got = self._copies.get(node_info.name)
        if (got is not None and got[0] == node_info.generation and len(got[1]) == len(added)
                and all(a is b for a, b in zip(got[1], added))):
            return got[2]
        if len(self._copies) >= self._LIMIT:
            self._copies.clear()
        copy = _with_pods_for_fit(node_info, added)
        self._copies[node_info.name] = (node_info.generation, added, copy)
        return copy


def _columnar_copies(nodes: list[NodeInfo], positions: list[int], copies: list[NodeInfo]) -> list[NodeInfo]:
    """`copies` (changed copies of the nodes at `positions`) as a ColumnarNodes over a
    table of their rows with the copies' requests, when `nodes` has rows; else the
    plain list (each columnar form then takes its per-node path)."""
    if not isinstance(nodes, ColumnarNodes):
        return copies
    rows = nodes.rows[np.asarray(positions, dtype=np.intp)]
    table = nodes.table.with_requests(rows, copies)
    return ColumnarNodes(copies, table.all_rows, table)


def _take(nodes: list[NodeInfo], positions: list[int]) -> list[NodeInfo]:
    """The nodes at these positions; a ColumnarNodes keeps its rows."""
    if isinstance(nodes, ColumnarNodes):
        return nodes.take(positions)
    return [nodes[i] for i in positions]


class ColumnarFiltering(Filtering):
    """Filtering, with the columnar path over many nodes (its one base; it overrides
    nothing of it)."""

    nominated_copies: NominatedCopies

    def can_filter_columnar(self, state: CycleState) -> bool:
        """Whether every Filter plugin that runs for this pod has a columnar form
        (`filter_nodes`)."""
        if not self.settings.use_columnar:
            return False
        skip = state.skip_filter_plugins
        return all(has_columnar_form(pl, "filter_nodes")
                   for pl in self.filter_plugins if not (skip and pl.name in skip))

    def filter_verdicts_node_local(self, state: CycleState) -> bool:
        """Whether, for this cycle's pod, every active Filter plugin declares what its
        verdict on one node reads (FilterReadsPlugin: the node, or the node and its
        pods) and no PreFilter extension (AddPod/RemovePod) runs: then a node's
        verdict depends on the pod, that node and the pods nominated to it only
        (framework/incremental_failure.py)."""
        skip = state.skip_filter_plugins or ()
        if any(pl.name not in skip for pl, _ in self.pre_filter_extensions):
            return False
        return all(_reads(pl) is not None for pl in self.filter_plugins if pl.name not in skip)

    def pods_read_only_by_fit(self, state: CycleState) -> bool:
        """Whether, for this cycle's pod, at most one active Filter plugin reads the
        pods on a node, and only their summed requests (it declares
        FilterReads.NODE_AND_POD_REQUESTS: NodeResourcesFit), every other active one
        declares it reads the node alone (FilterReads.NODE), and no PreFilter
        extension (AddPod/RemovePod) runs. Then a node that passes the filters also
        passes them with fewer pods."""
        skip = state.skip_filter_plugins or ()
        if any(pl.name not in skip for pl, _ in self.pre_filter_extensions):
            return False
        readers = 0
        for pl in self.filter_plugins:
            if pl.name in skip:
                continue
            reads = _reads(pl)
            if reads is None:
                return False
            readers += reads is FilterReads.NODE_AND_POD_REQUESTS
        return readers <= 1

    def run_filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[Status]:
        """run_filter_with_nominated_pods for each node, with one columnar call per plugin
        over the nodes still passing: a node's status is its first plugin that does
        not succeed, exactly as node by node. Nodes with nominated pods take the
        per-node path (their filters run against a changed copy)."""
        out: list[Status] = [_OK] * len(nodes)
        for i, st in self.run_filter_nodes_failed(state, pod, nodes).items():
            out[i] = st
        return out

    def run_filter_nodes_failed(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> dict[int, Status]:
        """run_filter_nodes as {position in `nodes`: status} for the nodes that do not
        pass (an empty dict when all pass), so callers pay nothing per passing node.
        A ColumnarNodes stays a ColumnarNodes as nodes drop out, for the next plugin's
        columnar form."""
        failed: dict[int, Status] = {}
        pending: list[int] | None = None  # positions of `subset` in `nodes`; None: the same
        subset = nodes
        with_nominated = self._with_nominated_pods(nodes)
        fit_again: list[int] = []  # one pass: nodes whose Fit verdict is taken again with nominated pods
        if with_nominated:
            if self.pods_read_only_by_fit(state):
                fit_again = [i for i, flag in enumerate(with_nominated) if flag]
            else:
                pending = []
                for i, ni in enumerate(nodes):
                    if with_nominated[i]:
                        st = self.run_filter_with_nominated_pods(state, pod, ni)
                        if st.code != _SUCCESS:
                            failed[i] = st
                    else:
                        pending.append(i)
                subset = _take(nodes, pending)
        skip = state.skip_filter_plugins
        for pl in self.filter_plugins:
            if not subset:
                break
            if skip and pl.name in skip:
                continue
            statuses = self._filter_columnar(pl, state, pod, subset)
            if statuses is None:
                continue
            keep: list[int] = []
            for k, st in enumerate(statuses):
                if st is _OK:
                    keep.append(k)
                else:
                    failed[k if pending is None else pending[k]] = st
            pending = keep if pending is None else [pending[k] for k in keep]
            subset = _take(subset, keep)
        if fit_again:
            self._fit_with_nominated_pods(state, pod, nodes, fit_again, failed)
        return failed

    def _fit_with_nominated_pods(self, state: CycleState, pod: Pod, nodes: list[NodeInfo], positions: list[int],
                                 failed: dict[int, Status]) -> None:
        """Where pods_read_only_by_fit holds, the columnar verdicts of nodes with pods
        nominated to them, turned into _filter_with_nominated_pods_once's: only
        the one plugin reading pod requests (Fit) reads pods, so a node failing at a
        plugin before it keeps that status; otherwise Fit, run with the nominated
        pods of at least this pod's priority, decides where it fails, and the
        columnar verdict stands where it passes."""
        skip = state.skip_filter_plugins or ()
        active = [pl for pl in self.filter_plugins if pl.name not in skip]
        fit_at = next((k for k, pl in enumerate(active) if _reads(pl) is FilterReads.NODE_AND_POD_REQUESTS), None)
        if fit_at is None:
            return  # no active filter reads pods: the columnar verdicts are final
        fit = active[fit_at]
        before_fit = {pl.name for pl in active[:fit_at]}
        if self._fit_with_nominated_columns(fit, before_fit, state, pod, nodes, positions, failed):
            return
        nominated = self.handle.nominated_pods_for_node
        copy_of = self.nominated_copies.get
        priority, uid = pod.priority, pod.uid
        todo: list[int] = []
        copies: list[NodeInfo] = []
        for i in positions:
            st = failed.get(i) if failed else None
            if st is not None and st.plugin in before_fit:
                continue
            ni = nodes[i]
            added = [pi for pi in nominated(ni.name) if pi.pod.priority >= priority and pi.pod.uid != uid]
            if added:
                todo.append(i)
                copies.append(copy_of(ni, added))
        if not todo:
            return
        statuses = self._filter_columnar(fit, state, pod, _columnar_copies(nodes, todo, copies))
        if statuses is None:
            return
        for i, fst in zip(todo, statuses):
            if fst is not _OK:
                failed[i] = fst

    def nominated_adds(self, pod: Pod) -> NominatedAdds | None | Literal[False]:
        """What the pods nominated to each node of the handle's snapshot that join
        `pod`'s filters add there, per snapshot row (NominatedColumns.adds: None when
        none joins anywhere, False when the sums do not fit columns)."""
        return self.nominated_columns.adds(self.handle, self.handle.snapshot(), pod)

    def _fit_with_nominated_columns(self, fit: Any, before_fit: set[str], state: CycleState, pod: Pod,
                                    nodes: list[NodeInfo], positions: list[int], failed: dict[int, Status]) -> bool:
        """_fit_with_nominated_pods' copies replaced by columns, where `fit` declares it
        reads the pods only through the table (TableFilterPlugin) and the nominated
        pods' sums fit the columns: the nodes' rows get what their nominated pods of
        at least this pod's priority request added (NominatedColumns), and `fit`
        decides once over them. False: not done, the copies must be made."""
        reads_table = getattr(fit, "filter_nodes_reads_table", None)
        if (reads_table is None or not isinstance(nodes, ColumnarNodes) or not nodes.table.valid
                or not reads_table(state)):
            return False
        snapshot = self.handle.snapshot()
        if nodes.table is not snapshot.table:
            return False
        adds = self.nominated_adds(pod)
        if adds is None:
            return True  # no nominated pod joins this pod's filters: the verdicts stand
        if adds is False:
            return False
        at = np.asarray(positions, dtype=np.intp)
        rows = nodes.rows[at]
        joined = adds.count[rows] > 0
        todo = [i for i, j in zip(positions, joined.tolist())
                if j and not (failed and (st := failed.get(i)) is not None and st.plugin in before_fit)]
        if not todo:
            return True
        rows = nodes.rows[np.asarray(todo, dtype=np.intp)]
        table = nodes.table.with_added(rows, adds.count[rows], adds.cpu[rows], adds.mem[rows], adds.eph[rows],
                                       adds.scalar[rows])
        if not table.valid:
            return False
        statuses = self._filter_columnar(fit, state, pod, ColumnarNodes([nodes[i] for i in todo], table.all_rows, table))
        if statuses is not None:
            for i, fst in zip(todo, statuses):
                if fst is not _OK:
                    failed[i] = fst
        return True

    def _with_nominated_pods(self, nodes: list[NodeInfo]) -> list[bool] | None:
        """Per node, whether pods are nominated to it; None when none are."""
        handle = self.handle
        names = handle.nodes_with_nominated_pods()
        if names is not None:
            if not names:
                return None
            if not isinstance(names, (set, frozenset)):
                names = set(names)  # a list (the queue's nominator) is searched per node
            flags = [ni.name in names for ni in nodes]
        else:
            nominated = handle.nominated_pods_for_node
            flags = [bool(nominated(ni.name)) for ni in nodes]
        return flags if any(flags) else None

    def _filter_columnar(self, pl: Any, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[Status] | None:
        """One plugin's verdicts as run_filter words them (_OK, a rejection naming the
        plugin, or an Error), or None when every node passes. An exception from the
        columnar form is located by calling the per-node form, so the Error names the
        same failure."""
        try:
            raw = pl.filter_nodes(state, pod, nodes)
        except Exception:  # noqa: BLE001
            return [self._filter_one(pl, state, pod, ni) for ni in nodes]
        if len(raw) != len(nodes):
            err = _error(pl.name, f'running "{pl.name}" filter plugin: returned {len(raw)} statuses for {len(nodes)} nodes')
            return [err] * len(nodes)
        # All None: every node passes. A list is compared with a list of None (an identity test
        # per entry, stopping at the first other); else, or when one is not None, any(): a Status
        # has no truth value of its own (always true), so no __eq__ per node.
        if (type(raw) is list and raw == [None] * len(raw)) or not any(raw):
            return None
        # A columnar form may share one Status among nodes: word each object once.
        worded: dict[int, Status] = {}
        out: list[Status] = []
        for st in raw:
            if st is None:
                out.append(_OK)
                continue
            v = worded.get(id(st))
            if v is None:
                v = worded[id(st)] = _OK if st.code == _SUCCESS else self._filter_verdict(pl.name, st)
            out.append(v)
        return out

    def _filter_one(self, pl: Any, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        try:
            st = pl.filter(state, pod, node_info)
        except Exception as e:  # noqa: BLE001
            return _error(pl.name, f'running "{pl.name}" filter plugin: {e}')
        return _OK if st is None or st.code == _SUCCESS else self._filter_verdict(pl.name, st)

    @staticmethod
    def _filter_verdict(name: str, st: Status) -> Status:
        if not st.is_rejected():
            return _error(name, f'running "{name}" filter plugin: {st.message()}')
        return st.with_plugin(name)

    def _filter_with_nominated_pods_once(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        """run_filter_with_nominated_pods where pods_read_only_by_fit holds: no
        extension changes the state, and a node passing with the nominated pods
        passes without them, so the run with them added decides alone."""
        added = [pi for pi in self.handle.nominated_pods_for_node(node_info.name)
                 if pi.pod.priority >= pod.priority and pi.pod.uid != pod.uid]
        if not added:
            return self.run_filter(state, pod, node_info)
        return self.run_filter(state, pod, _with_pods_for_fit(node_info, added))
