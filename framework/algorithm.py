"""The scheduling algorithm for one pod (upstream's schedule_one.go: schedulePod,
findNodesThatFitPod, findNodesThatPassFilters, prioritizeNodes, selectHost)."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Sequence

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
from framework.interface import Code, CycleState, NodePluginScores, NodeScore, NodeToStatus, Status
from framework.runtime import Framework, NodeScoreList, run_unsuspended

if TYPE_CHECKING:
    from framework.batching import Batching

NO_NODES_AVAILABLE = "no nodes available to schedule pods"
EMPTY_PRIORITY_LIST = "empty priorityList"
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


class NoNodesAvailable(Exception):
    def __init__(self) -> None:
        super().__init__(NO_NODES_AVAILABLE)


class SchedulingError(Exception):
    """A plugin answered Error: the attempt failed for a reason other than fit."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


@dataclass
class Diagnosis:
    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_plugin_status(self, status: Status) -> None:
        if not status.plugin:
            return
        if status.code == Code.Pending:
            self.pending_plugins.add(status.plugin)
        elif status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)


class KeptNodeToStatus(NodeToStatus):
    """A finished attempt's NodeToStatus, kept small: the node names of each
    distinct Status in one tuple (a 5,000-entry dict is ~150 KB; filter statuses
    are shared among nodes, so a few tuples hold the same). Reads as the map it
    was made from (get, items, len, nodes_for_code, absent); lookups are linear,
    for reports, not hot paths. It is not changed after the attempt."""

    __slots__ = ("groups", "count")

    def __init__(self, m: NodeToStatus) -> None:
        by_status: dict[int, tuple[Status, list[str]]] = {}
        for name, st in m.items():
            by_status.setdefault(id(st), (st, []))[1].append(name)
        self.groups: tuple[tuple[Status, tuple[str, ...]], ...] = tuple(
            (st, tuple(names)) for st, names in by_status.values())
        self.count = len(m)
        self.absent = m.absent
        self.statuses = None  # type: ignore[assignment]

    def get(self, node_name: str) -> Status:
        for st, names in self.groups:
            if node_name in names:
                return st
        return self.absent

    def set(self, node_name: str, status: Status) -> None:
        raise TypeError("a finished attempt's node statuses do not change")

    def __len__(self) -> int:
        return self.count

    def items(self) -> Iterable[tuple[str, Status]]:
        return [(name, st) for st, names in self.groups for name in names]

    def nodes_for_code(self, all_nodes: Sequence[NodeInfo], code: Code) -> list[NodeInfo]:
        named = {name for st, names in self.groups if st.code == code for name in names}
        listed = {name for _, names in self.groups for name in names}
        if self.absent.code == code:
            return [n for n in all_nodes if n.name in named or n.name not in listed]
        return [n for n in all_nodes if n.name in named]


class FitError(Exception):
    """No node fits the pod; message() is upstream's FitError.Error()."""

    def __init__(self, pod: Pod, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def message(self) -> str:
        msg = f"0/{self.num_all_nodes} nodes are available:"
        d = self.diagnosis
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            counts: dict[str, int] = {}
            for _, st in d.node_to_status.items():
                for r in st.reasons:
                    counts[r] = counts.get(r, 0) + 1
            explicit = len(d.node_to_status)
            if explicit < self.num_all_nodes:
                for r in d.node_to_status.absent.reasons:
                    counts[r] = counts.get(r, 0) + self.num_all_nodes - explicit
            parts = sorted(f"{n} {r}" for r, n in counts.items())
            if parts:
                msg += f" {', '.join(parts)}."
        if d.post_filter_msg:
            # No period of our own: PostFilter messages end as they please (upstream).
            msg += f" {d.post_filter_msg}"
        return msg

    def __str__(self) -> str:
        return self.message()


@dataclass
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int


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


def select_host(scores: Sequence[NodePluginScores], rand: random.Random) -> str:
    """The highest total wins; a tie is broken uniformly at random with one draw
    from `rand` (upstream samples the tied nodes one by one, with the same
    distribution)."""
    if not len(scores):
        raise ValueError(EMPTY_PRIORITY_LIST)
    if isinstance(scores, NodeScoreList):
        totals = scores.totals
        name_at = scores.name_at
    else:
        totals = np.array([s.total_score for s in scores], dtype=object)
        name_at = lambda i: scores[i].name  # noqa: E731
    ties = np.flatnonzero(totals == totals.max())
    if len(ties) == 1:
        return name_at(int(ties[0]))
    return name_at(int(ties[rand.randrange(len(ties))]))


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
        diagnosis, nodes = self.pre_filter(fwk, state, pod, snapshot)
        if nodes is None:
            return [], diagnosis
        hint = self.batching.hint(fwk, state, pod, snapshot) if self.batching is not None else ""
        nominated = self.nominated_node(pod, snapshot, hint)  # the nominated node first, else the hint
        if nominated is not None:
            feasible = self.find_nodes_that_pass_filters(fwk, state, pod, diagnosis, [nominated], use_rotation=False)
            try:
                feasible = await find_nodes_that_pass_extenders(extenders, pod, feasible, diagnosis.node_to_status)
            except ExtenderError:
                feasible = []  # upstream logs the nominated node's error and tries every node
            if feasible:
                return feasible, diagnosis
        feasible = self.filter_nodes(fwk, state, pod, snapshot, diagnosis, nodes)
        after = await find_nodes_that_pass_extenders(extenders, pod, feasible, diagnosis.node_to_status)
        if len(after) != len(feasible):
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        return after, diagnosis

    def pre_filter(self, fwk: Framework, state: CycleState, pod: Pod,
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

    @staticmethod
    def nominated_node(pod: Pod, snapshot: Snapshot, hint: str = "") -> NodeInfo | None:
        name = pod.nominated_node_name or hint
        return snapshot.get(name) if name else None

    def filter_nodes(self, fwk: Framework, state: CycleState, pod: Pod, snapshot: Snapshot,
                     diagnosis: Diagnosis, nodes: list[NodeInfo]) -> list[NodeInfo]:
        """The Filter pass from the rotating start index; advances the index."""
        feasible = self.find_nodes_that_pass_filters(fwk, state, pod, diagnosis, nodes)
        processed = len(feasible) + len(diagnosis.node_to_status)
        self.next_start_node_index = (self.next_start_node_index + processed) % snapshot.num_nodes()
        return feasible

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
        to_find = num_feasible_nodes_to_find(self._percentage(fwk), n)
        if not self.extender_filters and not (fwk.has_score_plugins() or self.extender_prioritizers):
            to_find = 1
        start = self.next_start_node_index if use_rotation else 0
        if not fwk.has_filter_plugins():
            return [nodes[(start + i) % n] for i in range(min(to_find, n))]
        if fwk.can_filter_columnar(state):
            return _pass_filters_in_chunks(fwk, state, pod, diagnosis, nodes, start, to_find)
        feasible: list[NodeInfo] = []
        for i in range(n):
            ni = nodes[(start + i) % n]
            st = fwk.run_filter_with_nominated_pods(state, pod, ni)
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

    def prioritize_nodes(self, fwk: Framework, state: CycleState, pod: Pod, nodes: list[NodeInfo],
                         with_extenders: bool = False) -> list[NodePluginScores]:
        """PreScore and Score; `with_extenders`: extenders will add their scores, so
        the plugins run even when there are none (upstream's prioritizeNodes)."""
        if not fwk.has_score_plugins() and not with_extenders:
            return [NodePluginScores(n.name, total_score=1) for n in nodes]
        st = fwk.run_pre_score(state, pod, nodes)
        if not st.is_success():
            raise SchedulingError(st)
        scores, st = fwk.run_score(state, pod, nodes)
        if not st.is_success():
            raise SchedulingError(st)
        return scores


# Smallest chunk filtered at once: when few feasible nodes are still wanted, a
# few nodes more are filtered and the verdicts past the last one needed dropped.
MIN_FILTER_CHUNK = 16


def _pass_filters_in_chunks(fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                            nodes: list[NodeInfo], start: int, to_find: int) -> list[NodeInfo]:
    """The node-by-node search with the plugins' columnar forms: nodes are filtered in
    rotation order a chunk at a time (about as many as are still wanted) and the
    verdicts are taken in order up to the to_find-th feasible node, so the
    feasible set, the statuses recorded, the first Error and the processed count
    are the ones the per-node loop gives. Filters are pure, so the verdicts
    dropped past that node change nothing. A ColumnarNodes is cut into ColumnarNodes
    chunks, so columnar forms see the rows of their nodes."""
    n = len(nodes)
    feasible: list[NodeInfo] = []
    set_status = diagnosis.node_to_status.set
    rows = nodes.rows if isinstance(nodes, ColumnarNodes) else None
    feasible_rows: list[np.ndarray] = []
    done = 0
    while done < n:
        size = min(max(to_find - len(feasible), MIN_FILTER_CHUNK), n - done)
        first = (start + done) % n
        chunk = nodes[first:first + size]
        if len(chunk) < size:
            chunk += nodes[:size - len(chunk)]
        if rows is not None:
            positions = np.arange(first, first + size, dtype=np.intp)
            positions[positions >= n] -= n
            chunk = ColumnarNodes(chunk, rows[positions], nodes.table)
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
            last: Status | None = None
            for i in failed_at:
                if i >= end:
                    break
                st = failed[i]
                if st.code == Code.Error:
                    raise SchedulingError(st)
                set_status(chunk[i].name, st)
                if st is not last:  # nodes may share one Status; adding it again changes nothing
                    diagnosis.add_plugin_status(st)
                    last = st
            keep = np.flatnonzero(passing[:end])
            feasible.extend([chunk[i] for i in keep.tolist()])
        if rows is not None:
            feasible_rows.append(chunk.rows[keep])
        if len(feasible) >= to_find:
            break
    if rows is None:
        return feasible
    return ColumnarNodes(feasible, np.concatenate(feasible_rows) if feasible_rows else rows[:0], nodes.table)


def _go_list(items: list[str]) -> str:
    return "[" + " ".join(items) + "]"


def explain(fwk: Framework, pod: Pod, snapshot: Snapshot, rand: random.Random | None = None) -> dict[str, Any]:
    """Dry-run `pod`: every node's verdict from each Filter plugin and each Score
    plugin's raw, normalized and weighted score, plus the node the algorithm picks.
    Nothing is assumed or changed."""
    state = CycleState()
    fwk.handle.set_snapshot(snapshot)
    pre_res, pre_st, _ = fwk.run_pre_filter(state, pod)
    nodes_out: dict[str, dict[str, Any]] = {}
    feasible: list[NodeInfo] = []
    for ni in snapshot.list():
        entry: dict[str, Any] = {"filters": {}, "feasible": False}
        if not pre_st.is_success():
            entry["preFilter"] = {"plugin": pre_st.plugin, **pre_st.to_dict()}
        elif pre_res is not None and not pre_res.all_nodes() and ni.name not in (pre_res.node_names or set()):
            entry["preFilter"] = {"code": "UnschedulableAndUnresolvable", "reasons": ["excluded by PreFilter result"]}
        else:
            ok = True
            for pl in fwk.filter_plugins:
                if pl.name in state.skip_filter_plugins:
                    entry["filters"][pl.name] = {"code": "Skip"}
                    continue
                try:
                    st = pl.filter(state, pod, ni)
                except Exception as e:  # noqa: BLE001
                    st = Status(Code.Error, str(e))
                st = st if st is not None else Status()
                entry["filters"][pl.name] = st.to_dict()
                if not st.is_success():
                    ok = False
                    break
            entry["feasible"] = ok
            if ok:
                feasible.append(ni)
        nodes_out[ni.name] = entry
    result: dict[str, Any] = {"pod": pod.key, "profile": fwk.profile_name, "nodes": nodes_out, "chosen": None}
    if not pre_st.is_success():
        result["preFilter"] = {"plugin": pre_st.plugin, **pre_st.to_dict()}
    if feasible:
        _explain_scores(fwk, state, pod, feasible, nodes_out)
        totals = [NodePluginScores(n.name, total_score=nodes_out[n.name].get("totalScore", 1)) for n in feasible]
        result["chosen"] = select_host(totals, rand or random.Random())
    else:
        diag = Diagnosis()
        for name, entry in nodes_out.items():
            for plugin, st in entry["filters"].items():
                if st["code"] not in ("Success", "Skip"):
                    diag.node_to_status.set(name, Status(Code[st["code"]], *st.get("reasons", []), plugin=plugin))
        if not pre_st.is_success():
            diag.pre_filter_msg = pre_st.message()
        result["message"] = FitError(pod, snapshot.num_nodes(), diag).message() if snapshot.num_nodes() else NO_NODES_AVAILABLE
    return result


def _explain_scores(fwk: Framework, state: CycleState, pod: Pod, nodes: list[NodeInfo], out: dict[str, dict[str, Any]]) -> None:
    st = fwk.run_pre_score(state, pod, nodes)
    if not st.is_success():
        for n in nodes:
            out[n.name]["scoreError"] = st.message()
        return
    totals = {n.name: 0 for n in nodes}
    for n in nodes:
        out[n.name]["scores"] = {}
    for pl in fwk.score_plugins:
        if pl.name in state.skip_score_plugins:
            continue
        raw = []
        for n in nodes:
            s, sst = pl.score(state, pod, n)
            raw.append(NodeScore(n.name, s))
        normalized = [NodeScore(x.name, x.score) for x in raw]
        ext = pl.score_extensions() if hasattr(pl, "score_extensions") else None
        if ext is not None:
            ext.normalize_score(state, pod, normalized)
        weight = fwk.score_weights.get(pl.name, 1)
        for r, nm in zip(raw, normalized):
            out[r.name]["scores"][pl.name] = {"raw": r.score, "normalized": nm.score, "weight": weight, "weighted": nm.score * weight}
            totals[r.name] += nm.score * weight
    for name, total in totals.items():
        out[name]["totalScore"] = total if fwk.score_plugins else 1
