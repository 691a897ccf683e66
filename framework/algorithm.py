"""The scheduling algorithm for one pod (upstream's schedule_one.go: schedulePod,
findNodesThatFitPod, findNodesThatPassFilters, prioritizeNodes, selectHost).
Explain's dry run (framework/explain.py) runs its PreFilter and the same runtime."""
from __future__ import annotations

import random
from bisect import bisect_left
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Sequence

import numpy as np

from framework.api.objects import Pod
from framework.cache import NodeInfo, Snapshot
from framework.extender import (
    EXTENDER_NAME,
    Extender,
    ExtenderError,
    add_extender_scores,
    find_nodes_that_pass_extenders,
)
from framework.node_table import ColumnarNodes
from framework.interface import Code, CycleState, NodePluginScores, Status
from framework.runtime import Framework, run_unsuspended
from framework.runtime.node_local import NodeLocalColumns
from framework.runtime.window_positions import rotation

if TYPE_CHECKING:
    from framework.batching import Batching

from framework.attempt_outcome import Diagnosis, FitError, NoNodesAvailable, ScheduleResult, SchedulingError
from framework.host_selection import select_host
from framework.incremental_failure import Retry, filter_changed_nodes


MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (adaptive when unset or 0)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = 50 - num_all_nodes // 125
        if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    n = num_all_nodes * pct // 100
    return max(n, MIN_FEASIBLE_NODES_TO_FIND)


class SchedulingAlgorithm:
    """Schedules one pod at a time; remembers where the next filter pass starts."""

    def __init__(self, rand: random.Random | None = None, global_percentage: int | None = None) -> None:
        self.rand = rand if rand is not None else random.Random()
        self.next_start_node_index = 0
        self.global_percentage = global_percentage
        # Configured extenders that filter / prioritize: they keep the Filter pass
        # looking for more than one node, as upstream's hasExtenderFilters/hasScoring.
        self.extender_filters = False
        self.extender_prioritizers = False
        self.batching: Batching | None = None  # OpportunisticBatching's hooks when the gate is on
        # Set by the scheduler for one cycle: the pod's class failed before, and its
        # Filter pass may re-filter only the changed nodes (framework/incremental_failure.py).
        self.retry: Retry | None = None
        # Set by a group cycle's placer for its members: node-local Filter verdicts and
        # raw scores read from columns kept across the group (framework/runtime/node_local.py).
        self.node_local: NodeLocalColumns | None = None

    def _percentage(self, fwk: Framework) -> int | None:
        if fwk.percentage_of_nodes_to_score is not None:
            return fwk.percentage_of_nodes_to_score
        return self.global_percentage

    def schedule_pod(self, fwk: Framework, state: CycleState, pod: Pod, snapshot: Snapshot) -> ScheduleResult:
        """schedule() without extenders: nothing in it suspends, so it runs to the
        end here, synchronously."""
        return run_unsuspended(self.schedule(fwk, state, pod, snapshot))

    async def schedule(self, fwk: Framework, state: CycleState, pod: Pod, snapshot: Snapshot,
                       extenders: Sequence[Extender] = ()) -> ScheduleResult:
        """upstream's schedulePod: the feasible nodes (plugins, then the filter
        extenders), then their scores (plugins plus the prioritizing extenders), then
        one host. The only path: with extenders the scheduler awaits it, without them
        schedule_pod drives it. A failing filter extender fails the attempt
        (SchedulingError)."""
        if snapshot.num_nodes() == 0:
            raise NoNodesAvailable()
        try:
            feasible, diagnosis = await self.find_nodes_that_fit_pod(fwk, state, pod, snapshot, extenders)
        except ExtenderError as e:
            raise SchedulingError(Status(Code.Error, str(e))) from None
        if not feasible:
            raise FitError(pod, snapshot.num_nodes(), diagnosis)
        if len(feasible) == 1:
            if self.batching is not None:
                self.batching.chose_only(feasible[0].name)
            return ScheduleResult(feasible[0].name, 1 + len(diagnosis.node_to_status), 1)
        scores = self.prioritize_nodes(fwk, state, pod, feasible, with_extenders=bool(extenders))
        await add_extender_scores(extenders, pod, feasible, scores)
        host = self.batching.choose(scores, self.rand) if self.batching else select_host(scores, self.rand)
        return ScheduleResult(host, len(feasible) + len(diagnosis.node_to_status), len(feasible))

    async def find_nodes_that_fit_pod(self, fwk: Framework, state: CycleState, pod: Pod, snapshot: Snapshot,
                                      extenders: Sequence[Extender] = ()) -> tuple[list[NodeInfo], Diagnosis]:
        """findNodesThatFitPod: PreFilter, the nominated node first (plugins, then
        extenders), else Filter over the nodes, then the filter extenders in order.
        When extenders dropped nodes, "Extender" joins the unschedulable plugins."""
        diagnosis, nodes = pre_filter(fwk, state, pod, snapshot)
        if nodes is None:
            return [], diagnosis
        hint = self.batching.hint(fwk, state, pod, snapshot) if self.batching is not None else ""
        nominated = self.nominated_node(pod, snapshot, hint)  # the nominated node first, else the hint
        feasible: list[NodeInfo] = []
        if nominated is not None:
            feasible = self.find_nodes_that_pass_filters(fwk, state, pod, diagnosis, [nominated], use_rotation=False)
            feasible = await _pass_extenders(extenders, pod, feasible, diagnosis, nominated=True)
        if not feasible:
            feasible = self.filter_nodes(fwk, state, pod, snapshot, diagnosis, nodes)
            feasible = await _pass_extenders(extenders, pod, feasible, diagnosis, nominated=False)
        return feasible, diagnosis

    @staticmethod
    def nominated_node(pod: Pod, snapshot: Snapshot, hint: str = "") -> NodeInfo | None:
        name = pod.nominated_node_name or hint
        return snapshot.get(name) if name else None

    def filter_nodes(self, fwk: Framework, state: CycleState, pod: Pod, snapshot: Snapshot,
                     diagnosis: Diagnosis, nodes: list[NodeInfo]) -> list[NodeInfo]:
        """The Filter pass from the rotating start index; advances the index."""
        feasible = None
        if self.retry is not None and fwk.has_filter_plugins():
            feasible = filter_changed_nodes(self.retry, fwk, state, pod, diagnosis, snapshot, nodes,
                                            self.next_start_node_index, self._to_find(fwk, len(nodes)))
        if feasible is None and self.node_local is not None and fwk.has_filter_plugins():
            feasible = self._filter_from_columns(self.node_local, fwk, state, pod, diagnosis, nodes)
        if feasible is None:
            feasible = self.find_nodes_that_pass_filters(fwk, state, pod, diagnosis, nodes)
        processed = len(feasible) + len(diagnosis.node_to_status)
        self.next_start_node_index = (self.next_start_node_index + processed) % snapshot.num_nodes()
        return feasible

    def _filter_from_columns(self, columns: NodeLocalColumns, fwk: Framework, state: CycleState, pod: Pod,
                             diagnosis: Diagnosis, nodes: list[NodeInfo]) -> list[NodeInfo] | None:
        """The Filter pass from the group's node-local columns (None: they cannot serve
        this pod): the same feasible nodes and recorded statuses as the pass itself."""
        got = columns.pass_filters(fwk.filtering, state, pod, nodes, self.next_start_node_index,
                                   self._to_find(fwk, len(nodes)))
        if got is None:
            return None
        if got.failed_nodes:
            taken = list(range(len(got.failed_nodes)))
            _record_failed(diagnosis, got.failed_nodes, dict(enumerate(got.failed_statuses)), taken)
        return got.feasible

    def find_nodes_that_pass_filters(
        self,
        fwk: Framework,
        state: CycleState,
        pod: Pod,
        diagnosis: Diagnosis,
        nodes: list[NodeInfo],
        use_rotation: bool = True,
    ) -> list[NodeInfo]:
        n = len(nodes)
        if n == 0:
            return []
        to_find = self._to_find(fwk, n)
        start = self.next_start_node_index if use_rotation else 0
        if not fwk.has_filter_plugins():
            return [nodes[(start + i) % n] for i in range(min(to_find, n))]
        if fwk.can_filter_columnar(state):
            return _pass_filters_in_chunks(fwk, state, pod, diagnosis, nodes, start, to_find)
        feasible: list[NodeInfo] = []
        filter_one = fwk.filtering.run_filter_with_nominated_pods
        for i in range(n):
            ni = nodes[(start + i) % n]
            st = filter_one(state, pod, ni)
            if st.code == Code.Error:
                raise SchedulingError(st)
            if st.code == Code.Success:
                feasible.append(ni)
                if len(feasible) >= to_find:
                    break
            else:
                diagnosis.node_to_status.set(ni.name, st)
                diagnosis.add_plugin_status(st)
        return feasible

    def _to_find(self, fwk: Framework, n: int) -> int:
        """How many feasible nodes the Filter pass over `n` nodes looks for."""
        if not self.extender_filters and not (fwk.has_score_plugins() or self.extender_prioritizers):
            return 1
        return num_feasible_nodes_to_find(self._percentage(fwk), n)

    def prioritize_nodes(self, fwk: Framework, state: CycleState, pod: Pod, nodes: list[NodeInfo],
                         with_extenders: bool = False) -> list[NodePluginScores]:
        """PreScore and Score; `with_extenders`: extenders will add their scores, so
        the plugins run even when there are none (upstream's prioritizeNodes)."""
        if not fwk.has_score_plugins() and not with_extenders:
            return [NodePluginScores(n.name, total_score=1) for n in nodes]
        st = fwk.run_pre_score(state, pod, nodes)
        if not st.is_success():
            raise SchedulingError(st)
        scores, st = fwk.run_score(state, pod, nodes, None, self.node_local)
        if not st.is_success():
            raise SchedulingError(st)
        return scores


# Smallest chunk filtered at once: when few feasible nodes are still wanted, a
# few nodes more are filtered and the verdicts past the last one needed dropped.
MIN_FILTER_CHUNK = 16


def _next_chunk_size(wanted: int, passed: int, done: int, left: int) -> int:
    """How many of the `left` nodes the next chunk filters to find `wanted` more
    feasible ones: as many as wanted at first; then as many as the pass rate seen so
    far (`passed` of `done`) needs, all of them when none passed. Each chunk costs a
    call per plugin, so a cluster where most nodes fail is filtered in one or two
    chunks rather than one per shrinking remainder."""
    if done == 0:
        size = max(wanted, MIN_FILTER_CHUNK)
    elif passed == 0:
        size = left
    else:
        size = max(-(-wanted * done // passed), MIN_FILTER_CHUNK)
    return min(size, left)


def _pass_filters_in_chunks(fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                            nodes: list[NodeInfo], start: int, to_find: int) -> list[NodeInfo]:
    """The node-by-node search with the plugins' columnar forms: nodes are filtered in
    rotation order a chunk at a time (about as many as are still wanted) and the
    verdicts are taken in order up to the to_find-th feasible node, so the
    feasible set, the statuses recorded, the first Error and the processed count
    are the ones the per-node loop gives. Filters are pure, so the verdicts
    dropped past that node change nothing, and so do the chunks' sizes
    (_next_chunk_size). A ColumnarNodes is cut into ColumnarNodes chunks, so columnar
    forms see the rows of their nodes."""
    n = len(nodes)
    feasible: list[NodeInfo] = []
    rows = nodes.rows if isinstance(nodes, ColumnarNodes) else None
    # Over the whole table positions are rows: a chunk that does not wrap is a slice of them.
    whole = rows is not None and rows is nodes.table.all_rows
    feasible_rows: list[np.ndarray] = []
    done = 0
    while done < n:
        size = _next_chunk_size(to_find - len(feasible), len(feasible), done, n - done)
        first = (start + done) % n
        chunk = nodes[first:first + size]
        if len(chunk) < size:
            chunk += nodes[:size - len(chunk)]
            if rows is not None:
                chunk = ColumnarNodes(chunk, rows[rotation(first, size, n)], nodes.table)
        elif rows is not None:  # the rows of a run of positions: a view, no positions made
            chunk = ColumnarNodes(chunk, rows[first:first + size], nodes.table,
                                  slice(first, first + size) if whole else None)
        failed = fwk.run_filter_nodes_failed(state, pod, chunk)
        done += size
        if not failed:
            keep: list[int] | slice = slice(0, to_find - len(feasible))
            feasible.extend(chunk[keep])
        else:
            # Verdicts count up to the node that completes to_find, in chunk order.
            passing = np.ones(size, dtype=np.bool_)
            failed_at = sorted(failed)
            passing[failed_at] = False
            reached = np.cumsum(passing)
            end = size
            if reached[-1] >= to_find - len(feasible):
                end = int(np.searchsorted(reached, to_find - len(feasible))) + 1
            _record_failed(diagnosis, chunk, failed, failed_at[:bisect_left(failed_at, end)])
            keep = np.flatnonzero(passing[:end])
            feasible.extend([chunk[i] for i in keep.tolist()])
        if rows is not None:
            feasible_rows.append(chunk.rows[keep])
        if len(feasible) >= to_find:
            break
    if rows is None:
        return feasible
    if len(feasible_rows) == 1 and type(keep) is slice:  # the first chunk's head: its rows' view (and span)
        span = chunk.span
        return ColumnarNodes(feasible, feasible_rows[0], nodes.table,
                             None if span is None else slice(span.start, span.start + len(feasible)))
    return ColumnarNodes(feasible, np.concatenate(feasible_rows) if feasible_rows else rows[:0], nodes.table)


async def _pass_extenders(extenders: Sequence[Extender], pod: Pod, feasible: list[NodeInfo], diagnosis: Diagnosis,
                          *, nominated: bool) -> list[NodeInfo]:
    """The filter extenders' step after the plugins' Filter. On the nominated node a
    failing extender leaves no node (upstream logs it and tries every node); on the
    nodes of the full pass it fails the attempt, and nodes the extenders dropped add
    "Extender" to the unschedulable plugins."""
    if not extenders:
        return feasible
    try:
        after = await find_nodes_that_pass_extenders(extenders, pod, feasible, diagnosis.node_to_status)
    except ExtenderError:
        if nominated:
            return []
        raise
    if not nominated and len(after) != len(feasible):
        diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
    return after


def pre_filter(fwk: Framework, state: CycleState, pod: Pod,
               snapshot: Snapshot) -> tuple[Diagnosis, list[NodeInfo] | None]:
    """PreFilter: the diagnosis so far and the nodes to filter (None: PreFilter rejected the pod)."""
    diagnosis = Diagnosis()
    pre_res, st, plugins = fwk.run_pre_filter(state, pod)
    diagnosis.unschedulable_plugins = set(plugins)
    if not st.is_success():
        if not st.is_rejected():
            raise SchedulingError(st)
        diagnosis.node_to_status.absent = st
        diagnosis.pre_filter_msg = st.message()
        diagnosis.add_plugin_status(st)
        return diagnosis, None
    nodes = snapshot.list()
    if pre_res is not None and not pre_res.all_nodes():
        names = pre_res.node_names or set()
        positions = [i for i, n in enumerate(nodes) if n.name in names]
        nodes = nodes.take(positions) if isinstance(nodes, ColumnarNodes) else [nodes[i] for i in positions]
        diagnosis.node_to_status.absent = Status(
            Code.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) " + _go_list(sorted(plugins))
        )
    return diagnosis, nodes


def _record_failed(diagnosis: Diagnosis, chunk: list[NodeInfo], failed: dict[int, Status], taken: list[int]) -> None:
    """The statuses of the chunk's failed nodes at positions `taken` (ascending) into
    the diagnosis, as the per-node loop records them; the first Error raises. Nodes
    share Status objects, so each distinct one is looked at once."""
    if not taken:
        return
    statuses = [failed[i] for i in taken]
    distinct = {id(st): st for st in statuses}
    if any(st.code == Code.Error for st in distinct.values()):
        for i, st in zip(taken, statuses):  # the statuses before the first Error, then it
            if st.code == Code.Error:
                raise SchedulingError(st)
            diagnosis.node_to_status.set(chunk[i].name, st)
    picked = itemgetter(*taken)(chunk)
    nodes = picked if len(taken) > 1 else (picked,)
    diagnosis.node_to_status.statuses.update(zip(map(attrgetter("name"), nodes), statuses))
    for st in distinct.values():
        diagnosis.add_plugin_status(st)


def _go_list(items: list[str]) -> str:
    return "[" + " ".join(items) + "]"
