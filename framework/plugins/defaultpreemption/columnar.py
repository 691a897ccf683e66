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
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from framework.api.objects import POD_GROUP_LABEL, Pod, PodDisruptionBudget
from framework.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, Resource
from framework.cache import NodeInfo, PodInfo, Snapshot
from framework.interface import Code, CycleState, NodeToStatus, Status
from framework.plugins.defaultpreemption.lowest_priorities import PAD_PRIORITY as _PAD_PRIORITY, rows_of as _rows
from framework.plugins.noderesources.fit import (PRE_FILTER_STATE_KEY, NodeResourcesFit, PreFilterState,
    checked_resources, shortage_statuses)
from framework.preemption import PRIORITY_SHIFT, Candidate, DryRunResult, FastVictims, importance_key, pod_start_time

FIT = NodeResourcesFit.name
_KEPT_PRIORITIES = 8  # preemptor priorities whose lower-pod counts are kept


_VICTIMS_SLOT = Candidate.__dict__["victims"]


class LazyCandidate(Candidate):
    """A Candidate whose victims are built on first read (`victims_of(*args)`): a
    columnar dry run finds up to num_candidates of them, and only the chosen one's
    (or an extender's) are read."""

    __slots__ = ("_victims_of", "_args")

    def __init__(self, name: str, victims_of: Callable[..., list[Pod]], *args: Any) -> None:
        self.name, self.num_pdb_violations, self.members = name, 0, ()
        self._victims_of, self._args = victims_of, args

    @property  # type: ignore[override]
    def victims(self) -> list[Pod]:
        try:
            return _VICTIMS_SLOT.__get__(self, Candidate)
        except AttributeError:
            built = self._victims_of(*self._args)
            _VICTIMS_SLOT.__set__(self, built)
            return built

    @victims.setter
    def victims(self, value: list[Pod]) -> None:
        _VICTIMS_SLOT.__set__(self, value)

    def __eq__(self, other: object) -> bool:  # equal to the eager Candidate it stands for
        if not isinstance(other, Candidate):
            return NotImplemented
        return ((self.name, self.victims, self.num_pdb_violations, self.members)
                == (other.name, other.victims, other.num_pdb_violations, other.members))

    __hash__ = None  # type: ignore[assignment]


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
        self._lower: dict[int, np.ndarray] = {}  # priority -> per row, its pods of lower priority

    def lower_counts(self, priority: int) -> np.ndarray:
        """Per row, how many of its pods have a priority below `priority` (kept per
        priority, patched as rows are refreshed)."""
        got = self._lower.get(priority)
        if got is None:
            if len(self._lower) >= _KEPT_PRIORITIES:
                self._lower.clear()
            got = self._lower[priority] = np.add.reduce(self.priority < priority, axis=1, dtype=np.int64)
        return got

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
        if len(changed):
            at = np.asarray(changed, dtype=np.intp)
            for priority, lower in self._lower.items():
                lower[at] = np.add.reduce(self.priority[at] < priority, axis=1, dtype=np.int64)
        return True

    def _resize(self, rows: int, width: int) -> None:
        self._lower = {}
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
        # One array per row: each pod's priority, start time, cpu, memory, ephemeral storage.
        values = np.array([(p.priority, pod_start_time(p), p.resource.milli_cpu, p.resource.memory,
                            p.resource.ephemeral_storage) for p in (pi.pod for pi in order)],
                          dtype=np.int64).reshape(k, 5).T
        req = values[2:]
        self.priority[r, :k] = values[0]
        self.priority[r, k:] = _PAD_PRIORITY
        self.start[r, :k] = values[1]
        self.requests[:, r, :k] = req
        self.requests[:, r, k:] = 0
        self.sums[:, r, 0] = 0
        sums = req.cumsum(axis=1)
        self.sums[:, r, 1:k + 1] = sums
        self.sums[:, r, k + 1:] = sums[:, -1:] if k else 0
        self.count[r] = k
        self.gang[r] = any(POD_GROUP_LABEL in pi.pod.labels for pi in order)
        self.order[r] = order
        self.generation[r] = ni.generation


class _Numbers:
    """The dry run's numbers at some positions of the potential nodes (`at`; None: all
    of them, in order), once every lower-priority pod is gone and the nominated pods
    of at least the preemptor's priority are added: per position its snapshot row,
    its lower-priority pod count, where they start in the row, the pod count and
    cpu/memory/ephemeral-storage sums left, the allocatable, and whether the pod fits."""

    __slots__ = ("rows", "lower", "start", "kept", "used", "alloc", "alloc_pods", "fit")

    def __init__(self, columns: VictimColumns, table: Any, rows: np.ndarray, lower: np.ndarray,
                 add_nominated: Callable[[np.ndarray, np.ndarray, np.ndarray], None],
                 fits: Callable[..., np.ndarray]) -> None:
        self.rows, self.lower = rows, lower
        self.start = columns.count.take(rows) - lower
        self.used = columns.sums.reshape(3, -1).take(rows * (columns.width + 1) + self.start, axis=1)
        self.kept = self.start.copy()
        add_nominated(rows, self.kept, self.used)
        self.alloc = (table.alloc_cpu.take(rows), table.alloc_mem.take(rows), table.alloc_eph.take(rows))
        self.alloc_pods = table.alloc_pods.take(rows)
        self.fit = fits(self.kept, self.used, self.alloc_pods, self.alloc)


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
    active = [pl for pl in fwk.filtering.filter_plugins if pl.name not in skip]
    if not active or active[-1].name != FIT or not fwk.pods_read_only_by_fit(state):
        return None
    snapshot = fwk.handle.snapshot()
    if not potential or not columns.refresh(snapshot):
        return None
    rows = _rows(snapshot, potential)
    answerable = ~columns.gang.take(rows) & _fit_rejected(statuses, potential,
                                                          _every_node(statuses, snapshot, potential))
    table = snapshot.table
    assert table is not None
    lower_all = columns.lower_counts(pod.priority)
    fits = _fitting(s.request)
    named: list[list[str]] = []

    def names() -> list[str]:  # the potential nodes' names, listed on first need
        if not named:
            named.append(list(map(operator.attrgetter("name"), potential)))
        return named[0]

    def numbers(at: np.ndarray | None) -> _Numbers:
        r = rows if at is None else rows.take(at)

        def add_nominated(r: np.ndarray, kept: np.ndarray, used: np.ndarray) -> None:
            _add_nominated(fwk, pod, r, lambda: names() if at is None else [names()[i] for i in at.tolist()],
                           kept, used)

        return _Numbers(columns, table, r, lower_all.take(r), add_nominated, fits)

    def reprieve(nums: _Numbers, at: np.ndarray) -> np.ndarray:
        """Per position in `at` (of `nums`: rows where the pod fits without the
        victims), which of its lower-priority pods stay victims (column j: the j-th
        in victim order): added back in victim order, each kept that still lets the
        pod fit."""
        width = int(nums.lower[at].max()) if len(at) else 0
        victim = np.zeros((len(at), width), dtype=np.bool_)
        r_start, r_lower = nums.start[at], nums.lower[at]
        r_kept = nums.kept[at]
        r_used = nums.used[:, at]
        r_alloc = tuple(column[at] for column in nums.alloc)
        r_pods = nums.alloc_pods[at]
        requests = columns.requests.reshape(3, -1)
        base = nums.rows[at] * columns.width
        for j in range(width):
            active_j = j < r_lower
            pos = np.minimum(r_start + j, columns.width - 1)
            trial = r_used + requests.take(base + pos, axis=1)
            back = active_j & fits(r_kept + 1, trial, r_pods, r_alloc)
            victim[:, j] = active_j & ~back
            r_kept = r_kept + back
            r_used = np.where(back, trial, r_used)
        return victim

    def failure_statuses(nums: _Numbers, at: np.ndarray) -> list[Status]:
        """Fit's statuses (as the runtime names them) at positions `at` of `nums`,
        where the pod does not fit even without the victims."""
        return _named(shortage_statuses(s.request, nums.kept[at], nums.alloc_pods[at],
                                        tuple((nums.used[k, at], nums.alloc[k][at]) for k in range(3))))

    def victims_at(row: int, first: int, marks: np.ndarray) -> list[Pod]:
        row_order = columns.order[row]
        return [row_order[first + j].pod for j in np.flatnonzero(marks).tolist()]

    def victims_in(row: int, first: int, victim: np.ndarray, k: int) -> list[Pod]:
        return victims_at(row, first, victim[k])

    # The per-node loop's answers, made on its first ask (the whole dry run needs none).
    loop: dict[str, Any] = {}

    def answers() -> dict[str, Any]:
        if not loop:
            nums = numbers(None)
            has_lower = nums.lower > 0
            loop["nums"], loop["at"] = nums, dict(zip(names(), range(len(potential))))
            every = np.flatnonzero(nums.fit & has_lower & answerable & (not pdbs_exist))
            loop["victims"] = dict(zip(every.tolist(), reprieve(nums, every)))
            failing = np.flatnonzero(~nums.fit & answerable & has_lower)
            loop["failed"] = dict(zip(failing.tolist(), failure_statuses(nums, failing)))
            loop["answerable"], loop["lower"] = answerable.tolist(), nums.lower.tolist()
        return loop

    def answer(ni: NodeInfo, pdbs: Sequence[PodDisruptionBudget]) -> "tuple[list[Pod], int] | Status | None":
        got = answers()
        i = got["at"].get(ni.name)
        if i is None or not got["answerable"][i]:
            return None
        if got["lower"][i] == 0:
            return no_victims
        st = got["failed"].get(i)
        if st is not None:
            return st
        marks = got["victims"].get(i)
        if marks is None:
            return None  # the pod fits without the victims, and PDBs decide the order
        nums = got["nums"]
        return victims_at(int(nums.rows[i]), int(nums.start[i]), marks), 0

    def whole(offset: int, num_candidates: int, chosen_only: bool = False) -> DryRunResult | None:
        """The Evaluator's dry-run loop over every node at once, where every node
        has its answer here (no PDBs, so every candidate violates none): the nodes
        in rotation order from `offset` up to the num_candidates-th candidate, their
        statuses in that order, the candidates' victims built from the columns. The
        numbers are made for the first 2 x num_candidates nodes of the rotation, and
        for all of them only when those hold too few candidates. `chosen_only`: the
        caller reads only the chosen candidate (no extender narrows the list), so
        when one is chosen it is the list."""
        if pdbs_exist or num_candidates < 1 or not answerable.all():
            return None
        n = len(potential)
        rotation = np.arange(offset, offset + n, dtype=np.intp)
        rotation[rotation >= n] -= n
        window = min(n, 2 * num_candidates)
        nums = numbers(rotation[:window])
        success = nums.fit & (nums.lower > 0)
        found = np.cumsum(success)
        if found[-1] < num_candidates and window < n:
            nums = numbers(rotation)
            success = nums.fit & (nums.lower > 0)
            found = np.cumsum(success)
        end = int(np.searchsorted(found, num_candidates)) + 1 if found[-1] >= num_candidates else len(found)
        hit = success[:end]
        found_at = np.flatnonzero(hit)
        victim = reprieve(nums, found_at)
        if len(found_at) and not victim.any(axis=1).all():
            return None  # a node where every victim comes back: the loop's Error
        missed = np.flatnonzero(~hit)

        def node_statuses() -> NodeToStatus:  # worded only if read: a dry run with candidates needs none
            no_lower = nums.lower[missed] == 0
            worded = iter(failure_statuses(nums, missed[~no_lower]))
            every = names()
            return NodeToStatus({every[i]: no_victims if none else next(worded)
                                 for i, none in zip(rotation[missed].tolist(), no_lower.tolist())})

        def candidate(k: int, i: int) -> Candidate:
            return LazyCandidate(potential[int(rotation[i])].name, victims_in, int(nums.rows[i]),
                                 int(nums.start[i]), victim, k)

        if choose and len(found_at) > 1:
            pick = _choice(nums, found_at, victim)
            chosen = candidate(pick, int(found_at[pick]))
            if chosen_only:
                return DryRunResult([chosen], node_statuses, chosen=chosen)
            candidates = [candidate(k, i) for k, i in enumerate(found_at.tolist())]
            candidates[pick] = chosen
            return DryRunResult(candidates, node_statuses, chosen=chosen)
        return DryRunResult([candidate(k, i) for k, i in enumerate(found_at.tolist())], node_statuses)

    def _choice(nums: _Numbers, found_at: np.ndarray, marks: np.ndarray) -> int:
        """pickOneNodeForPreemption's default order over the candidates at these
        positions of `nums`, from the columns: (no PDB violations anywhere) the
        lowest highest-priority victim, the smallest shifted priority sum, the
        fewest victims, the latest earliest start among the highest-priority
        victims; ties to the first candidate."""
        at_row = nums.rows[found_at][:, None]
        pos = np.minimum(nums.start[found_at][:, None] + np.arange(marks.shape[1]), columns.width - 1)
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
    (`whole_dry_run(offset, num_candidates, chosen_only)`: a DryRunResult, or None
    where the Evaluator's loop must run)."""

    __slots__ = ("_answer", "whole_dry_run")

    def __init__(self, answer: FastVictims, whole: Callable[[int, int, bool], DryRunResult | None]) -> None:
        self._answer = answer
        self.whole_dry_run = whole

    def __call__(self, ni: NodeInfo, pdbs: Sequence[PodDisruptionBudget]) -> "tuple[list[Pod], int] | Status | None":
        return self._answer(ni, pdbs)


def _every_node(statuses: NodeToStatus, snapshot: Snapshot,
                potential: Sequence[NodeInfo]) -> dict[int, tuple[Status, int]] | None:
    """Each distinct Status with its number of nodes, when the statuses say it without
    a pass (an incremental failure's known counts), `potential` is every node of the
    snapshot and each holds a status of its own (its keys are the snapshot's nodes)."""
    known = getattr(statuses, "known_counts", None)
    if known is None or potential is not snapshot.node_info_list or len(statuses) != len(potential):
        return None
    return known


def _is_fit_rejection(st: Status) -> bool:
    return st.plugin == FIT and st.code == Code.Unschedulable


def _fit_rejected(statuses: NodeToStatus, nodes: Sequence[NodeInfo],
                  every_node: dict[int, tuple[Status, int]] | None) -> np.ndarray:
    """Per node, whether its status this cycle is NodeResourcesFit's Unschedulable.
    The filter pass shares one Status among the nodes failing alike, so each
    distinct Status is judged once and the nodes are mapped to it in C; when
    `every_node` (each distinct Status of `statuses`, which hold one for every
    node of `nodes`) says they all are, no node is looked at."""
    if every_node and all(_is_fit_rejection(st) for st, _ in every_node.values()):
        return np.ones(len(nodes), dtype=np.bool_)
    names = list(map(operator.attrgetter("name"), nodes))
    try:
        held = operator.itemgetter(*names)(statuses.statuses) if len(names) > 1 else (statuses.statuses[names[0]],)
    except KeyError:  # a node without its own status reads the default one
        held = tuple(statuses.get(name) for name in names)
    distinct = dict(zip(map(id, held), held))
    verdict = {key: _is_fit_rejection(st) for key, st in distinct.items()}
    return np.fromiter(map(verdict.__getitem__, map(id, held)), dtype=np.bool_, count=len(names))


_COLUMNS = (CPU, MEMORY, EPHEMERAL_STORAGE)  # the order of `used` and `alloc` below


def _fitting(request: Resource) -> Callable[[np.ndarray, Sequence[np.ndarray], np.ndarray, Sequence[np.ndarray]], np.ndarray]:
    """NodeResourcesFit's verdict for nodes with `count` pods that request `used` of
    cpu, memory and ephemeral storage: where its shortage() answers 0, that is room
    for one more pod and each checked resource's request within what is left (the
    comparisons shortage() makes before it words any reason, which a verdict does
    not need: the reprieve asks it once per victim position, and mostly hears No)."""
    checks = checked_resources(request)
    picked = tuple(zip([_COLUMNS.index(name) for name in checks.names], checks.wants))

    def fits(count: np.ndarray, used: Sequence[np.ndarray], alloc_pods: np.ndarray,
             alloc: Sequence[np.ndarray]) -> np.ndarray:
        ok = count + 1 <= alloc_pods
        for k, want in picked:
            ok &= want <= alloc[k] - used[k]
        return ok

    return fits


def _add_nominated(fwk: Any, pod: Pod, rows: np.ndarray, names_of: Callable[[], list[str]], count: np.ndarray,
                   used: np.ndarray) -> None:
    """Pods nominated to these nodes (snapshot `rows`, node names `names_of()`, asked
    only where needed) with at least `pod`'s priority (not `pod`) join the node's
    numbers: from the Framework's nominated columns, or node by node where it has none."""
    adds = fwk.nominated_adds(pod) if hasattr(fwk, "nominated_adds") else False
    if adds is None:
        return
    if adds is not False:
        count += adds.count[rows]
        for k, column in enumerate((adds.cpu, adds.mem, adds.eph)):
            used[k] += column[rows]
        return
    handle = fwk.handle
    names = names_of()
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
    """NodeResourcesFit's statuses as the runtime names them (shortage_status names them
    already); nodes failing alike share one Status, which is named once."""
    named = {key: st.with_plugin(FIT) for key, st in dict(zip(map(id, statuses), statuses)).items()}
    return list(map(named.__getitem__, map(id, statuses)))
