"""GangScheduling cases (GangScheduling-plugin.json beside this file): upstream's
TestGangSchedulingFlow rows and PlacementFeasible.

A flow case builds the lister from `podGroups` (scheduling.k8s.io/v1alpha2 PodGroups)
and `pendingPods` plus the case's `pod`, then runs what upstream's test runs:
PreEnqueue for `pod` (`expect.preEnqueue`); if it passes, Reserve and Permit for each
pod of `waitingOnPermit` (each must answer Wait, as upstream's test demands) parked
as waiting pods; then Reserve and Permit for `pod` (`expect.permit`), the pods that
Permit activated (`expect.activated`, "ns/name") and the waiting pods it let through
(`expect.allowed`, uids). A function case `PlacementFeasible` takes
{minCount (absent: a basic group), scheduled, remaining} (`expect` {code, reasons}). The whole-group cycle's cases (PodGroupSchedulingAlgorithm,
PodGroupInfoForPod) are group_cycle_cases.py's; the topology placement ones
(GeneratePlacements, PodGroupPodsCountScore) topology_cases.py's.
Expectations are read only to compare."""
from __future__ import annotations

from typing import Any

from framework.api.objects import Pod
from framework.api.workload_api import SchedulingPodGroup
from framework.cache import Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, Status
from framework.plugins.gangscheduling.gangscheduling import GangScheduling
from framework.waiting import WaitingPod
from framework.workload.policy import GroupPolicy, placement_feasible
from conformance.group_cycle_cases import FUNCTIONS as GROUP_CYCLE_FUNCTIONS, run_group_cycle_case
from conformance.group_submit_cases import FUNCTIONS as GROUP_SUBMIT_FUNCTIONS, run_group_submit_case
from conformance.topology_cases import FUNCTIONS as TOPOLOGY_FUNCTIONS, run_topology_case
from conformance.plugin_cases import CaseError

NODE = "some-node"


def is_gang_case(case: dict[str, Any]) -> bool:
    return (case.get("plugin") == GangScheduling.name
            or case.get("function") in ("PlacementFeasible", *GROUP_CYCLE_FUNCTIONS, *GROUP_SUBMIT_FUNCTIONS,
                                        *TOPOLOGY_FUNCTIONS))


def _status(st: Status | None) -> dict[str, Any]:
    st = st if st is not None else Status()
    return {"code": st.code.name, "reasons": list(st.reasons)}


def _on_node(pod: Pod) -> Pod:
    return Pod({**pod.raw, "spec": {**pod.raw.get("spec", {}), "nodeName": NODE}})


def run_gang_case(case: dict[str, Any]) -> dict[str, Any]:
    if case.get("function") == "PlacementFeasible":
        return _placement_feasible(case.get("input") or {})
    if case.get("function") in GROUP_CYCLE_FUNCTIONS:
        return run_group_cycle_case(case)
    if case.get("function") in TOPOLOGY_FUNCTIONS:
        return run_topology_case(case)
    if case.get("function") in GROUP_SUBMIT_FUNCTIONS:
        return run_group_submit_case(case)
    try:
        pod = Pod(case["pod"])
        pending = {p.name: p for p in (Pod(raw) for raw in case.get("pendingPods") or [])}
        groups = [SchedulingPodGroup(raw) for raw in case.get("podGroups") or []]
    except (KeyError, ValueError) as e:
        raise CaseError(f"bad case input: {e}") from None
    activated: list[str] = []
    handle = FrameworkHandle(snapshot=Snapshot(), objects=InMemoryObjects([*pending.values(), *groups, pod]),
                             activate=lambda ps: activated.extend(p.key for p in ps))
    plugin = GangScheduling.new(case.get("pluginArgs"), handle)
    out: dict[str, Any] = {"preEnqueue": _status(plugin.pre_enqueue(pod))}
    if out["preEnqueue"]["code"] != Code.Success.name:
        return out
    for name in case.get("waitingOnPermit") or []:
        waiter = pending.get(name)
        if waiter is None:
            raise CaseError(f"waitingOnPermit: no pending pod {name!r}")
        waiter = _on_node(waiter)
        plugin.reserve(CycleState(), waiter, NODE)
        st, timeout = plugin.permit(CycleState(), waiter, NODE)
        if st is None or st.code != Code.Wait:
            raise CaseError(f"waitingOnPermit: {name} was not held at Permit ({_status(st)})")
        handle.waiting_pods.add(WaitingPod(waiter, NODE, {plugin.name: timeout}))
    activated.clear()
    placed = _on_node(pod)
    plugin.reserve(CycleState(), placed, NODE)
    st, _ = plugin.permit(CycleState(), placed, NODE)
    out["permit"] = _status(st)
    out["activated"] = sorted(activated)
    out["allowed"] = sorted([wp.pod.uid for wp in handle.waiting_pods if wp.decided is not None and wp.decided.is_success()]
                            + ([pod.uid] if st is None or st.is_success() else []))
    return out


def _placement_feasible(spec: dict[str, Any]) -> dict[str, Any]:
    policy = GroupPolicy(name="pg", namespace="default", min_count=spec.get("minCount"))
    return _status(placement_feasible(policy, scheduled=int(spec["scheduled"]), remaining=int(spec["remaining"])))
