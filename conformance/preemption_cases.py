"""DefaultPreemption plugin-level cases and the PodEligibleToPreemptOthers function
cases (DefaultPreemption.json), run as upstream's default_preemption_test.go runs them.

The case's `filterPlugins` (in-tree plugins, or fakes described in `fakePlugins`)
form a Framework at PreFilter and Filter, with DefaultPreemption at PostFilter.
What runs depends only on the case's inputs:
- PostFilter for the case's pod, after PreFilter, given `filteredNodeStatuses`
  (nodes absent from it are UnschedulableAndUnresolvable, as upstream's test builds
  the map) or, without it, the statuses Filter gives on every node;
- a dry run of preemption on every node (DryRunPreemption with the plugin's offset
  and candidate count), reported per candidate node.
"""
from __future__ import annotations

from typing import Any

from framework.runtime import run_unsuspended
from framework.api.errors import ValidationError
from framework.config import full_registry
from framework.interface import Code, CycleState, NodeToStatus, Status
from framework.plugins import Registry
from framework.plugins.defaultpreemption.default_preemption import DefaultPreemption
from framework.runtime import Framework
from conformance.cluster import CaseCluster, build_cluster
from conformance.fakes import fake_registry
from conformance.plugin_cases import CaseError

PROFILE = "default-scheduler"


def _registry(case: dict[str, Any]) -> Registry:
    try:
        fakes = fake_registry(case.get("fakePlugins") or {})
    except ValueError as e:
        raise CaseError(str(e)) from None
    return full_registry().merged(fakes)


def build_framework(case: dict[str, Any], cluster: CaseCluster) -> tuple[Framework, DefaultPreemption]:
    """The case's filter plugins at PreFilter/Filter and DefaultPreemption at PostFilter."""
    registry = _registry(case)
    try:
        preemption = DefaultPreemption.new(case.get("pluginArgs"), cluster.handle)
    except ValidationError as e:
        raise CaseError(f"DefaultPreemption rejected its args: {e}") from None
    plugins: dict[str, Any] = {}
    for name in case.get("filterPlugins") or []:
        factory = registry.get(name)
        if factory is None:
            raise CaseError(f"plugin {name!r} is not implemented")
        plugins[name] = factory(None, cluster.handle)
    points = {
        "preFilter": [n for n, pl in plugins.items() if hasattr(pl, "pre_filter")],
        "filter": [n for n, pl in plugins.items() if hasattr(pl, "filter")],
        "postFilter": [preemption.name],
    }
    plugins[preemption.name] = preemption
    return Framework(PROFILE, plugins, points, {}, cluster.handle), preemption


def _status_from_case(raw: dict[str, Any]) -> Status:
    return Status(Code[raw.get("code", "Success")], *(raw.get("reasons") or []))


def _filtered_statuses(case: dict[str, Any], fwk: Framework, state: CycleState, cluster: CaseCluster) -> NodeToStatus:
    given = case.get("filteredNodeStatuses")
    if given is not None:
        return NodeToStatus({name: _status_from_case(st) for name, st in given.items()})
    out = NodeToStatus()
    for ni in cluster.snapshot.list():
        st = fwk.run_filter_with_nominated_pods(state, cluster.pod, ni)
        if not st.is_success():
            out.set(ni.name, st)
    return out


def _pre_filtered(fwk: Framework, cluster: CaseCluster) -> CycleState:
    """A CycleState the PreFilter plugins have filled, as upstream's tests prepare it."""
    state = CycleState()
    fwk.run_pre_filter(state, cluster.pod)
    return state


def run_post_filter(case: dict[str, Any]) -> dict[str, Any]:
    """PostFilter's verdict, and what it asked of the handle: the victims it evicted or
    handed to an asynchronous preemption ("ns/name") and the other pods it nominated
    (a gang preemptor's members, "ns/name" -> node)."""
    cluster = build_cluster(case)
    fwk, plugin = build_framework(case, cluster)
    state = _pre_filtered(fwk, cluster)
    filtered = _filtered_statuses(case, fwk, state, cluster)
    result, st = run_unsuspended(plugin.post_filter(state, cluster.pod, filtered))
    out: dict[str, Any] = {"code": st.code.name, "reasons": list(st.reasons)}
    out["nominatedNodeName"] = result.nominated_node_name if result is not None else None
    h = cluster.handle
    preempted = [v.key for v, _, _ in h.evicted] + [v.key for job in h.preemption_jobs for v in job.victims]
    return {"postFilter": out, "preempted": sorted(preempted),
            "nominatedMembers": {p.key: node for p, node in h.nominations}}


def run_dry_run(case: dict[str, Any]) -> dict[str, Any]:
    """DryRunPreemption on every node: candidate node -> victims ("ns/name", sorted) and PDB violations."""
    cluster = build_cluster(case)
    fwk, plugin = build_framework(case, cluster)
    state = _pre_filtered(fwk, cluster)
    nodes = cluster.snapshot.list()
    if not nodes:
        return {}
    ev = plugin.evaluator
    offset, num = plugin.get_offset_and_num_candidates(len(nodes))
    dry = ev.dry_run_preemption(state, cluster.pod, nodes, ev.list_pdbs(), offset, num)
    return {
        c.name: {"victims": sorted(p.key for p in c.victims), "numPDBViolations": c.num_pdb_violations}
        for c in sorted(dry.candidates, key=lambda c: c.name)
    }


def run_pod_eligible(case: dict[str, Any]) -> dict[str, Any]:
    cluster = build_cluster(case)
    _, plugin = build_framework(case, cluster)
    raw = (case.get("input") or {}).get("nominatedNodeStatus")
    status = _status_from_case(raw) if raw is not None else None
    eligible, reason = plugin.pod_eligible_to_preempt_others(cluster.pod, status)
    return {"eligible": eligible, "reason": reason}


def run_preemption_case(case: dict[str, Any]) -> dict[str, Any]:
    if case.get("function") == "PodEligibleToPreemptOthers":
        return run_pod_eligible(case)
    if case.get("pod") is None:
        raise CaseError("a DefaultPreemption case needs `pod`")
    # The dry run first: PostFilter evicts (through the handle) on a fresh cluster anyway.
    return {"dryRunCandidates": run_dry_run(case), **run_post_filter(case)}
