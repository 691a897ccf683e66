"""What the whole-group cycle does with its algorithm's result (GroupCycle-submit.json
beside this file), run by the gang driver (gang_cases.py):

- `SubmitPodGroupAlgorithmResult`: upstream's TestSubmitPodGroupAlgorithmResult rows.
  `input.podResults` is the algorithm's verdict per member in member order (`status`
  null: placed on node1; a code: not placed, with that code), `input.group` the group's
  status ({code, message}), `input.existingCondition` a PodGroupScheduled condition the
  PodGroup already carries. A member's `nominated` is upstream's requiresPreemption
  (its own PostFilter nominated that node; ksched's member try has no nomination, so
  it is Unschedulable in the placement), and `group.waitingOnPreemption` the group's
  workload-aware preemption succeeding: the cycle's preemption step (GroupCycle.preempt)
  is scripted to nominate the first such member and, as DefaultPreemption's group step
  does for the rest of its plan, the other members with a `nominated`. The real pipeline (store, queue, scheduler, binding cycles)
  runs one group cycle whose placement is scripted from these rows: members scripted
  as placed go through the real algorithm (assumed and Reserved on node1), the others
  take the scripted verdict, and the group takes the scripted status, as upstream's
  test hands submitPodGroupAlgorithmResult an algorithmResult (a member that failed and
  is woken again within the run meets its scripted verdict again). Output: the members
  bound, the members that went back nominated (`preempting`: upstream's FailureHandler
  called with a nominated node), the members that failed without one (`failed`), and
  the PodGroupScheduled condition on the PodGroup.
- `SkipPodGroupPodSchedule`: upstream's TestSkipPodGroupPodSchedule: which popped
  members the cycle skips (framework/workload/group_cycle.py `skips_member` over a
  real Cache). Output: the members left.
- `PodGroupCycle_PodGroupPostFilter`: upstream's TestPodGroupCycle_PodGroupPostFilter
  rows: whether a group cycle that placed nobody runs the group's preemption
  (PodGroupPostFilter; in ksched DefaultPreemption's group-aware step), given
  `input.workloadAwarePreemption` (the gate) and `input.postFilterPlugin` (DefaultPreemption
  in the profile, or not). Both members ask more cpu than the one node has, as upstream's
  fake Filter rejects them; the group step, when it runs, answers "pod group pg cannot be
  placed even with preemption", which the members' PodScheduled message carries. Output:
  `podGroupPostFilterCalled`.
- `UpdatePodGroupCondition`: upstream's TestUpdatePodGroupCondition rows over
  framework/workload/group_status.py `with_condition`. Output: the condition after the
  update, and whether its lastTransitionTime was kept.

Expectations are read only to compare."""
from __future__ import annotations

import asyncio
import random
from typing import Any, Collection, Hashable

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from framework.api.objects import Node, Pod
from framework.cache import Cache
from framework.interface import Code, Status
from framework.workload.group_cycle import GroupPlacement, MemberTry, place_group, skips_member
from framework.workload.group_status import with_condition
from framework.workload.member_placer import CachePlacer
from framework.workload.policy import GroupPolicy
from conformance.plugin_cases import CaseError

FUNCTIONS = ("SubmitPodGroupAlgorithmResult", "SkipPodGroupPodSchedule", "UpdatePodGroupCondition",
             "PodGroupCycle_PodGroupPostFilter")
NS = "default"
START = 1767225600.0
EARLIER = "2025-12-31T23:00:00Z"  # an existing condition's lastTransitionTime
GROUP_NOT_PLACEABLE = "pod group pg cannot be placed even with preemption"  # group_step.group_not_placeable


def _code(name: str, at: str) -> Code:
    try:
        return Code[name]
    except KeyError:
        raise CaseError(f"{at}: unknown code {name!r}") from None


def _pod(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, **extra},
            "spec": {"schedulingGroup": {"podGroupName": "pg"},
                     "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}]}}


class _Script:
    """A MemberPlacer that places a member scripted as placed with the real placer and
    gives the others their scripted verdict."""

    def __init__(self, placer: CachePlacer, verdicts: dict[str, Status | None]) -> None:
        self.placer = placer
        self.verdicts = verdicts

    def signature(self, pod: Pod) -> Hashable | None:
        return None

    def try_member(self, pod: Pod, node_names: Collection[str] | None) -> MemberTry:
        verdict = self.verdicts[pod.name]
        return self.placer.try_member(pod, None) if verdict is None else MemberTry(status=verdict)

    def undo(self, pod: Pod, node: str) -> None:
        self.placer.undo(pod, node)


def _nominations(spec: dict[str, Any]) -> dict[str, str]:
    """Member name -> the node its own PostFilter nominated (upstream's requiresPreemption)."""
    return {str(r["pod"]): str(r["nominated"]) for r in spec.get("podResults") or [] if r.get("nominated")}


def _scripted_preemption(spec: dict[str, Any], pods_by_uid: dict[str, Pod]):  # noqa: ANN202 - GroupCycle.preempt
    """The group's workload-aware preemption as the row has it: with
    `group.waitingOnPreemption`, the first member with a nomination preempts (its node
    returned to the cycle) and the other nominated members are nominated as
    DefaultPreemption's group step nominates the rest of its plan; otherwise none ran."""
    wanted = _nominations(spec)
    waiting = bool((spec.get("group") or {}).get("waitingOnPreemption"))

    async def preempt(fwk: Any, placer: CachePlacer, result: GroupPlacement, *, nominate: Any) -> tuple[str, str | None]:
        if not waiting or not wanted:
            return "", None
        by_name = {p.name: p for p in pods_by_uid.values()}
        first, *rest = [n for n in wanted if n in by_name]
        nominate([(by_name[n], wanted[n]) for n in rest])
        return by_name[first].uid, wanted[first]
    return preempt


def _scripted(spec: dict[str, Any], pods_by_uid: dict[str, Pod]):  # noqa: ANN202 - the GroupCycle placement seam
    members = sorted(str(n) for n in spec.get("pods") or [])
    verdicts: dict[str, Status | None] = {}
    for i, r in enumerate(spec.get("podResults") or []):
        code = r.get("status")
        verdicts[str(r["pod"])] = None if code is None else Status(_code(code, f"podResults[{i}]"), r.get("message", ""))
        if code is None and r.get("nominated"):
            raise CaseError(f"podResults[{i}]: a member placed carries no nomination of its own")
    group = spec.get("group") or {}
    code = _code(group.get("code", "Success"), "group")
    want = Status() if code == Code.Success else Status(code, group.get("message", ""))
    calls: list[int] = []

    def placement(policy: GroupPolicy, pods: list[Pod], placer: CachePlacer, *, scheduled: int) -> GroupPlacement:
        calls.append(1)
        if len(calls) > 1:  # a member that failed came back (its group's Pod/Add woke it): its verdict again
            return place_group(policy, pods, _Script(placer, {p.name: verdicts.get(p.name) for p in pods}),
                               scheduled=scheduled)
        if sorted(p.name for p in pods) != sorted(members):
            raise CaseError(f"the group cycle popped {sorted(p.name for p in pods)}, not the whole group {members}")
        tried = sorted((p for p in pods if p.name in verdicts), key=lambda p: list(verdicts).index(p.name))
        result = place_group(policy, tried, _Script(placer, verdicts), scheduled=scheduled,
                             feasible=lambda *a, **k: None)
        by_uid = {p.uid: p for p in pods}
        pods_by_uid.update(by_uid)
        if result.kept and not want.is_success():
            for uid, node in reversed(list(result.placed.items())):
                placer.undo(by_uid[uid], node)
            result.kept = False
        elif want.is_success() and not result.kept:
            raise CaseError("a successful group needs a member scripted as placed")
        result.status = want
        for p in pods:
            if p.uid not in result.placed and p.uid not in result.unplaced:
                result.unplaced[p.uid] = want
        return result
    return placement


def _condition(raw: dict[str, Any]) -> dict[str, Any] | None:
    for c in (raw.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodGroupScheduled":
            return {k: c.get(k, "") for k in ("type", "status", "reason", "message")}
    return None


async def _submit(spec: dict[str, Any]) -> dict[str, Any]:
    names = [str(n) for n in spec.get("pods") or []]
    pods_by_uid: dict[str, Pod] = {}
    placement = _scripted(spec, pods_by_uid)
    preemption = _scripted_preemption(spec, pods_by_uid)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"},
                       "capacity": {"cpu": "8", "memory": "8Gi", "pods": "110"}}}
    group = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "pg", "namespace": NS},
             "spec": {"schedulingPolicy": {"basic": {}}}}  # upstream's testPodGroup sets no gang policy
    async with Pipeline(clock=FakeClock(START), rand=random.Random(0)) as p:
        p.scheduler.group_cycle.placement = placement

        async def preempt(fwk: Any, placer: CachePlacer, result: GroupPlacement) -> tuple[str, str | None]:
            return await preemption(fwk, placer, result, nominate=p.scheduler.preemption.nominate)
        p.scheduler.group_cycle.preempt = preempt
        await p.client.apply([node])
        made = (await p.client.apply([group]))[0]
        existing = spec.get("existingCondition")
        if existing:
            cond = {**existing, "lastTransitionTime": EARLIER}
            await p.client.update({**made, "status": {"conditions": [cond]}})
        await p.client.apply([_pod(n) for n in names])
        await p.settle()  # one cycle: no time passes, so no member comes back from backoff
        pods, _ = await p.client.list("Pod")
        bound = sorted(i["metadata"]["name"] for i in pods if (i.get("spec") or {}).get("nodeName"))
        preempting = sorted(i["metadata"]["name"] for i in pods if (i.get("status") or {}).get("nominatedNodeName"))
        failed = sorted(i["metadata"]["name"] for i in pods if i["metadata"]["name"] not in preempting and any(
            c.get("type") == "PodScheduled" and c.get("status") == "False"
            for c in (i.get("status") or {}).get("conditions") or []))
        pg = await p.client.get("PodGroup.scheduling.k8s.io", NS, "pg")
        return {"bound": bound, "preempting": preempting, "failed": failed, "condition": _condition(pg)}


async def _group_post_filter(spec: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {"featureGates": {"WorkloadAwarePreemption": bool(spec["workloadAwarePreemption"])}}
    if spec.get("postFilterPlugin") != "DefaultPreemption":
        config["profiles"] = [{"schedulerName": "default-scheduler",
                               "plugins": {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}}]
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"},
            "status": {"allocatable": {"cpu": "1", "memory": "8Gi", "pods": "110"},
                       "capacity": {"cpu": "1", "memory": "8Gi", "pods": "110"}}}
    group = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "pg", "namespace": NS},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    members = []
    for name in ("p1", "p2"):
        raw = _pod(name)
        raw["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
        members.append(raw)
    async with Pipeline(config, clock=FakeClock(START), rand=random.Random(0)) as p:
        await p.client.apply([node, group])
        await p.client.apply(members)
        await p.settle()
        pods, _ = await p.client.list("Pod")
        messages = [c.get("message", "") for i in pods for c in (i.get("status") or {}).get("conditions") or []
                    if c.get("type") == "PodScheduled"]
        if len(messages) != 2:
            raise CaseError(f"the members were not both tried: {messages}")
        return {"podGroupPostFilterCalled": any(GROUP_NOT_PLACEABLE in m for m in messages), "messages": messages}


def _skip(spec: dict[str, Any]) -> dict[str, Any]:
    cache = Cache()
    cache.add_node(Node({"metadata": {"name": "node1"}, "status": {"allocatable": {"cpu": "8", "pods": "110"}}}))
    left = []
    for raw in spec.get("pods") or []:
        extra = {"deletionTimestamp": "2026-01-01T00:00:00Z"} if raw.get("terminating") else {}
        pod = Pod(_pod(str(raw["name"]), **extra))
        if raw.get("assumed"):
            cache.assume_pod(pod, "node1")
        if not skips_member(pod, cache.get_pod(pod.key) is not None):
            left.append(pod.name)
    return {"pods": left}


def _update_condition(spec: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "pg", "namespace": NS, "generation": int(spec.get("generation", 0))}
    existing = spec.get("existing")
    status = {"conditions": [{**existing, "lastTransitionTime": EARLIER}]} if existing else {}
    raw = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": meta,
           "spec": {"schedulingPolicy": {"basic": {}}}, "status": status}
    written = with_condition(raw, spec["condition"], int(START * 1e9)) or raw
    cond = next(c for c in written["status"]["conditions"] if c["type"] == spec["condition"]["type"])
    out = {k: cond.get(k, "") for k in ("type", "status", "reason", "message")}
    if cond.get("observedGeneration"):
        out["observedGeneration"] = cond["observedGeneration"]
    return {"condition": out, "lastTransitionTimeKept": cond.get("lastTransitionTime") == EARLIER}


def run_group_submit_case(case: dict[str, Any]) -> dict[str, Any]:
    spec = case.get("input") or {}
    try:
        if case.get("function") == "SubmitPodGroupAlgorithmResult":
            return asyncio.run(_submit(spec))
        if case.get("function") == "PodGroupCycle_PodGroupPostFilter":
            return asyncio.run(_group_post_filter(spec))
        if case.get("function") == "SkipPodGroupPodSchedule":
            return _skip(spec)
        return _update_condition(spec)
    except (KeyError, TypeError, ValueError) as e:
        raise CaseError(f"bad case input: {e}") from None
