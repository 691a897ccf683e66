"""Plugin cases: one plugin run at PreFilter/Filter and PreScore/Score/NormalizeScore
on a cluster built from the case, as upstream's plugin unit tests do."""
from __future__ import annotations

from typing import Any

from framework.api.errors import ValidationError
from framework.cache import NodeInfo
from framework.interface import Code, CycleState, NodeScore, Status
from framework.plugins import Registry
from conformance.cluster import CaseCluster, build_cluster


class CaseError(Exception):
    """The case could not run (a missing plugin, bad input); reported, not raised further."""


def status_dict(st: Status | None) -> dict[str, Any]:
    return (st if st is not None else Status()).to_dict()


def make_plugin(registry: Registry, name: str, args: dict[str, Any] | None, cluster: CaseCluster) -> Any:
    factory = registry.get(name)
    if factory is None:
        raise CaseError(f"plugin {name!r} is not implemented")
    try:
        return factory(args, cluster.handle)
    except ValidationError as e:
        raise CaseError(f"plugin {name} rejected its args: {e}") from None


def run_filter_phase(plugin: Any, cluster: CaseCluster, state: CycleState | None = None) -> dict[str, Any]:
    """PreFilter once, then Filter on every node whatever PreFilter said."""
    state = state if state is not None else CycleState()
    pod = cluster.pod
    nodes = cluster.snapshot.list()
    out: dict[str, Any] = {}
    if hasattr(plugin, "pre_filter"):
        try:
            _, st = plugin.pre_filter(state, pod, nodes)
        except Exception as e:  # noqa: BLE001 - a plugin bug is an Error, as the runtime treats it
            st = Status(Code.Error, str(e))
        out["preFilter"] = status_dict(st)
    if hasattr(plugin, "filter"):
        out["filter"] = {ni.name: status_dict(_filter(plugin, state, pod, ni)) for ni in nodes}
    return out


def _filter(plugin: Any, state: CycleState, pod: Any, ni: NodeInfo) -> Status | None:
    try:
        return plugin.filter(state, pod, ni)
    except Exception as e:  # noqa: BLE001
        return Status(Code.Error, str(e))


def run_score_phase(plugin: Any, cluster: CaseCluster, candidates: list[str] | None,
                    state: CycleState | None = None) -> dict[str, Any]:
    state = state if state is not None else CycleState()
    pod = cluster.pod
    nodes = cluster.snapshot.list()
    if candidates is not None:
        wanted = set(candidates)
        nodes = [n for n in nodes if n.name in wanted]
    out: dict[str, Any] = {}
    skipped = False
    if hasattr(plugin, "pre_score"):
        st = plugin.pre_score(state, pod, nodes)
        out["preScore"] = status_dict(st)
        skipped = st is not None and st.code == Code.Skip
        if st is not None and not st.is_success() and not skipped:
            return out
    if not hasattr(plugin, "score"):
        return out
    if skipped:
        out["score"] = {n.name: 0 for n in nodes}
        return out
    scores: list[NodeScore] = []
    for ni in nodes:
        s, st = plugin.score(state, pod, ni)
        if st is not None and not st.is_success():
            out["scoreError"] = status_dict(st)
            return out
        scores.append(NodeScore(ni.name, s))
    ext = plugin.score_extensions() if hasattr(plugin, "score_extensions") else None
    if ext is not None:
        st = ext.normalize_score(state, pod, scores)
        if st is not None and not st.is_success():
            out["scoreError"] = status_dict(st)
    out["score"] = {s.name: s.score for s in scores}
    return out


def run_plugin_case(case: dict[str, Any], registry: Registry) -> dict[str, Any]:
    cluster = build_cluster(case)
    if cluster.pod is None:
        raise CaseError("a plugin case needs `pod`")
    plugin = make_plugin(registry, case["plugin"], case.get("pluginArgs"), cluster)
    actual: dict[str, Any] = {}
    # One cycle, as upstream's tests run it: Score may read what PreFilter/Filter wrote
    # (VolumeBinding's static bindings per node).
    state = CycleState()
    actual.update(run_filter_phase(plugin, cluster, state))
    if hasattr(plugin, "score") or hasattr(plugin, "pre_score"):
        actual.update(run_score_phase(plugin, cluster, case.get("candidateNodes"), state))
    return actual
