"""Node-local columns: the Filter verdicts and raw scores of node-local plugins computed
once, in columns, for the members of one signature (in a group cycle, and across gangs of
one template while begin_group's world holds) and sliced per member's window (issue 29).

A whole-group cycle runs the algorithm once per member, each over its own rotating
window of numFeasibleNodesToFind nodes. When every active Filter plugin declares that
its verdict on a node reads that node alone (FilterReadsPlugin), a Score plugin
declares the same of its raw score (NodeLocalScorePlugin), and each of them signs
the pod (SignPlugin, PLACEMENT), a node's verdict and raw score for one signature
change only when the node's generation moves. So the first member of a signature
filters every node of its view in one columnar call per plugin (and scores every
node that passed), and the next members read their windows from the columns,
recomputing only the rows whose generation moved since: the nodes the group assumed
members on. A member gets exactly what its own pass gives: the same window (the
first to_find passing nodes from the rotating start), the same statuses for the
nodes that failed before its end, the same raw scores; NormalizeScore, the weights
and host selection still run per member over its window, as upstream normalises
over the nodes it scored.

Not used (the member takes the ordinary pass) when pods are nominated to some node
(their filters run against changed copies), when a plugin cannot sign the pod or
declares nothing, or when the nodes carry no usable table rows."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence, TypeVar

import numpy as np

from framework.api.objects import Pod
from framework.cache import NodeInfo
from framework.interface import CycleState, SignPurpose, Status
from framework.node_table import ColumnarNodes, NodeTable
from framework.runtime.common import _SUCCESS
from framework.runtime.node_columns import FilterColumn, ScoreColumn
from framework.reductions import differ
from framework.runtime.window_positions import (rotated_positions, rotation, stale_in_rotation, take, take_rotated,
                                                 union, unset, window)

C = TypeVar("C")

# 1-D masks give their positions by `.nonzero()[0]` (np.flatnonzero's result, without
# its Python-level wrapper: these run several times a cycle).

# Pod shapes kept at once; the next new one starts the columns afresh (ordinary
# cycles meet shapes without end, a group only a few).
_MAX_SHAPES = 32
# Ordinary cycles read the columns only over a view of at least this many windows: a
# refresh takes the nodes the pods of the other windows moved, so it comes about once
# a lap of the windows, and with fewer windows nearly every pod still calls each plugin
# (measured at 500 nodes, windows of 230: 9.6 % more instructions a pod than its own pass;
# h26-algo4 measured two windows again: -8 % in the algorithm-only harness, where a pod moves
# its node once, but +0.3 M instructions a pod in the daemon's bench, where 427 of 500 pods
# refreshed: the bind's confirmation moves the node again, after the pods behind it).
_MIN_WINDOWS = 4
# A refresh of at most this many nodes runs the per-node Filter and Score on each
# (Scoring.score_refresh reads it too): a columnar call's fixed cost is several nodes'
# per-node work (callgrind, h26-algo4: Filter over two nodes 116 k instructions, per node
# 25 k; BalancedAllocation's Score 233 k against 62 k a node, Fit's 128 k).
FEW_NODES = 3

# Scoring's one-plugin call: raw scores in node order, or the Error that ends the cycle.
ScoreOne = Callable[[Any, CycleState, Pod, list[NodeInfo]], tuple[Sequence[int], Status | None]]


@dataclass(frozen=True, slots=True)
class WindowPass:
    """One member's Filter pass read from the columns: its feasible nodes (in rotation
    order) and the nodes that failed before the last of them, in rotation order, with
    their statuses."""

    feasible: ColumnarNodes
    failed_nodes: list[NodeInfo]
    failed_statuses: list[Status]


@dataclass(slots=True)
class NodeLocalCounts:
    """What the columns did: columnar plugin calls, rows computed and rows read from a
    column (the deterministic evidence beside wall-clock figures)."""

    filter_calls: int = 0
    score_calls: int = 0
    rows_computed: int = 0
    rows_read: int = 0


_NONE = np.zeros(0, dtype=np.intp)  # no positions (never written)


def _same_positions(a: np.ndarray, b: np.ndarray) -> bool:
    """np.array_equal of two intp position arrays, by their bytes (no ufunc, no reduction)."""
    return len(a) == len(b) and a.tobytes() == b.tobytes()


def _failed_one_by_one(filtering: Any, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> dict[int, Status]:
    """run_filter_nodes_failed's answer for a few nodes without pods nominated to them (the
    columns serve no pass while any pod is nominated), from the per-node Filter: the same
    first failing plugin and wording per node, without a columnar call per plugin."""
    failed: dict[int, Status] = {}
    for k, ni in enumerate(nodes):
        st = filtering.run_filter(state, pod, ni)
        if st.code != _SUCCESS:
            failed[k] = st
    return failed


def _fragments(plugins: Sequence[Any], pod: Pod) -> tuple[tuple[str, Hashable], ...] | None:
    """Each plugin's PLACEMENT signature fragment for `pod`; None when one cannot sign."""
    out = []
    for pl in plugins:
        sign = getattr(pl, "sign_pod", None)
        frag = sign(pod, SignPurpose.PLACEMENT) if sign is not None else None
        if frag is None:
            return None
        out.append((pl.name, frag))
    return tuple(out)


class NodeLocalColumns:
    """The columns of a group cycle, kept for the next group while its world holds
    (`begin_group`), `begin_member` before each member's algorithm run with how many members are
    still to try (the first one filters and scores ahead for them all). The
    scheduler's ordinary cycles keep one too, across cycles (`begin_cycle`): a pod
    of a shape seen before reads its window from the columns, and only the nodes
    whose generation moved since (the ones pods were assumed on, bound or changed)
    are filtered and scored again."""

    def __init__(self) -> None:
        self.counts = NodeLocalCounts()
        self._table: NodeTable | None = None
        self._filters: dict[Hashable, FilterColumn] = {}
        self._scores: dict[Hashable, ScoreColumn] = {}
        # What a shape (and its skipped filters) was found to use: its column, or None
        # when the columns cannot serve it; asked once per shape, not per member.
        self._filter_of: dict[tuple[int, frozenset[str]], FilterColumn | None] = {}
        self._score_of: dict[tuple[int, str], ScoreColumn | None] = {}
        self._shape: int | None = None  # this member's pod shape: its index in _shapes
        self._shapes: list[tuple[Any, ...]] = []
        self._members_left = 1
        self._world: Hashable = None  # what else the plugins read, as of the columns (begin_cycle)
        # Ordinary cycles (begin_cycle): a refresh also takes every node of the view whose
        # value was computed once and whose generation moved since, wherever it is.
        self._sweep = False
        self._fcol: FilterColumn | None = None  # this member's Filter column
        # This member's view, its verdicts, its start and how many nodes from there its
        # pass refreshed (the nodes scored ahead are those that pass), and the last
        # nodes scored ahead.
        self._view: tuple[ColumnarNodes, np.ndarray, int, int] | None = None
        self._ahead: tuple[np.ndarray, ColumnarNodes] | None = None
        self._filtered: ColumnarNodes | None = None  # this member's refresh, when all its nodes passed
        # (this member's view, the positions its pass refreshed and found passing, their rows
        # and generations): _passed_ahead's, shared by the score columns of one member
        self._passing_ahead: tuple[Any, np.ndarray, np.ndarray, np.ndarray] | None = None

    def reset(self) -> None:
        self._table = None
        self._clear()
        self._shape = None
        self._shapes.clear()
        self._view = self._ahead = self._filtered = self._passing_ahead = None

    def _clear(self) -> None:
        for kept in (self._filters, self._scores, self._filter_of, self._score_of):
            kept.clear()

    def begin_member(self, pod: Pod, members_left: int = 0) -> None:
        """`members_left`: this member and the ones after it (0: unknown, every node of
        the view is filtered and scored ahead)."""
        self._shape = self._shape_of(pod)
        self._members_left = members_left
        self._view = self._ahead = self._filtered = self._fcol = self._passing_ahead = None
        self._sweep = False

    def begin_cycle(self, pod: Pod, world: Hashable) -> None:
        """Before an ordinary cycle's algorithm run. `world`: what, besides the pod and
        the nodes (whose generations the columns check), a plugin could read (the
        lister's revision): when it moved, every column is dropped. Each pod refreshes
        only its own window, as its own pass would filter and score: a pod of a shape
        seen once costs what its pass costs, the next ones of the shape read the
        columns."""
        if world != self._world:
            self.reset()
            self._world = world
        self.begin_member(pod, 1)
        self._sweep = True

    def begin_group(self, world: Hashable) -> None:
        """Before a group cycle's first member. `world` as begin_cycle's (None: start
        afresh): while it holds, the columns of the groups before are kept, so a group
        of a shape seen before computes only the nodes whose generation moved since."""
        if world is None or world != self._world:
            self.reset()
        self._world = world

    def _shape_of(self, pod: Pod) -> int:
        """The pod's shape: what of it signatures read (SignPlugin's common part:
        scheduler name, namespace, annotations, owner references, the spec), compared
        by value, less what no node-local plugin reads (its labels and
        spec.schedulingGroup: NodeLocalScorePlugin, FilterReadsPlugin), so the members
        of one template share one, and so do gangs of one template."""
        meta = pod.raw.get("metadata") or {}
        spec = pod.raw.get("spec")
        if spec and "schedulingGroup" in spec:
            spec = {k: v for k, v in spec.items() if k != "schedulingGroup"}
        shape = (pod.scheduler_name, pod.namespace, meta.get("annotations"), meta.get("ownerReferences"), spec)
        for i, known in enumerate(self._shapes):
            if known == shape:
                return i
        if len(self._shapes) >= _MAX_SHAPES:
            self._clear()
            self._shapes.clear()
        self._shapes.append(shape)
        return len(self._shapes) - 1

    def _on(self, nodes: Sequence[NodeInfo]) -> NodeTable | None:
        """The table `nodes` are rows of, the columns kept for it (a new table: none)."""
        if self._shape is None or type(nodes) is not ColumnarNodes or not nodes.table.valid:
            return None
        table = nodes.table
        if table is not self._table:
            self._clear()
            self._table = table
        return table

    def _column(self, store: dict[Hashable, C], plugins: Sequence[Any], pod: Pod,
                new: Callable[[int], C]) -> C | None:
        """The column of these plugins' values for the pod's shape and their signature
        fragments (made by `new` for the table's size), None when one cannot sign."""
        fragments = _fragments(plugins, pod)
        if fragments is None:
            return None
        key = (self._shape, fragments)
        col = store.get(key)
        if col is None:
            col = store[key] = new(len(self._table))  # type: ignore[arg-type]
        return col

    # --- Filter -------------------------------------------------------------------------------

    def pass_filters(self, filtering: Any, state: CycleState, pod: Pod, nodes: list[NodeInfo], start: int,
                     to_find: int) -> WindowPass | None:
        """The member's Filter pass over `nodes` from `start` (the first `to_find`
        passing nodes in rotation order), or None when the columns cannot serve it.
        Stale verdicts are refreshed ahead, in one call, over the nodes the members
        left would reach if every node passed (all nodes when that is unknown), and
        over the rest of the view only when this window reaches past them."""
        table = self._on(nodes)
        if table is None or to_find * (_MIN_WINDOWS if self._sweep else 1) > len(nodes) or to_find >= len(nodes):
            # Every member's window is the whole view (a small domain): the node the
            # member before was assumed on is in each one, so a call per plugin is made
            # anyway and the columns would only add to it.
            return None
        names = filtering.handle.nodes_with_nominated_pods()
        if names is None or names:
            return None
        skip = state.skip_filter_plugins
        found = (self._shape, frozenset(skip or ()))  # the active filters follow from these
        if found in self._filter_of:
            col = self._filter_of[found]
        else:
            col = None
            if filtering.filter_verdicts_node_local(state) and filtering.can_filter_columnar(state):
                # Passing until filtered: the first window is the next to_find nodes, all stale.
                col = self._column(self._filters, [pl for pl in filtering.filter_plugins
                                                   if not (skip and pl.name in skip)], pod,
                                   lambda size: FilterColumn(unset(size), np.ones(size, dtype=np.bool_)))
            self._filter_of[found] = col
        if col is None:
            return None
        assert isinstance(nodes, ColumnarNodes)
        n = len(nodes)
        whole = nodes.rows is table.all_rows
        reach = n if self._members_left <= 0 else min(n, self._members_left * to_find)
        refreshed = 0  # how far from start the verdicts were refreshed (0: not by this member)
        swept = False
        while True:
            passing = col.passing if whole else col.passing[nodes.rows]
            taken, every = window(passing, start, to_find)
            if refreshed >= len(taken) or not self._stale(col.generation, nodes, start, len(taken)):
                break
            # A verdict in the window is stale: refresh ahead for the members left (the
            # first member: every verdict), then twice as far each time the window
            # reaches past (nodes failed) up to the whole view.
            if len(taken) <= reach and refreshed < reach:
                refreshed = reach
            else:
                refreshed = min(n, max(len(taken), 2 * refreshed))
            # With the window's first refresh, the nodes elsewhere whose verdict moved: the
            # pods of the next windows find theirs fresh (one call for several pods' nodes).
            moved = None if swept else self._moved(col, nodes, None)
            swept = True
            self._refresh_filters(filtering, state, pod, col, nodes, start, refreshed, moved)
        self.counts.rows_read += len(taken)
        self._view = (nodes, passing, start, refreshed)
        self._fcol = col
        failed_at = rotated_positions(~taken, start, n).tolist() if not every else []
        rows = nodes.rows
        return WindowPass(take_rotated(nodes, taken, start, every),
                          [nodes[i] for i in failed_at], [col.statuses[int(rows[i])] for i in failed_at])

    def _stale(self, generation: np.ndarray, nodes: ColumnarNodes, start: int, count: int) -> bool:
        """Whether a value of the `count` nodes from `start` (rotation order) is stale."""
        gen = self._table.generation  # type: ignore[union-attr]
        n = len(nodes)
        if nodes.rows is self._table.all_rows and start + count <= n:  # type: ignore[union-attr]
            return differ(generation[start:start + count], gen[start:start + count])
        rows = nodes.rows[rotation(start, count, n)]
        return differ(generation[rows], gen[rows])

    def _moved(self, col: FilterColumn | ScoreColumn, nodes: ColumnarNodes,
               verdicts: FilterColumn | None) -> np.ndarray | None:
        """In an ordinary cycle over the whole table (positions are rows): the positions
        whose value in `col` was computed and is stale now (and, given `verdicts`, whose
        verdict there is fresh and passing); None otherwise. Only the rows the table
        rewrote since the column's last sweep are looked at (every row the first time,
        or when the table's log no longer reaches back): a value the sweep leaves stale
        is computed when a window reads it, as any stale value is."""
        table = self._table
        if not self._sweep or table is None or nodes.rows is not table.all_rows:
            return None
        gen = table.generation
        changed = table.changed_since(col.mark) if col.mark >= 0 else None
        col.mark = table.changes_mark()
        if changed is None:
            stale = (col.generation >= 0) & (col.generation != gen)
            if verdicts is not None:
                stale &= (verdicts.generation == gen) & verdicts.passing
            return stale.nonzero()[0]
        rows = np.array(sorted(set(changed)), dtype=np.intp)
        computed = col.generation[rows]
        stale = (computed >= 0) & (computed != gen[rows])
        if verdicts is not None:
            stale &= (verdicts.generation[rows] == gen[rows]) & verdicts.passing[rows]
        return rows[stale]

    def _refresh_filters(self, filtering: Any, state: CycleState, pod: Pod, col: FilterColumn,
                         nodes: ColumnarNodes, start: int, count: int, moved: np.ndarray | None = None) -> None:
        """Filter, in one call, the nodes among the `count` from `start` (rotation order)
        whose verdict is stale, and those at `moved` (stale, elsewhere in the view)."""
        gen = self._table.generation  # type: ignore[union-attr]
        if col.fresh:
            stale = rotation(start, count, len(nodes))
        elif nodes.rows is self._table.all_rows:  # type: ignore[union-attr]
            # Over the whole table positions are rows: the stale ones by slices.
            stale = stale_in_rotation(col.generation, gen, start, count)
        else:
            positions = rotation(start, count, len(nodes))
            rows = nodes.rows[positions]
            stale = positions[col.generation[rows] != gen[rows]]
        whole_range = len(stale) == count
        if moved is not None and moved.size:
            stale, whole_range = union(stale, moved, len(nodes)), False
        if not stale.size:
            return
        sub = nodes if stale.size == len(nodes) else take(nodes, stale)
        failed = (_failed_one_by_one(filtering, state, pod, sub) if len(sub) <= FEW_NODES
                  else filtering.run_filter_nodes_failed(state, pod, sub))
        # Every node of the range filtered and passing: the nodes to score ahead.
        self._filtered = sub if whole_range and not failed else None
        col.fresh = False
        srows = sub.rows
        col.passing[srows] = True
        for k, st in failed.items():
            r = int(srows[k])
            col.passing[r] = False
            col.statuses[r] = st
        col.generation[srows] = gen[srows]
        self.counts.filter_calls += 1
        self.counts.rows_computed += int(stale.size)

    # --- Score --------------------------------------------------------------------------------

    def raw_scores(self, pl: Any, state: CycleState, pod: Pod, nodes: list[NodeInfo],
                   score: ScoreOne) -> tuple[Sequence[int], Status | None] | None:
        """`pl`'s raw scores of `nodes` (as `score` gives them), or None when the
        columns cannot serve it (they serve only members whose Filter pass they served). When some are stale they are scored ahead, in one
        call, for every node this member's Filter pass refreshed and found passing,
        so the next members of the signature find theirs; if that wider call fails,
        only this window's are scored and its failure is the member's."""
        if self._view is None:  # only for a member whose Filter pass read the columns
            return None
        table = self._on(nodes)
        if table is None:
            return None
        found = (self._shape, pl.name)
        if found in self._score_of:
            col = self._score_of[found]
        else:
            col = None
            if getattr(pl, "score_node_local", False):
                col = self._column(self._scores, (pl,), pod,
                                   lambda size: ScoreColumn(unset(size), np.zeros(size, dtype=np.int64)))
            self._score_of[found] = col
        if col is None:
            return None
        assert isinstance(nodes, ColumnarNodes)
        rows = nodes.rows
        span = nodes.span
        at = rows if span is None else span  # a consecutive window is read by slices, not gathered
        gen = table.generation
        # Nearly every read finds its window fresh: compared first, positions only when some moved.
        stale = _NONE if not differ(col.generation[at], gen[at]) else (col.generation[at] != gen[at]).nonzero()[0]
        if stale.size:
            wider = self._stale_ahead(col, gen)
            if wider is not None and len(wider) > stale.size:
                raw, st = score(pl, state, pod, wider)
                if st is None and self._store(col, wider.rows, raw, gen):
                    stale = (col.generation[rows] != gen[rows]).nonzero()[0]
            if stale.size:  # what the wider call did not cover (or it failed): this window's own
                sub = take(nodes, stale)
                raw, st = score(pl, state, pod, sub)
                if st is not None:
                    return [], st
                if not self._store(col, sub.rows, raw, gen):
                    return None
        self.counts.rows_read += len(rows)
        if col.alike is not None:  # every row read holds a stored value, all the one value
            return col.alike[:len(rows)], None
        # A copy either way: later refreshes write the column, the scores must not move.
        return (col.values[rows] if span is None else col.values[span].copy()), None

    def read_in_range(self, pl: Any) -> bool:
        """Whether every raw score of `pl` the columns can give lies in [MIN_NODE_SCORE,
        MAX_NODE_SCORE] (the last raw_scores for it read its column)."""
        col = self._score_of.get((self._shape, pl.name))
        return col is not None and col.in_range

    def _stale_ahead(self, col: ScoreColumn, gen: np.ndarray) -> ColumnarNodes | None:
        """The nodes this member's pass refreshed and found passing whose raw score in
        `col` is stale, and in an ordinary cycle those elsewhere whose raw score was
        computed and moved and whose fresh verdict passes (None: none of either)."""
        if self._view is None:
            return None
        view, passing, start, refreshed = self._view
        if view.table is not self._table:
            return None
        fcol = self._fcol
        moved = self._moved(col, view, fcol) if fcol else None
        if not refreshed and (moved is None or not moved.size):
            return None
        if col.fresh and self._filtered is not None and len(self._filtered) == refreshed:
            return self._filtered  # the usual first member: every node it filtered passed
        if view.rows is self._table.all_rows:  # type: ignore[union-attr]
            # Over the whole table positions are rows: the stale passing ones by slices.
            wanted = stale_in_rotation(col.generation, gen, start, refreshed, passing)
        else:
            at, rows, now = self._passed_ahead(view, passing, start, refreshed, gen)
            wanted = at[col.generation[rows] != now]
        if moved is not None and moved.size:
            wanted = union(wanted, moved, len(view))
        if self._ahead is not None and _same_positions(self._ahead[0], wanted):
            return self._ahead[1]  # the plugin before found the same stale nodes
        got = view if len(wanted) == len(view) else take(view, wanted)
        self._ahead = (wanted, got)
        return got

    def _passed_ahead(self, view: ColumnarNodes, passing: np.ndarray, start: int, refreshed: int,
                      gen: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The positions this member's pass refreshed and found passing, their rows and
        the rows' generations: the same for each score column this member reads (the
        table does not move during its Score), so gathered once a member, not per plugin."""
        got = self._passing_ahead
        if got is not None and got[0] is self._view:
            return got[1], got[2], got[3]
        at = rotation(start, refreshed, len(view))
        at = at[passing[at]]
        rows = at if view.rows is view.table.all_rows else view.rows[at]  # over the whole table positions are rows
        now = gen[rows]
        self._passing_ahead = (self._view, at, rows, now)
        return at, rows, now

    def _store(self, col: ScoreColumn, rows: np.ndarray, raw: Sequence[int], gen: np.ndarray) -> bool:
        try:
            values = np.asarray(raw, dtype=np.int64)
        except (OverflowError, TypeError, ValueError):
            return False  # out of int64: the ordinary path reports it
        col.store(rows, values, gen[rows])
        self.counts.score_calls += 1
        self.counts.rows_computed += len(rows)
        return True


__all__ = ["NodeLocalColumns", "NodeLocalCounts", "ScoreOne", "WindowPass"]
