"""The dry run in columns, for preemptors whose only pod-reading filter is NodeResourcesFit.

SelectVictimsOnNode (default_preemption.select_victims_on_node) copies a node,
removes every lower-priority pod, runs the Filter plugins, then adds the pods back
one by one (most important first), running them after each. When NodeResourcesFit
is the only active Filter plugin that reads the pods on a node and no PreFilter
extension runs (Framework.pods_read_only_by_fit), those runs are comparisons of a
pod count and cpu/memory/ephemeral-storage sums, so they can be made for every
candidate node at once:

- `VictimColumns` keeps, per snapshot row, the node's pods in victim order (most
  important first: upstream's MoreImportantPod, ties in the node's pod order) with
  prefix sums of their requests. Rows are refreshed only when their NodeInfo's
  generation moved, so an unchanged cluster costs nothing between preemptors.
- For one preemptor, "remove every lower-priority pod and check the fit" is one
  numpy step over all candidate rows: the lower-priority pods are a suffix of the
  row, their sums a difference of prefix sums. Pods nominated to the node with at
  least the preemptor's priority join the sums, as RunFilterPluginsWithNominatedPods
  adds them (its second pass without them cannot fail where the first passed).
- The reprieve (add the candidates back in order, keep each one that still lets
  the pod fit) then runs on the rows that fit, one numpy step per position.

Answers are exactly what the simulation returns on that node, and the Evaluator's
loop (candidate limits, offset, node order, early stop) is unchanged. A row takes
the simulation instead (answer None) when the columns cannot say it exactly: its
status this cycle is not NodeResourcesFit's Unschedulable (another filter failed it,
or the statuses were given by hand), it holds a gang member (whose eligibility
depends on its group), or PodDisruptionBudgets exist and the pod fits there
(violators go back first, in an order per node). The whole path is off when the
pod asks for an extended resource, the snapshot has no usable table, the profile
forces the per-node path (Framework.use_columnar), or the plugin's victim policy was
changed.
"""
from __future__ import annotations

import operator
from functools import partial
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from framework.api.objects import POD_GROUP_LABEL, Pod, PodDisruptionBudget
from framework.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, Resource
from framework.cache import NodeInfo, PodInfo, Snapshot
from framework.interface import Code, CycleState, NodeToStatus, Status
from framework.node_table import ColumnarNodes
from framework.plugins.noderesources.fit import (PRE_FILTER_STATE_KEY, NodeResourcesFit, PreFilterState,
    checked_resources, shortage, shortage_statuses)
from framework.preemption import (PRIORITY_SHIFT, Candidate, DryRunResult, FastVictims, LazyCandidate, importance_key,
    pod_start_time)

FIT = NodeResourcesFit.name
_PAD_PRIORITY = np.iinfo(np.int64).max  # never lower than a preemptor's priority


class VictimColumns:
    """Per snapshot row: pods in victim order, their priorities and requests, and
    prefix sums of the requests (row r, position k: the first k pods)."""

    def __init__(self) -> None:
        self.generation = np.zeros(0, dtype=np.int64)
        self.count = np.zeros(0, dtype=np.int64)
        self.gang = np.zeros(0, dtype=np.bool_)
        self.width = 0
        self.priority = np.zeros((0, 0), dtype=np.int64)
        self.start = np.zeros((0, 0), dtype=np.int64)  # pod_start_time, for choosing the node
        self.requests = np.zeros((3, 0, 0), dtype=np.int64)  # cpu, memory, ephemeral storage
        self.sums = np.zeros((3, 0, 1), dtype=np.int64)
        self.order: list[tuple[PodInfo, ...]] = []

    def refresh(self, snapshot: Snapshot) -> bool:
        """Bring the rows in step with the snapshot; False when its table is unusable."""
        table = snapshot.table
        nodes = snapshot.node_info_list
        if table is None or not table.valid or len(table) != len(nodes):
            return False
        n = len(nodes)
        if len(self.generation) != n:
            self._resize(n, self.width)
        changed: Sequence[int] = np.flatnonzero(table.generation != self.generation).tolist()
        widest = max((len(nodes[r].pods) for r in changed), default=0)
        if widest > self.width:  # every row is rebuilt at the new width
            self._resize(n, max(widest, 2 * self.width, 8))
            changed = range(n)
        for r in changed:
            self._set_row(r, nodes[r])
        return True

    def _resize(self, rows: int, width: int) -> None:
        self.generation = np.full(rows, -1, dtype=np.int64)
        self.count = np.zeros(rows, dtype=np.int64)
        self.gang = np.zeros(rows, dtype=np.bool_)
        self.width = width
        self.priority = np.full((rows, width), _PAD_PRIORITY, dtype=np.int64)
        self.start = np.zeros((rows, width), dtype=np.int64)
        self.requests = np.zeros((3, rows, width), dtype=np.int64)
        self.sums = np.zeros((3, rows, width + 1), dtype=np.int64)
        self.order = [()] * rows

    def _set_row(self, r: int, ni: NodeInfo) -> None:
        order = tuple(sorted(ni.pods, key=lambda pi: importance_key(pi.pod)))
        k = len(order)
        req = np.array([(p.resource.milli_cpu, p.resource.memory, p.resource.ephemeral_storage)
                        for p in (pi.pod for pi in order)], dtype=np.int64).reshape(k, 3).T
        self.priority[r, :k] = [pi.pod.priority for pi in order]
        self.priority[r, k:] = _PAD_PRIORITY
        self.start[r, :k] = [pod_start_time(pi.pod) for pi in order]
        self.requests[:, r, :k] = req
        self.requests[:, r, k:] = 0
        self.sums[:, r, 0] = 0
        np.cumsum(req, axis=1, out=self.sums[:, r, 1:k + 1])
        self.sums[:, r, k + 1:] = self.sums[:, r, k:k + 1]
        self.count[r] = k
        self.gang[r] = any(POD_GROUP_LABEL in pi.pod.labels for pi in order)
        self.order[r] = order
        self.generation[r] = ni.generation


def lowest_priority(columns: VictimColumns, snapshot: Snapshot, potential: Sequence[NodeInfo]) -> int:
    """The lowest priority of a pod on the `potential` nodes (columns refreshed to
    `snapshot`); the padding's (never lower than a preemptor's) when they hold none."""
    if not columns.width:
        return int(_PAD_PRIORITY)
    if len(potential) == len(columns.generation):  # every node: no row gather
        return int(columns.priority.min())
    return int(columns.priority[_rows(snapshot, potential)].min())


def _rows(snapshot: Snapshot, nodes: Sequence[NodeInfo]) -> np.ndarray:
    """The snapshot rows of `nodes`: carried by a ColumnarNodes of the snapshot's
    table, else looked up by name."""
    if isinstance(nodes, ColumnarNodes) and nodes.table is snapshot.table:
        return nodes.rows
    index = snapshot.index
    return np.fromiter((index[ni.name] for ni in nodes), dtype=np.intp, count=len(nodes))


def columnar_victims(columns: VictimColumns, fwk: Any, state: CycleState, pod: Pod, statuses: NodeToStatus,
                     potential: Sequence[NodeInfo], pdbs_exist: bool, no_victims: Status,
                     choose: bool = False) -> FastVictims | None:
    """The Evaluator's per-node answers for this preemptor, computed for all
    `potential` nodes at once; None when this cycle must simulate every node.
    `choose`: the policy orders candidates by upstream's default criteria, so the
    whole dry run also names the node they choose (DryRunResult.chosen)."""
    s = state.get(PRE_FILTER_STATE_KEY)
    if fwk is None or not fwk.use_columnar or not isinstance(s, PreFilterState) or s.request.scalar:
        return None
    skip = state.skip_filter_plugins or ()
    active = [pl for pl in fwk.filter_plugins if pl.name not in skip]
    if not active or active[-1].name != FIT or not fwk.pods_read_only_by_fit(state):
        return None
    snapshot = fwk.handle.snapshot()
    if not potential or not columns.refresh(snapshot):
        return None
    names = list(map(operator.attrgetter("name"), potential))
    rows = _rows(snapshot, potential)
    answerable = ~columns.gang[rows] & _fit_rejected(statuses, names)
    table = snapshot.table
    assert table is not None
    # The node's numbers once every lower-priority pod is gone and the nominated pods
    # of at least the preemptor's priority are added.
    lower = (columns.priority[rows] < pod.priority).sum(axis=1)
    count = columns.count[rows]
    start = count - lower
    used = [columns.sums[j, rows, start] for j in range(3)]
    kept = start.copy()
    _add_nominated(fwk, pod, rows, names, kept, used)
    alloc = (table.alloc_cpu[rows], table.alloc_mem[rows], table.alloc_eph[rows])
    alloc_pods = table.alloc_pods[rows]
    fits = _fitting(s.request)
    fit = fits(kept, used, alloc_pods, alloc)
    # Reprieve, in victim order, on the rows where the pod fits without the victims.
    reprieve = np.flatnonzero(fit & (lower > 0) & answerable & (not pdbs_exist))
    victim = np.zeros((len(reprieve), int(lower[reprieve].max()) if len(reprieve) else 0), dtype=np.bool_)
    if len(reprieve):
        r_rows, r_start, r_lower = rows[reprieve], start[reprieve], lower[reprieve]
        r_kept = kept[reprieve].copy()
        r_used = [u[reprieve].copy() for u in used]
        r_alloc = [a[reprieve] for a in alloc]
        r_pods = alloc_pods[reprieve]
        for j in range(victim.shape[1]):
            active_j = j < r_lower
            pos = np.minimum(r_start + j, columns.width - 1)
            trial = [u + columns.requests[k, r_rows, pos] for k, u in enumerate(r_used)]
            back = active_j & fits(r_kept + 1, trial, r_pods, r_alloc)
            victim[:, j] = active_j & ~back
            r_kept += back
            for k in range(3):
                r_used[k] = np.where(back, trial[k], r_used[k])
    failing = np.flatnonzero(~fit & answerable & (lower > 0))
    failed = dict(zip(failing.tolist(), _named(shortage_statuses(
        s.request, kept[failing], alloc_pods[failing], tuple((u[failing], a[failing]) for u, a in zip(used, alloc))))))
    victims_of = {i: n for n, i in enumerate(reprieve.tolist())}
    order, answerable_l, lower_l, start_l = columns.order, answerable.tolist(), lower.tolist(), start.tolist()
    rows_l, victim_l = rows.tolist(), _as_bits(victim)

    at: dict[str, int] = {}  # name -> position, made on the loop's first ask (the whole dry run needs none)

    def answer(ni: NodeInfo, pdbs: Sequence[PodDisruptionBudget]) -> "tuple[list[Pod], int] | Status | None":
        if not at:
            at.update(zip(names, range(len(names))))
        i = at.get(ni.name)
        if i is None or not answerable_l[i]:
            return None
        if lower_l[i] == 0:
            return no_victims
        st = failed.get(i)
        if st is not None:
            return st
        n = victims_of.get(i)
        if n is None:
            return None  # the pod fits without the victims, and PDBs decide the order
        return victims_at(i, n), 0

    def victims_at(i: int, n: int) -> list[Pod]:
        row_order, first, out = order[rows_l[i]], start_l[i], victim_l[n]
        return [row_order[first + j].pod for j in range(lower_l[i]) if out >> j & 1]

    def whole(offset: int, num_candidates: int) -> DryRunResult | None:
        """The Evaluator's dry-run loop over every node at once, where every node
        has its answer here (no PDBs, so every candidate violates none): the nodes
        in rotation order from `offset` up to the num_candidates-th candidate, their
        statuses in that order, the candidates' victims built from the columns."""
        if pdbs_exist or num_candidates < 1 or not answerable.all():
            return None
        n = len(names)
        success = np.zeros(n, dtype=np.bool_)
        success[reprieve] = True
        if len(reprieve) and not victim.any(axis=1).all():
            return None  # a node where every victim comes back: the loop's Error
        rotation = np.arange(offset, offset + n, dtype=np.intp)
        rotation[rotation >= n] -= n
        found = np.cumsum(success[rotation])
        end = int(np.searchsorted(found, num_candidates)) + 1 if found[-1] >= num_candidates else n
        node_statuses = NodeToStatus({names[i]: no_victims if lower_l[i] == 0 else failed[i]
                                 for i in rotation[:end][~success[rotation[:end]]].tolist()})
        found_at = rotation[:end][success[rotation[:end]]]
        candidates: list[Candidate] = [LazyCandidate(names[i], partial(victims_at, i, victims_of[i]))
                                       for i in found_at.tolist()]
        chosen = candidates[_choice(found_at)] if choose and len(candidates) > 1 else None
        return DryRunResult(candidates, node_statuses, chosen=chosen)

    def _choice(found_at: np.ndarray) -> int:
        """pickOneNodeForPreemption's default order over the candidates at these
        positions, from the columns: (no PDB violations anywhere) the lowest
        highest-priority victim, the smallest shifted priority sum, the fewest
        victims, the latest earliest start among the highest-priority victims;
        ties to the first candidate."""
        marks = victim[np.fromiter((victims_of[i] for i in found_at.tolist()), dtype=np.intp, count=len(found_at))]
        at_row = rows[found_at][:, None]
        pos = np.minimum(start[found_at][:, None] + np.arange(marks.shape[1]), columns.width - 1)
        priority = columns.priority[at_row, pos]
        top = np.where(marks, priority, np.iinfo(np.int64).min).max(axis=1)
        total = np.where(marks, priority + PRIORITY_SHIFT, 0).sum(axis=1)
        earliest = np.where(marks & (priority == top[:, None]), columns.start[at_row, pos],
                            np.iinfo(np.int64).max).min(axis=1)
        order = np.lexsort((np.arange(len(found_at)), -earliest, marks.sum(axis=1), total, top))
        return int(order[0])

    return ColumnarVictims(answer, whole)


class ColumnarVictims:
    """FastVictims for one cycle (`__call__`, per node) with the whole dry run
    (`whole_dry_run(offset, num_candidates)`: a DryRunResult, or None where the
    Evaluator's loop must run)."""

    __slots__ = ("_answer", "whole_dry_run")

    def __init__(self, answer: FastVictims, whole: Callable[[int, int], DryRunResult | None]) -> None:
        self._answer = answer
        self.whole_dry_run = whole

    def __call__(self, ni: NodeInfo, pdbs: Sequence[PodDisruptionBudget]) -> "tuple[list[Pod], int] | Status | None":
        return self._answer(ni, pdbs)


def _fit_rejected(statuses: NodeToStatus, names: list[str]) -> np.ndarray:
    """Per node, whether its status this cycle is NodeResourcesFit's Unschedulable.
    The filter pass shares one Status among the nodes failing alike, so each
    distinct Status is judged once and the nodes are mapped to it in C."""
    try:
        held = operator.itemgetter(*names)(statuses.statuses) if len(names) > 1 else (statuses.statuses[names[0]],)
    except KeyError:  # a node without its own status reads the default one
        held = tuple(statuses.get(name) for name in names)
    distinct = dict(zip(map(id, held), held))
    verdict = {key: st.plugin == FIT and st.code == Code.Unschedulable for key, st in distinct.items()}
    return np.fromiter(map(verdict.__getitem__, map(id, held)), dtype=np.bool_, count=len(names))


def _as_bits(mask: np.ndarray) -> list[int]:
    """Each row of a boolean matrix as an int (bit j: column j): one small int per
    row instead of a list (rows are read only for the few candidates collected)."""
    if mask.shape[1] == 0:
        return [0] * mask.shape[0]
    if mask.shape[1] <= 62:
        return (mask.astype(np.int64) << np.arange(mask.shape[1], dtype=np.int64)).sum(axis=1).tolist()
    return [sum(1 << j for j, out in enumerate(row) if out) for row in mask.tolist()]


_COLUMNS = (CPU, MEMORY, EPHEMERAL_STORAGE)  # the order of `used` and `alloc` below


def _fitting(request: Resource) -> Callable[[np.ndarray, Sequence[np.ndarray], np.ndarray, Sequence[np.ndarray]], np.ndarray]:
    """NodeResourcesFit's verdict (its shortage() on columns) for nodes with `count`
    pods that request `used` of cpu, memory and ephemeral storage."""
    checks = checked_resources(request)
    picked = [_COLUMNS.index(name) for name in checks.names]

    def fits(count: np.ndarray, used: Sequence[np.ndarray], alloc_pods: np.ndarray,
             alloc: Sequence[np.ndarray]) -> np.ndarray:
        mask = shortage(checks.wants, count, alloc_pods, [alloc[k] for k in picked], [used[k] for k in picked])
        # shortage() answers the plain 0 when no node is short.
        return mask == 0 if isinstance(mask, np.ndarray) else np.ones(len(count), dtype=np.bool_)

    return fits


def _add_nominated(fwk: Any, pod: Pod, rows: np.ndarray, names: list[str], count: np.ndarray,
                   used: list[np.ndarray]) -> None:
    """Pods nominated to these nodes (snapshot `rows`, node `names`) with at least
    `pod`'s priority (not `pod`) join the node's numbers: from the Framework's
    nominated columns, or node by node where it has none."""
    adds = fwk.nominated_adds(pod) if hasattr(fwk, "nominated_adds") else False
    if adds is None:
        return
    if adds is not False:
        count += adds.count[rows]
        for k, column in enumerate((adds.cpu, adds.mem, adds.eph)):
            used[k] += column[rows]
        return
    handle = fwk.handle
    at = dict(zip(names, range(len(names))))
    nominated: Iterable[str] | None = handle.nodes_with_nominated_pods()
    for name in at if nominated is None else nominated:
        i = at.get(name)
        if i is None:
            continue
        for pi in handle.nominated_pods_for_node(name):
            p = pi.pod
            if p.priority >= pod.priority and p.uid != pod.uid:
                r: Resource = p.resource
                count[i] += 1
                used[0][i] += r.milli_cpu
                used[1][i] += r.memory
                used[2][i] += r.ephemeral_storage


def _named(statuses: list[Status]) -> list[Status]:
    """NodeResourcesFit's statuses as the runtime names them (shortage_status names them already)."""
    return [st.with_plugin(FIT) for st in statuses]
