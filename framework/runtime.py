"""Framework: runs one profile's plugins at each extension point with upstream's rules
(pkg/scheduler/framework/runtime/framework.go).

A plugin's exception becomes an Error status naming the plugin and the point; a
plugin returning None means Success. Every run_* here returns a Status, never None.
"""
from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np

from framework.api.objects import Pod
from framework.cache import NodeInfo, PodInfo, next_generation
from framework.node_table import ColumnarNodes
from framework.interface import (
    MAX_NODE_SCORE,
    MAX_PERMIT_TIMEOUT_SECONDS,
    MIN_NODE_SCORE,
    ClusterEventWithHint,
    Code,
    CycleState,
    NodePluginScores,
    NodeScore,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfo,
    Status,
)

EXTENSION_POINTS = (
    "preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
    "reserve", "permit", "preBind", "bind", "postBind",
)

# The method each extension point calls; a plugin enabled at a point must have it.
POINT_METHODS = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "less",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
}

_OK = Status()

# In-tree Filter plugins whose verdict on a node reads only the node (its spec,
# labels, taints), never the pods on it; each rejects with UnschedulableAndUnresolvable.
POD_INDEPENDENT_FILTERS = frozenset({"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"})
RESOURCE_FILTER = "NodeResourcesFit"


def _ok() -> Status:
    return Status()


def _with_pods_for_fit(node_info: NodeInfo, added: list[PodInfo]) -> NodeInfo:
    """`node_info` with `added` running on it, as far as the filters
    pods_read_only_by_fit allows read it: its pods and their summed requests
    (NodeResourcesFit); the node itself (the POD_INDEPENDENT_FILTERS). Cheaper than
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


def _error(plugin: str, text: str) -> Status:
    return Status(Code.Error, text, plugin=plugin)


def go_duration(seconds: float) -> str:
    """Seconds as Go's time.Duration prints them ("10s", "1m0s", "1.5s", "500ms")."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _trim(ns / size) + unit
    h, rem = divmod(ns, 3600 * 10**9)
    m, rem = divmod(rem, 60 * 10**9)
    s = _trim(rem / 1e9) + "s"
    if h:
        return f"{sign}{h}h{m}m{s}"
    if m:
        return f"{sign}{m}m{s}"
    return sign + s


def has_columnar_form(obj: Any, method: str) -> bool:
    """Whether `obj` itself offers the columnar form `method`: on its class or set on
    the instance. A proxy that forwards unknown attributes to a plugin (per-call
    timing) does not count unless it sets the method itself, so it keeps getting
    the per-node calls it wraps."""
    return getattr(type(obj), method, None) is not None or method in getattr(obj, "__dict__", ())


def _int_column(scores: Sequence[int]) -> np.ndarray:
    if isinstance(scores, np.ndarray):
        return scores.astype(np.int64, copy=False)
    try:
        return np.array(scores, dtype=np.int64)
    except OverflowError:
        # Far out of range: keep Python ints so the range check reports the score.
        return np.array(scores, dtype=object)


class NodeScoreList(Sequence[NodePluginScores]):
    """run_score's result: per node (in the order scored) the weighted score of each
    plugin and the total, as upstream's []NodePluginScores. The numbers live in
    numpy columns (`totals`, one column per plugin); the NodePluginScores are made
    only when someone reads an entry, and from then on they are the truth (a
    caller may add to an entry's total_score, as upstream's extenders do)."""

    __slots__ = ("nodes", "names", "columns", "_totals", "_entries")

    def __init__(self, nodes: Sequence[NodeInfo], names: list[str], columns: list[np.ndarray],
                 totals: np.ndarray) -> None:
        self.nodes = nodes
        self.names = names
        self.columns = columns
        self._totals = totals
        self._entries: list[NodePluginScores] | None = None

    @property
    def totals(self) -> np.ndarray:
        """The total per node (an int64 column)."""
        if self._entries is None:
            return self._totals
        return np.array([e.total_score for e in self._entries], dtype=np.int64)

    @classmethod
    def empty(cls) -> "NodeScoreList":
        return cls([], [], [], np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.nodes)

    def name_at(self, i: int) -> str:
        return self.nodes[i].name

    def entries(self) -> list[NodePluginScores]:
        if self._entries is None:
            columns = [c.tolist() for c in self.columns]
            self._entries = [NodePluginScores(ni.name, [(n, c[i]) for n, c in zip(self.names, columns)], total)
                             for i, (ni, total) in enumerate(zip(self.nodes, self._totals.tolist()))]
        return self._entries

    def __getitem__(self, i):  # noqa: ANN001, ANN204 - int or slice, as a list
        return self.entries()[i]

    def __iter__(self) -> Iterator[NodePluginScores]:
        return iter(self.entries())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __repr__(self) -> str:
        return f"NodeScoreList({list(self)!r})"


def _take(nodes: list[NodeInfo], positions: list[int]) -> list[NodeInfo]:
    """The nodes at these positions; a ColumnarNodes keeps its rows."""
    if isinstance(nodes, ColumnarNodes):
        return nodes.take(positions)
    return [nodes[i] for i in positions]


def _trim(x: float) -> str:
    text = f"{x:.9f}".rstrip("0").rstrip(".")
    return text or "0"


class Framework:
    """The plugins of one profile, ordered per extension point."""

    def __init__(
        self,
        profile_name: str,
        plugins: dict[str, Any],
        points: dict[str, list[str]],
        weights: dict[str, int],
        handle: Any,
        percentage_of_nodes_to_score: int | None = None,
    ) -> None:
        self.profile_name = profile_name
        self.plugins = plugins
        self.handle = handle
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.points = {p: list(points.get(p, [])) for p in EXTENSION_POINTS}
        self.score_weights = dict(weights)
        # Plugins' columnar forms (filter_nodes / score_nodes) are used when present;
        # False forces the per-node calls (the equivalence test compares both).
        self.use_columnar = True

        def objs(point: str) -> list[Any]:
            return [plugins[n] for n in self.points[point]]

        self.pre_enqueue_plugins = objs("preEnqueue")
        qs = objs("queueSort")
        self.queue_sort_plugin = qs[0] if qs else None
        self.pre_filter_plugins = objs("preFilter")
        # Looked up once: preemption's dry runs call the extensions per pod per node.
        self._pre_filter_extensions = [
            (pl, ext) for pl in self.pre_filter_plugins
            if (ext := (pl.pre_filter_extensions() if hasattr(pl, "pre_filter_extensions") else None)) is not None
        ]
        self.filter_plugins = objs("filter")
        self.post_filter_plugins = objs("postFilter")
        self.pre_score_plugins = objs("preScore")
        self.score_plugins = objs("score")
        self.reserve_plugins = objs("reserve")
        self.permit_plugins = objs("permit")
        self.pre_bind_plugins = objs("preBind")
        self.bind_plugins = objs("bind")
        self.post_bind_plugins = objs("postBind")
        # A plugin that runs its own profile's plugins (DefaultPreemption simulates
        # victim removal with them) is handed this Framework.
        for pl in plugins.values():
            set_framework = getattr(pl, "set_framework", None)
            if callable(set_framework):
                set_framework(self)

    # --- queue ------------------------------------------------------------------------------

    def queue_sort_less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        assert self.queue_sort_plugin is not None
        return self.queue_sort_plugin.less(a, b)

    def queue_sort_name(self) -> str:
        return self.queue_sort_plugin.name if self.queue_sort_plugin is not None else ""

    def run_pre_enqueue(self, pod: Pod) -> Status:
        for pl in self.pre_enqueue_plugins:
            try:
                st = pl.pre_enqueue(pod)
            except Exception as e:  # noqa: BLE001 - a plugin bug becomes an Error status
                return _error(pl.name, f'running PreEnqueue plugin "{pl.name}": {e}')
            if st is not None and not st.is_success():
                st.plugin = pl.name
                if not st.is_rejected():
                    return _error(pl.name, f'running PreEnqueue plugin "{pl.name}": {st.message()}')
                return st
        return _ok()

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin name -> the cluster events that may make its rejections go away."""
        out: dict[str, list[ClusterEventWithHint]] = {}
        for name, pl in self.plugins.items():
            fn = getattr(pl, "events_to_register", None)
            if fn is not None:
                out[name] = list(fn())
        return out

    # --- filtering --------------------------------------------------------------------------

    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    def run_pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status, set[str]]:
        """Runs every PreFilter plugin. Returns (merged result, status, plugins that
        narrowed the nodes or rejected). A Skip marks the plugin's Filter as skipped."""
        result: PreFilterResult | None = None
        with_nodes: list[str] = []
        nodes = self.handle.snapshot().list()
        state.skip_filter_plugins = set()
        for pl in self.pre_filter_plugins:
            try:
                r, st = pl.pre_filter(state, pod, nodes)
            except Exception as e:  # noqa: BLE001
                return None, _error(pl.name, f'running PreFilter plugin "{pl.name}": {e}'), set()
            if st is not None and st.code == Code.Skip:
                state.skip_filter_plugins.add(pl.name)
                continue
            if st is not None and not st.is_success():
                st.plugin = pl.name
                if st.is_rejected():
                    return None, st, {pl.name}
                return None, _error(pl.name, f'running PreFilter plugin "{pl.name}": {st.message()}'), set()
            if r is not None and not r.all_nodes():
                with_nodes.append(pl.name)
            result = r if result is None else result.merge(r)
            if result is not None and not result.all_nodes() and not result.node_names:
                if len(with_nodes) == 1:
                    msg = f"node(s) didn't satisfy plugin {with_nodes[0]}"
                else:
                    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(with_nodes)}] simultaneously"
                return result, Status(Code.UnschedulableAndUnresolvable, msg), set(with_nodes)
        return result, _ok(), set(with_nodes)

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        return self._run_extension(state, pod, pod_info, node_info, "add_pod", "AddPod")

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        return self._run_extension(state, pod, pod_info, node_info, "remove_pod", "RemovePod")

    def _run_extension(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo, method: str, label: str) -> Status:
        for pl, ext in self._pre_filter_extensions:
            if pl.name in state.skip_filter_plugins:
                continue
            try:
                st = getattr(ext, method)(state, pod, pod_info, node_info)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running {label} on PreFilter plugin "{pl.name}": {e}')
            if st is not None and not st.is_success():
                return _error(pl.name, f'running {label} on PreFilter plugin "{pl.name}": {st.message()}')
        return _ok()

    def run_filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        skip = state.skip_filter_plugins
        for pl in self.filter_plugins:
            if skip and pl.name in skip:
                continue
            try:
                st = pl.filter(state, pod, node_info)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running "{pl.name}" filter plugin: {e}')
            if st is not None and st.code != Code.Success:
                if not st.is_rejected():
                    return _error(pl.name, f'running "{pl.name}" filter plugin: {st.message()}')
                st.plugin = pl.name
                return st
        return _OK

    def can_filter_columnar(self, state: CycleState) -> bool:
        """Whether every Filter plugin that runs for this pod has a columnar form
        (`filter_nodes`)."""
        if not self.use_columnar:
            return False
        skip = state.skip_filter_plugins
        return all(has_columnar_form(pl, "filter_nodes")
                   for pl in self.filter_plugins if not (skip and pl.name in skip))

    def pods_read_only_by_fit(self, state: CycleState) -> bool:
        """Whether, for this cycle's pod, NodeResourcesFit is the only active Filter
        plugin that reads the pods on a node (every other active one is an in-tree
        POD_INDEPENDENT_FILTERS plugin) and no PreFilter extension (AddPod/RemovePod)
        runs. Then a node that passes the filters also passes them with fewer pods."""
        skip = state.skip_filter_plugins or ()
        if any(pl.name not in skip for pl, _ in self._pre_filter_extensions):
            return False
        for pl in self.filter_plugins:
            if pl.name in skip:
                continue
            if pl.name not in POD_INDEPENDENT_FILTERS and pl.name != RESOURCE_FILTER:
                return False
            if not type(self.plugins.get(pl.name)).__module__.startswith("framework.plugins."):
                return False
        return True

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
                        if st.code != Code.Success:
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
        NodeResourcesFit reads pods, so a node failing at a plugin before it keeps
        that status; otherwise Fit, run with the nominated pods of at least this
        pod's priority, decides where it fails, and the columnar verdict stands where
        it passes."""
        skip = state.skip_filter_plugins or ()
        active = [pl for pl in self.filter_plugins if pl.name not in skip]
        fit_at = next((k for k, pl in enumerate(active) if pl.name == RESOURCE_FILTER), None)
        if fit_at is None:
            return  # no active filter reads pods: the columnar verdicts are final
        fit = active[fit_at]
        before_fit = {pl.name for pl in active[:fit_at]}
        nominated = self.handle.nominated_pods_for_node
        for i in positions:
            st = failed.get(i)
            if st is not None and st.plugin in before_fit:
                continue
            ni = nodes[i]
            added = [pi for pi in nominated(ni.name) if pi.pod.priority >= pod.priority and pi.pod.uid != pod.uid]
            if not added:
                continue
            fst = self._filter_one(fit, state, pod, _with_pods_for_fit(ni, added))
            if fst is not _OK:
                failed[i] = fst

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
        if raw.count(None) == len(raw):
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
                v = worded[id(st)] = _OK if st.code == Code.Success else self._filter_verdict(pl.name, st)
            out.append(v)
        return out

    def _filter_one(self, pl: Any, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        try:
            st = pl.filter(state, pod, node_info)
        except Exception as e:  # noqa: BLE001
            return _error(pl.name, f'running "{pl.name}" filter plugin: {e}')
        return _OK if st is None or st.code == Code.Success else self._filter_verdict(pl.name, st)

    @staticmethod
    def _filter_verdict(name: str, st: Status) -> Status:
        if not st.is_rejected():
            return _error(name, f'running "{name}" filter plugin: {st.message()}')
        st.plugin = name
        return st

    def run_filter_with_nominated_pods(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        """Filter twice when pods of equal or higher priority are nominated to this
        node: once as if they were running there, once without them; both must pass."""
        nominated = self.handle.nominated_pods_for_node(node_info.name)
        if not nominated:
            return self.run_filter(state, pod, node_info)
        added = False
        state2 = state
        info2 = node_info
        for pi in nominated:
            p = pi.pod
            if p.priority >= pod.priority and p.uid != pod.uid:
                if not added:
                    state2 = state.clone()
                    info2 = node_info.clone()
                    added = True
                info2.add_pod(pi)
                st = self.run_pre_filter_extension_add_pod(state2, pod, pi, info2)
                if not st.is_success():
                    return st
        status = self.run_filter(state2, pod, info2)
        if not status.is_success() and not status.is_rejected():
            return status
        if added and status.is_success():
            status = self.run_filter(state, pod, node_info)
        return status

    def _filter_with_nominated_pods_once(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        """run_filter_with_nominated_pods where pods_read_only_by_fit holds: no
        extension changes the state, and a node passing with the nominated pods
        passes without them, so the run with them added decides alone."""
        added = [pi for pi in self.handle.nominated_pods_for_node(node_info.name)
                 if pi.pod.priority >= pod.priority and pi.pod.uid != pod.uid]
        if not added:
            return self.run_filter(state, pod, node_info)
        return self.run_filter(state, pod, _with_pods_for_fit(node_info, added))

    def run_post_filter(self, state: CycleState, pod: Pod, filtered: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        outcome = _PostFilterOutcome()
        for pl in self.post_filter_plugins:
            try:
                r, st = pl.post_filter(state, pod, filtered)
            except Exception as e:  # noqa: BLE001
                return None, _error(pl.name, f'running PostFilter plugin "{pl.name}": {e}')
            done = outcome.add(pl.name, r, st)
            if done is not None:
                return done
        return outcome.final()

    async def run_post_filter_with_extenders(self, state: CycleState, pod: Pod, filtered: NodeToStatus,
                                             call_extenders: Any) -> tuple[PostFilterResult | None, Status]:
        """run_post_filter where a plugin with `post_filter_with_extenders` (DefaultPreemption)
        lets preempting extenders narrow its candidates (an awaited call)."""
        outcome = _PostFilterOutcome()
        for pl in self.post_filter_plugins:
            try:
                with_ext = getattr(pl, "post_filter_with_extenders", None)
                if with_ext is not None:
                    r, st = await with_ext(state, pod, filtered, call_extenders)
                else:
                    r, st = pl.post_filter(state, pod, filtered)
            except Exception as e:  # noqa: BLE001
                return None, _error(pl.name, f'running PostFilter plugin "{pl.name}": {e}')
            done = outcome.add(pl.name, r, st)
            if done is not None:
                return done
        return outcome.final()

    # --- scoring ------------------------------------------------------------------------------

    def run_pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        state.skip_score_plugins = set()
        for pl in self.pre_score_plugins:
            try:
                st = pl.pre_score(state, pod, nodes)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running PreScore plugin "{pl.name}": {e}')
            if st is None or st.is_success():
                continue
            if st.code == Code.Skip:
                state.skip_score_plugins.add(pl.name)
                continue
            return _error(pl.name, f'running PreScore plugin "{pl.name}": {st.message()}')
        return _ok()

    def run_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple["NodeScoreList", Status]:
        """Score, normalize, check the range and weigh; totals per node in node order.
        A plugin with a columnar form (`score_nodes`) scores all nodes in one call. The
        totals are a numpy column (`.totals`); the per-node NodePluginScores are
        made only when someone reads them."""
        names: list[str] = []
        columns: list[np.ndarray] = []  # weighted scores, one column per plugin
        skip = state.skip_score_plugins
        totals = np.zeros(len(nodes), dtype=np.int64)
        for pl in self.score_plugins:
            name = pl.name
            if name in skip:
                continue
            raw, st = self._score_plugin(pl, state, pod, nodes)
            if st is not None:
                return NodeScoreList.empty(), st
            ext_fn = getattr(pl, "score_extensions", None)
            ext = ext_fn() if ext_fn is not None else None
            if ext is not None:
                try:
                    raw, st = self._normalize(ext, state, pod, nodes, raw)
                except Exception as e:  # noqa: BLE001
                    return NodeScoreList.empty(), _error(name, f'running Normalize on Score plugins: plugin "{name}" failed with: {e}')
                if st is not None and not st.is_success():
                    return NodeScoreList.empty(), _error(name, f'running Normalize on Score plugins: plugin "{name}" failed with: {st.message()}')
            column = _int_column(raw)
            if len(column) and (column.min() < MIN_NODE_SCORE or column.max() > MAX_NODE_SCORE):
                bad = int(column[(column > MAX_NODE_SCORE) | (column < MIN_NODE_SCORE)][0])
                return NodeScoreList.empty(), _error(
                    name,
                    f'running Score plugins: plugin "{name}" failed with: plugin "{name}" returns an invalid '
                    f"score {bad}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                )
            weight = self.score_weights.get(name, 1)
            if weight != 1:
                column = column * weight
            names.append(name)
            columns.append(column)
            totals += column
        return NodeScoreList(nodes, names, columns, totals), _ok()

    def _normalize(self, ext: Any, state: CycleState, pod: Pod, nodes: list[NodeInfo],
                   raw: list[int]) -> tuple[list[int], Status | None]:
        """NormalizeScore on the raw scores: the columnar form on plain integers when
        the extension has one, else upstream's form on NodeScores."""
        if isinstance(raw, np.ndarray):
            raw = raw.tolist()
        if self.use_columnar and has_columnar_form(ext, "normalize_scores"):
            out, st = ext.normalize_scores(state, pod, nodes, raw)
            if len(out) != len(raw):
                raise ValueError(f"returned {len(out)} scores for {len(raw)} nodes")
            return list(out), st
        scores = [NodeScore(ni.name, s) for ni, s in zip(nodes, raw)]
        st = ext.normalize_score(state, pod, scores)
        return [ns.score for ns in scores], st

    def _score_plugin(self, pl: Any, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[list[int], Status | None]:
        """One plugin's raw scores in node order, or the Error that ends the cycle."""
        name = pl.name
        if self.use_columnar and has_columnar_form(pl, "score_nodes"):
            try:
                raw, st = pl.score_nodes(state, pod, nodes)
            except Exception as e:  # noqa: BLE001
                return [], _error(name, f'running Score plugins: plugin "{name}" failed with: {e}')
            if st is not None and not st.is_success():
                return [], _error(name, f'running Score plugins: plugin "{name}" failed with: {st.message()}')
            if len(raw) != len(nodes):
                return [], _error(name, f'running Score plugins: plugin "{name}" returned {len(raw)} scores for {len(nodes)} nodes')
            return (raw if isinstance(raw, np.ndarray) else list(raw)), None
        raw = []
        score = pl.score
        for ni in nodes:
            try:
                s, st = score(state, pod, ni)
            except Exception as e:  # noqa: BLE001
                return [], _error(name, f'running Score plugins: plugin "{name}" failed with: {e}')
            if st is not None and not st.is_success():
                return [], _error(name, f'running Score plugins: plugin "{name}" failed with: {st.message()}')
            raw.append(s)
        return raw, None

    # --- reserve / permit / bind ---------------------------------------------------------------

    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for pl in self.reserve_plugins:
            try:
                st = pl.reserve(state, pod, node_name)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running Reserve plugin "{pl.name}": {e}')
            if st is not None and not st.is_success():
                if st.is_rejected():
                    st.plugin = pl.name
                    return st
                return _error(pl.name, f'running Reserve plugin "{pl.name}": {st.message()}')
        return _ok()

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for pl in reversed(self.reserve_plugins):
            try:
                pl.unreserve(state, pod, node_name)
            except Exception:  # noqa: BLE001 - Unreserve must not fail; the others still run
                continue

    def run_permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, dict[str, float]]:
        waits: dict[str, float] = {}
        for pl in self.permit_plugins:
            try:
                st, timeout = pl.permit(state, pod, node_name)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running Permit plugin "{pl.name}": {e}'), {}
            if st is None or st.is_success():
                continue
            if st.is_rejected():
                st.plugin = pl.name
                return st, {}
            if st.is_wait():
                waits[pl.name] = min(float(timeout), float(MAX_PERMIT_TIMEOUT_SECONDS))
                continue
            return _error(pl.name, f'running Permit plugin "{pl.name}": {st.message()}'), {}
        if waits:
            return Status(Code.Wait, f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"'), waits
        return _ok(), {}

    async def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for pl in self.pre_bind_plugins:
            try:
                st = await pl.pre_bind(state, pod, node_name)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running PreBind plugin "{pl.name}": {e}')
            if st is not None and not st.is_success():
                if st.is_rejected():
                    st.plugin = pl.name
                    return st
                return _error(pl.name, f'running PreBind plugin "{pl.name}": {st.message()}')
        return _ok()

    async def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        if not self.bind_plugins:
            return Status(Code.Skip)
        status = Status(Code.Skip)
        for pl in self.bind_plugins:
            try:
                st = await pl.bind(state, pod, node_name)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running Bind plugin "{pl.name}": {e}')
            status = st if st is not None else Status()
            if status.code == Code.Skip:
                continue
            if not status.is_success():
                if status.is_rejected():
                    status.plugin = pl.name
                    return status
                return _error(pl.name, f'running Bind plugin "{pl.name}": {status.message()}')
            return status
        return status

    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for pl in self.post_bind_plugins:
            try:
                pl.post_bind(state, pod, node_name)
            except Exception:  # noqa: BLE001 - PostBind is informational
                continue


class _PostFilterOutcome:
    """Folds PostFilter plugins' answers as upstream's RunPostFilterPlugins: the first
    Success or UnschedulableAndUnresolvable (or an Error) ends the run; otherwise
    the reasons add up and the last nomination given (even an empty one) stands."""

    __slots__ = ("reasons", "rejector", "result")

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.rejector = ""
        self.result: PostFilterResult | None = None

    def add(self, plugin: str, r: PostFilterResult | None, st: Status | None
            ) -> tuple[PostFilterResult | None, Status] | None:
        st = st if st is not None else Status()
        if st.is_success():
            return r, st
        if st.code == Code.UnschedulableAndUnresolvable:
            st.plugin = plugin
            return r, st
        if not st.is_rejected():
            return None, Status(Code.Error, *st.reasons, plugin=plugin)
        if r is not None:
            # Even an empty nomination counts: it clears the pod's stale one.
            self.result = r
        self.reasons.extend(st.reasons)
        if not self.rejector:
            self.rejector = plugin
        return None

    def final(self) -> tuple[PostFilterResult | None, Status]:
        return self.result, Status(Code.Unschedulable, *self.reasons, plugin=self.rejector)
