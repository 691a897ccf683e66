"""PreFilter, its AddPod/RemovePod extensions and Filter on one node (with the pods
nominated to it), as upstream's RunPreFilterPlugins, RunFilterPlugins and
RunFilterPluginsWithNominatedPods. ColumnarFiltering (columnar.py) adds the
columnar path; the Framework holds one (framework.runtime.framework)."""
from __future__ import annotations

from typing import Any

from framework.api.objects import Pod
from framework.cache import NodeInfo, PodInfo
from framework.interface import Code, CycleState, PreFilterResult, Status
from framework.nominated_columns import NominatedColumns
from framework.runtime.common import _OK, _SKIP, _SUCCESS, ProfileSettings, _error


class Filtering:
    """The filtering extension points of one profile's Framework: its PreFilter and
    Filter plugins, the handle they filter through (snapshot, nominated pods) and
    what the columnar path keeps across cycles (`nominated_copies`,
    `nominated_columns`; shared by the profile's timed siblings)."""

    def __init__(self, settings: ProfileSettings, handle: Any, pre_filter_plugins: list[Any],
                 filter_plugins: list[Any], nominated_copies: Any, nominated_columns: NominatedColumns) -> None:
        self.settings = settings
        self.handle = handle
        self.pre_filter_plugins = pre_filter_plugins
        self.filter_plugins = filter_plugins
        self.nominated_copies = nominated_copies
        self.nominated_columns = nominated_columns
        # Looked up once: preemption's dry runs call the extensions per pod per node.
        self.pre_filter_extensions: list[tuple[Any, Any]] = [
            (pl, ext) for pl in pre_filter_plugins
            if (ext := (pl.pre_filter_extensions() if hasattr(pl, "pre_filter_extensions") else None)) is not None
        ]

    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def run_pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status, set[str]]:
        """Runs every PreFilter plugin. Returns (merged result, status, plugins that
        narrowed the nodes or rejected). A Skip marks the plugin's Filter as skipped."""
        result: PreFilterResult | None = None
        with_nodes: list[str] = []
        nodes = self.handle.snapshot().list()
        skipped: set[str] = set()
        state.skip_filter_plugins = skipped
        for pl in self.pre_filter_plugins:
            try:
                r, st = pl.pre_filter(state, pod, nodes)
            except Exception as e:  # noqa: BLE001
                return None, _error(pl.name, f'running PreFilter plugin "{pl.name}": {e}'), set()
            if st is not None:
                code = st.code
                if code == _SKIP:
                    skipped.add(pl.name)
                    continue
                if code != _SUCCESS:
                    st = st.with_plugin(pl.name)
                    if st.is_rejected():
                        return None, st, {pl.name}
                    return None, _error(pl.name, f'running PreFilter plugin "{pl.name}": {st.message()}'), set()
            if r is None and result is None:
                continue  # nothing narrowed so far, nothing to merge
            if r is not None and not r.all_nodes():
                with_nodes.append(pl.name)
            result = r if result is None else result.merge(r)
            if result is not None and not result.all_nodes() and not result.node_names:
                if len(with_nodes) == 1:
                    msg = f"node(s) didn't satisfy plugin {with_nodes[0]}"
                else:
                    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(with_nodes)}] simultaneously"
                return result, Status(Code.UnschedulableAndUnresolvable, msg), set(with_nodes)
        return result, _OK, set(with_nodes)

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        return self._run_extension(state, pod, pod_info, node_info, "add_pod", "AddPod")

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        return self._run_extension(state, pod, pod_info, node_info, "remove_pod", "RemovePod")

    def _run_extension(self, state: CycleState, pod: Pod, pod_info: PodInfo, node_info: NodeInfo, method: str, label: str) -> Status:
        for pl, ext in self.pre_filter_extensions:
            if pl.name in state.skip_filter_plugins:
                continue
            try:
                st = getattr(ext, method)(state, pod, pod_info, node_info)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running {label} on PreFilter plugin "{pl.name}": {e}')
            if st is not None and not st.is_success():
                return _error(pl.name, f'running {label} on PreFilter plugin "{pl.name}": {st.message()}')
        return _OK

    def run_filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        skip = state.skip_filter_plugins
        for pl in self.filter_plugins:
            if skip and pl.name in skip:
                continue
            try:
                st = pl.filter(state, pod, node_info)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running "{pl.name}" filter plugin: {e}')
            if st is not None and st.code != _SUCCESS:
                if not st.is_rejected():
                    return _error(pl.name, f'running "{pl.name}" filter plugin: {st.message()}')
                return st.with_plugin(pl.name)
        return _OK

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
