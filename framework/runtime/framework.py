"""Framework: runs one profile's plugins at each extension point with upstream's rules
(pkg/scheduler/framework/runtime/framework.go).

A plugin's exception becomes an Error status naming the plugin and the point; a
plugin returning None means Success. Every run_* here returns a Status, never None.
The Framework is composed of parts, one duty each, each given the plugin lists and
objects it works on: `filtering` (ColumnarFiltering: PreFilter, Filter on one node
in filtering.py, Filter over many nodes in columnar.py), `post_filtering`
(PostFiltering), `scoring` (Scoring: PreScore, Score) and `binding` (Binding:
Reserve to PostBind); the queue's points are here. Its run_* methods are one-line
doors to the parts, through its PointTimer (timing.py: NO_TIMING unless the
scheduler times the profile); loops over nodes call the part itself
(`fwk.filtering.run_filter_with_nominated_pods`), a frame fewer per node.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable

from framework.api.objects import Pod
from framework.cache import NodeInfo, PodInfo
from framework.interface import ClusterEventWithHint, CycleState, NodeToStatus, PreFilterResult, QueuedPodInfo, Status
from framework.nominated_columns import NominatedAdds, NominatedColumns
from framework.runtime.binding import Binding
from framework.runtime.columnar import ColumnarFiltering, NominatedCopies
from framework.runtime.common import _OK, ProfileSettings, _error
from framework.runtime.node_local import NodeLocalColumns
from framework.runtime.post_filter import PostFiltering, PostFilterRun
from framework.runtime.scoring import NodeScoreList, Scoring, ScoreTrace
from framework.runtime.timing import (
    NO_TIMING,
    PointTimer,
    no_status,
    status_first,
    status_itself,
    status_of_run,
    status_second,
)

# Wraps one plugin enabled at one extension point (a timing proxy); it is given the
# point's name (a key of EXTENSION_POINTS) and returns what the parts will call.
PluginWrap = Callable[[str, Any], Any]

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


class Framework:
    """The plugins of one profile, ordered per extension point, run by its parts."""

    def __init__(
        self,
        profile_name: str,
        plugins: dict[str, Any],
        points: dict[str, list[str]],
        weights: dict[str, int],
        handle: Any,
        percentage_of_nodes_to_score: int | None = None,
    ) -> None:
        settings = ProfileSettings(profile_name, dict(weights), percentage_of_nodes_to_score)
        self._compose(settings, plugins, {p: list(points.get(p, [])) for p in EXTENSION_POINTS}, handle,
                      NominatedCopies(), NominatedColumns(), NO_TIMING, None)
        # A plugin that runs its own profile's plugins (DefaultPreemption simulates
        # victim removal with them) is handed this Framework.
        for pl in plugins.values():
            set_framework = getattr(pl, "set_framework", None)
            if callable(set_framework):
                set_framework(self)

    def _compose(self, settings: ProfileSettings, plugins: dict[str, Any], points: dict[str, list[str]],
                 handle: Any, copies: NominatedCopies, columns: NominatedColumns, timer: PointTimer,
                 wrap: PluginWrap | None) -> None:
        self.settings = settings
        self.plugins = plugins
        self.points = points
        self.handle = handle
        self.timer = timer

        def objs(point: str) -> list[Any]:
            listed = [plugins[n] for n in points[point]]
            return listed if wrap is None else [wrap(point, pl) for pl in listed]

        # The queue's points run in the queue actor, never timed: not wrapped.
        self.pre_enqueue_plugins = self.plugins_at("preEnqueue")
        # gating plugin -> (the pod-only declarations of the plugins before it, its PreEnqueue)
        self._gate_chains: dict[str, tuple[tuple[Any, ...], Any]] = {}
        qs = self.plugins_at("queueSort")
        self.queue_sort_plugin = qs[0] if qs else None
        self.filtering = ColumnarFiltering(settings, handle, objs("preFilter"), objs("filter"), copies, columns)
        self.post_filtering = PostFiltering(objs("postFilter"))
        self.scoring = Scoring(settings, objs("preScore"), objs("score"))
        self.binding = Binding(objs("reserve"), objs("permit"), objs("preBind"), objs("bind"), objs("postBind"))

    def timed(self, timer: PointTimer, wrap: PluginWrap | None = None) -> "Framework":
        """A sibling of this Framework for the scheduler's metrics: the same plugins,
        handle, settings and nominated-pods caches, its doors run through `timer`,
        and, given `wrap`, each plugin enabled at a cycle's point (PreFilter to
        PostBind) wrapped once, here. The plugins keep this Framework as theirs (set_framework)."""
        sibling = Framework.__new__(Framework)
        f = self.filtering
        sibling._compose(self.settings, self.plugins, self.points, self.handle, f.nominated_copies,
                         f.nominated_columns, timer, wrap)
        return sibling

    # --- settings (the profile's; shared with its parts and timed siblings) ------------------

    @property
    def profile_name(self) -> str:
        return self.settings.profile_name

    @property
    def use_columnar(self) -> bool:
        return self.settings.use_columnar

    @use_columnar.setter
    def use_columnar(self, value: bool) -> None:
        self.settings.use_columnar = value

    @property
    def percentage_of_nodes_to_score(self) -> int | None:
        return self.settings.percentage_of_nodes_to_score

    @property
    def score_weights(self) -> dict[str, int]:
        return self.settings.score_weights

    def plugins_at(self, point: str) -> list[Any]:
        """The plugins enabled at `point` (a key of EXTENSION_POINTS), in order, as
        configured (not a timed sibling's proxies)."""
        return [self.plugins[n] for n in self.points[point]]

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
                st = st.with_plugin(pl.name)
                if not st.is_rejected():
                    return _error(pl.name, f'running PreEnqueue plugin "{pl.name}": {st.message()}')
                return st
        return _OK

    def pre_enqueue_gate_holds(self, pod: Pod, plugin: str) -> bool:
        """Whether run_pre_enqueue(pod) would gate `pod` by `plugin` again, known
        without running the plugins before it: each of them declares that it reads
        only the pod (PodOnlyPreEnqueuePlugin; the pod is as when it passed them),
        and `plugin` itself still refuses it. False when that cannot be told."""
        chain = self._gate_chains.get(plugin)
        if chain is None:
            chain = self._gate_chains[plugin] = self._gate_chain(plugin)
        readers, gate = chain
        if gate is None:
            return False
        for reads_pod_only in readers:
            if reads_pod_only is None or not reads_pod_only(pod):
                return False
        try:
            st = gate(pod)
        except Exception:  # noqa: BLE001 - run_pre_enqueue words it; the caller runs it
            return False
        return st is not None and not st.is_success()

    def _gate_chain(self, plugin: str) -> tuple[tuple[Any, ...], Any]:
        readers = []
        for pl in self.pre_enqueue_plugins:
            if pl.name == plugin:
                return tuple(readers), pl.pre_enqueue
            readers.append(getattr(pl, "pre_enqueue_reads_pod_only", None))
        return (), None

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin name -> the cluster events that may make its rejections go away."""
        out: dict[str, list[ClusterEventWithHint]] = {}
        for name, pl in self.plugins.items():
            fn = getattr(pl, "events_to_register", None)
            if fn is not None:
                out[name] = list(fn())
        return out

    # --- the parts' doors, once per pod (Filter per node is not timed as a whole) ---------------

    def has_filter_plugins(self) -> bool:
        return bool(self.filtering.filter_plugins)

    def run_pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status, set[str]]:
        return self.timer.run("PreFilter", status_second, self.filtering.run_pre_filter, state, pod)

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo,
                                         node_info: NodeInfo) -> Status:
        return self.filtering.run_pre_filter_extension_add_pod(state, pod, pod_info, node_info)

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo,
                                            node_info: NodeInfo) -> Status:
        return self.filtering.run_pre_filter_extension_remove_pod(state, pod, pod_info, node_info)

    def run_filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        return self.filtering.run_filter(state, pod, node_info)

    def run_filter_with_nominated_pods(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        return self.filtering.run_filter_with_nominated_pods(state, pod, node_info)

    def can_filter_columnar(self, state: CycleState) -> bool:
        return self.filtering.can_filter_columnar(state)

    def filter_verdicts_node_local(self, state: CycleState) -> bool:
        return self.filtering.filter_verdicts_node_local(state)

    def pods_read_only_by_fit(self, state: CycleState) -> bool:
        return self.filtering.pods_read_only_by_fit(state)

    def run_filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[Status]:
        return self.filtering.run_filter_nodes(state, pod, nodes)

    def run_filter_nodes_failed(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> dict[int, Status]:
        return self.filtering.run_filter_nodes_failed(state, pod, nodes)

    def nominated_adds(self, pod: Pod) -> NominatedAdds | None | bool:
        return self.filtering.nominated_adds(pod)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filtering.post_filter_plugins)

    def run_post_filter(self, state: CycleState, pod: Pod, filtered: NodeToStatus) -> Awaitable[PostFilterRun]:
        return self.timer.run_async("PostFilter", status_of_run, self.post_filtering.run_post_filter, state, pod,
                                    filtered)

    def has_score_plugins(self) -> bool:
        return bool(self.scoring.score_plugins)

    def run_pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        return self.timer.run("PreScore", status_itself, self.scoring.run_pre_score, state, pod, nodes)

    def run_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo], trace: ScoreTrace | None = None,
                  node_local: NodeLocalColumns | None = None) -> tuple[NodeScoreList, Status]:
        return self.timer.run("Score", status_second, self.scoring.run_score, state, pod, nodes, trace, node_local)

    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return self.timer.run("Reserve", status_itself, self.binding.run_reserve, state, pod, node_name)

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.timer.run("Unreserve", no_status, self.binding.run_unreserve, state, pod, node_name)

    def run_permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, dict[str, float]]:
        return self.timer.run("Permit", status_first, self.binding.run_permit, state, pod, node_name)

    def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Awaitable[Status]:
        return self.timer.run_async("PreBind", status_itself, self.binding.run_pre_bind, state, pod, node_name)

    def binder_carries_writes(self) -> bool:
        """Whether the binding Bind plugin writes PreBind's updates with the binding
        (framework/bind_writes.py)."""
        return self.binding.binder_carries_writes()

    def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Awaitable[Status]:
        return self.timer.run_async("Bind", status_itself, self.binding.run_bind, state, pod, node_name)

    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        self.timer.run("PostBind", no_status, self.binding.run_post_bind, state, pod, node_name)
