"""Framework: runs one profile's plugins at each extension point with upstream's rules
(pkg/scheduler/framework/runtime/framework.go).

A plugin's exception becomes an Error status naming the plugin and the point; a
plugin returning None means Success. Every run_* here returns a Status, never None.
The points are run by duty, one mixin each: filtering.py (PreFilter, Filter on one
node), columnar.py (Filter over many nodes at once), post_filter.py, scoring.py
(PreScore, Score) and binding.py (Reserve to PostBind); the queue's points are here.
"""
from __future__ import annotations

from typing import Any

from framework.api.objects import Pod
from framework.interface import ClusterEventWithHint, QueuedPodInfo, Status
from framework.runtime.binding import Binding
from framework.nominated_columns import NominatedColumns
from framework.runtime.columnar import ColumnarFiltering, NominatedCopies
from framework.runtime.post_filter import PostFiltering
from framework.runtime.scoring import Scoring
from framework.runtime.common import _error, _ok

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


class Framework(ColumnarFiltering, PostFiltering, Scoring, Binding):
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
        self._nominated_copies = NominatedCopies()
        self._nominated_columns = NominatedColumns()

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
                st = st.with_plugin(pl.name)
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
