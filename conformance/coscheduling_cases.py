"""Coscheduling plugin-level cases (Coscheduling-plugin.json) and the
checkClusterResource function case.

Every extension point a case can describe runs on its own freshly built cluster
and plugin, because PostFilter and Permit change the plugin's state (rejections,
sort penalties). What runs depends only on the case's inputs: PreFilter, Permit
(after Reserve) and PostFilter (after every node failed Filter) always, for the
case's `pod`; `queueSort` gives Less(p1, p2); `steps` runs a sequence on one
plugin. The runner reports the keys the case expects.
"""
from __future__ import annotations

from typing import Any

from framework.api.objects import Pod
from framework.api.resources import parse_resource_list
from framework.api.timeutil import parse_time
from framework.cache import Snapshot
from framework.handle import FrameworkHandle
from framework.interface import Code, CycleState, NodeToStatus, QueuedPodInfo, Status
from framework.plugins.coscheduling.coscheduling import Coscheduling
from framework.plugins.coscheduling.core import check_cluster_resource
from framework.waiting import WaitingPod
from conformance.cluster import CaseCluster, build_cluster
from conformance.plugin_cases import CaseError, status_dict

# "Now" of upstream's TestLess: times in the cases are relative to it.
CASE_NOW = "2026-01-01T00:00:00Z"


def _status(st: Status | None) -> dict[str, Any]:
    d = status_dict(st)
    d.setdefault("reasons", [])
    return d


def _plugin(case: dict[str, Any], cluster: CaseCluster) -> Coscheduling:
    try:
        return Coscheduling.new(case.get("pluginArgs"), cluster.handle)
    except ValueError as e:
        raise CaseError(f"Coscheduling rejected its args: {e}") from None


def _fresh(case: dict[str, Any]) -> tuple[CaseCluster, Coscheduling]:
    cluster = build_cluster(case, clock=parse_time(CASE_NOW, "now") / 1e9)
    return cluster, _plugin(case, cluster)


def run_pre_filter(case: dict[str, Any]) -> dict[str, Any]:
    cluster, plugin = _fresh(case)
    _, st = plugin.pre_filter(CycleState(), cluster.pod, cluster.snapshot.list())
    return _status(st)


def run_permit(case: dict[str, Any]) -> dict[str, Any]:
    cluster, plugin = _fresh(case)
    state = CycleState()
    node = cluster.nodes[0].name if cluster.nodes else ""
    st = plugin.reserve(state, cluster.pod, node)
    if st is not None and not st.is_success():
        return _status(st)
    st, _timeout = plugin.permit(state, cluster.pod, node)
    return _status(st)


def _all_nodes_failed(cluster: CaseCluster) -> NodeToStatus:
    return NodeToStatus({n.name: Status(Code.Unschedulable) for n in cluster.nodes})


def run_post_filter(case: dict[str, Any]) -> dict[str, Any]:
    cluster, plugin = _fresh(case)
    _, st = plugin.post_filter(CycleState(), cluster.pod, _all_nodes_failed(cluster))
    return _status(st)


def _queued(entry: dict[str, Any]) -> QueuedPodInfo:
    pod = Pod(entry["pod"])
    ts = entry.get("initialAttemptTimestamp")
    initial = parse_time(ts, "initialAttemptTimestamp") if ts is not None else 0
    return QueuedPodInfo(pod=pod, timestamp=initial, initial_attempt_timestamp=initial)


def run_less(spec: dict[str, Any], plugin: Coscheduling) -> bool:
    """Less(p1, p2) for {"p1": {pod, initialAttemptTimestamp}, "p2": ...}, given
    directly or under "queueSort"."""
    qs = spec.get("queueSort", spec)
    return plugin.less(_queued(qs["p1"]), _queued(qs["p2"]))


def run_check_cluster_resource(case: dict[str, Any]) -> dict[str, Any]:
    cluster = build_cluster(case)
    inp = case.get("input") or {}
    request = parse_resource_list(inp.get("request"), "input.request")
    err = check_cluster_resource(cluster.snapshot.list(), request, inp.get("podGroup", ""))
    return {"fits": err is None, "message": err or ""}


# --- steps: one plugin, several calls in order ------------------------------------------------

# A step is {"op": OP, ...}: advance (`seconds`), less (`p1`, `p2`), or an
# extension point on `pod` (preFilter, postFilter, reserve, permit, unreserve).
_STEP_OPS = ("advance", "less", "preFilter", "postFilter", "reserve", "permit", "unreserve")


def _step_op(step: dict[str, Any]) -> str:
    op = step.get("op")
    if op not in _STEP_OPS:
        raise CaseError(f"step op must be one of {', '.join(_STEP_OPS)}: {step!r}")
    return op


def _step_pod(step: dict[str, Any], cluster: CaseCluster) -> Pod:
    ref = step.get("pod")
    if isinstance(ref, dict):
        return Pod(ref)
    pods = [*cluster.pending, *cluster.bound, *([cluster.pod] if cluster.pod else [])]
    for p in pods:
        if ref in (p.name, p.key):
            return p
    if cluster.pod is not None and ref is None:
        return cluster.pod
    raise CaseError(f"step names an unknown pod {ref!r}")


class _StepClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _steps_cluster(case: dict[str, Any]) -> tuple[CaseCluster, Coscheduling, _StepClock]:
    """A cluster whose clock the steps move."""
    cluster = build_cluster(case)
    clock = _StepClock(parse_time(CASE_NOW, "now") / 1e9)
    cluster.handle = FrameworkHandle(snapshot=cluster.snapshot, objects=cluster.handle.objects, clock=clock,
                                     features=cluster.features)
    return cluster, _plugin(case, cluster), clock


def _assume(cluster: CaseCluster, assumed: dict[str, Pod], pod: Pod, node: str) -> Pod:
    """Count `pod` on `node` in the snapshot, as the scheduler assumes a pod
    before Reserve and Permit."""
    if pod.key not in assumed:
        assumed[pod.key] = Pod({**pod.raw, "spec": {**(pod.raw.get("spec") or {}), "nodeName": node}})
        _resnapshot(cluster, assumed)
    return assumed[pod.key]


def _forget(cluster: CaseCluster, assumed: dict[str, Pod], pod: Pod) -> None:
    if assumed.pop(pod.key, None) is not None:
        _resnapshot(cluster, assumed)


def _resnapshot(cluster: CaseCluster, assumed: dict[str, Pod]) -> None:
    cluster.snapshot = Snapshot.build(cluster.nodes, [*cluster.bound, *assumed.values()])
    cluster.handle.set_snapshot(cluster.snapshot)


def run_steps(case: dict[str, Any], cluster: CaseCluster, plugin: Coscheduling, clock: _StepClock) -> list[dict[str, Any]]:
    """Each step's result, in order: a status (with `timeoutSeconds` and the
    `activated` sibling keys for Permit), or {"less": bool}; `advance` moves the
    clock by `seconds`. Reserve and Permit assume the pod on the node first, as
    the scheduler does; a Permit rejection or Unreserve forgets it."""
    assumed: dict[str, Pod] = {}
    out: list[dict[str, Any]] = []
    for step in case["steps"]:
        op = _step_op(step)
        if op == "advance":
            clock.now += float(step["seconds"])
            out.append({})
            continue
        if op == "less":
            out.append({"less": run_less(step, plugin)})
            continue
        pod = _step_pod(step, cluster)
        node = step.get("node") or (cluster.nodes[0].name if cluster.nodes else "")
        state = CycleState()
        if op == "preFilter":
            _, st = plugin.pre_filter(state, pod, cluster.snapshot.list())
            out.append(_status(st))
        elif op == "postFilter":
            _, st = plugin.post_filter(state, pod, _all_nodes_failed(cluster))
            out.append(_status(st))
        elif op == "permit":
            before = len(cluster.handle.activated)
            placed = _assume(cluster, assumed, pod, node)
            st, timeout = plugin.permit(state, placed, node)
            res = _status(st)
            if st is not None and st.is_wait():
                res["timeoutSeconds"] = timeout
                cluster.handle.waiting_pods.add(WaitingPod(placed, node, {plugin.name: clock.now + timeout}))
            elif st is not None and not st.is_success():
                _forget(cluster, assumed, pod)
            res["activated"] = sorted(p.key for p in cluster.handle.activated[before:])
            out.append(res)
        elif op == "reserve":
            out.append(_status(plugin.reserve(state, _assume(cluster, assumed, pod, node), node)))
        elif op == "unreserve":
            plugin.unreserve(state, pod, node)
            _forget(cluster, assumed, pod)
            out.append({})
    return out


def run_coscheduling_case(case: dict[str, Any]) -> dict[str, Any]:
    """The case's actual results under the keys of its `expect` (all of them
    when it has none). What runs never depends on `expect`."""
    actual = _run(case)
    expect = case.get("expect")
    if not expect:
        return actual
    return {k: v for k, v in actual.items() if k in expect}


def _run(case: dict[str, Any]) -> dict[str, Any]:
    if case.get("function") == "checkClusterResource":
        return run_check_cluster_resource(case)
    if case.get("plugin") != "Coscheduling":
        raise CaseError("not a Coscheduling case")
    actual: dict[str, Any] = {}
    if "steps" in case or "queueSort" in case:
        cluster, plugin, clock = _steps_cluster(case)
        if "steps" in case:
            actual["steps"] = run_steps(case, cluster, plugin, clock)
        if "queueSort" in case:
            # After the steps, on the same plugin: a step such as PostFilter
            # changes how the group sorts (TestLessAfterScheduleFailure).
            actual["less"] = run_less(case, plugin)
    if case.get("pod"):
        actual["preFilter"] = run_pre_filter(case)
        actual["permit"] = run_permit(case)
        actual["postFilter"] = run_post_filter(case)
    return actual


__all__ = ["run_coscheduling_case"]
