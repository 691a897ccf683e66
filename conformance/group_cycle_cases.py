"""Whole-group cycle cases (GroupCycle-algorithm.json beside this file), run by the
gang driver (gang_cases.py):

- `PodGroupSchedulingAlgorithm`: upstream's TestPodGroupSchedulingAlgorithm rows.
  `input.pods` names the members in order; `input.filterStatus` gives each member's
  fake Filter verdict on the one node (absent or null: it fits; a code: every node
  answers it), as upstream's fakePodGroupPlugin; `input.placementFeasible` is the
  scripted sequence of PlacementFeasible codes (one per call, before the first member
  and after each; Success once the script runs out), as fakePlacementFeasiblePlugin.
  `input.postFilter` gives the members whose own PostFilter runs when Filter fails
  (WorkloadAwarePreemption off, upstream 1.36's schedule_one_podgroup_test.go rows): a
  node name nominates (the member is assumed there, upstream's requiresPreemption), ""
  fails it. framework/workload/group_cycle.py's `place_group` runs over them. Output:
  the group's code, whether it waits on preemption, each tried member's code and
  whether it preempted.
- `PodGroupInfoForPod`: upstream's TestPodGroupInfoForPod rows. `input.head` is
  the popped pod, `input.unscheduledPods` the group's other members the informer
  holds, `input.queuePods` those in the scheduling queue (with `initialAttempt`
  seconds); the real SchedulingQueue holds them as upstream's test puts them
  (AddUnschedulableIfNotPresent), actors/queue/group_pop.py pops the group and
  `member_order` orders it. Output: the member names in order.

Expectations are read only to compare."""
from __future__ import annotations

from typing import Any, Collection, Hashable

from actors.queue.group_pop import QueuedPodGroup, gang_members, with_group
from actors.queue.scheduling_queue import SchedulingQueue
from framework.api.objects import Pod
from framework.api.workload_api import SchedulingPodGroup
from framework.handle import InMemoryObjects
from framework.interface import Code, QueuedPodInfo, Status
from framework.plugins.queuesort.priority_sort import PrioritySort
from framework.workload.group_cycle import MemberTry, member_order, place_group
from framework.workload.policy import GroupPolicy
from conformance.plugin_cases import CaseError

NODE = "node1"
PROFILE = "default-scheduler"
FUNCTIONS = ("PodGroupSchedulingAlgorithm", "PodGroupInfoForPod")


def _pod(name: str, priority: int = 0) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"priority": priority, "schedulingGroup": {"podGroupName": "pg"},
                         "containers": [{"name": "c", "image": "pause"}]}})


def _code(name: str, at: str) -> Code:
    try:
        return Code[name]
    except KeyError:
        raise CaseError(f"{at}: unknown code {name!r}") from None


class _FakeFilter:
    """upstream's fakePodGroupPlugin's Filter (and PostFilter) on the one node, as a
    MemberPlacer."""

    def __init__(self, verdicts: dict[str, Any], post_filter: dict[str, Any]) -> None:
        self.verdicts = verdicts
        self.post_filter = post_filter

    def signature(self, pod: Pod) -> Hashable | None:
        return None  # every member is tried, as upstream's test has no signatures

    def try_member(self, pod: Pod, node_names: Collection[str] | None) -> MemberTry:
        code = self.verdicts.get(pod.name)
        if code is None:
            return MemberTry(node=NODE)
        verdict = _code(code, f"filterStatus.{pod.name}")
        if verdict == Code.Error:
            return MemberTry(status=Status(Code.Error, f"fake filter error for {pod.name}"))
        # a FitError: the pod's status is Unschedulable whatever Filter's rejecting code
        status = Status(Code.Unschedulable, f"0/1 nodes are available: {pod.name}")
        nominated = str(self.post_filter.get(pod.name) or "")
        if nominated:  # its PostFilter nominated: assumed there (requiresPreemption)
            return MemberTry(node=nominated, status=status, preempting=True)
        return MemberTry(status=status)

    def undo(self, pod: Pod, node: str) -> None:
        return None


def _algorithm(spec: dict[str, Any]) -> dict[str, Any]:
    names = [str(n) for n in spec.get("pods") or []]
    script = [_code(str(c), "placementFeasible") for c in spec.get("placementFeasible") or []]
    calls = iter(script)

    def scripted(policy: GroupPolicy, *, scheduled: int, remaining: int) -> Status | None:
        code = next(calls, Code.Success)
        return None if code == Code.Success else Status(code, f"scripted {code.name}")

    policy = GroupPolicy(name="pg", namespace="default", min_count=len(names))
    placer = _FakeFilter(dict(spec.get("filterStatus") or {}), dict(spec.get("postFilter") or {}))
    result = place_group(policy, [_pod(n) for n in names], placer, feasible=scripted)
    pods = {uid: (Code.Success.name if uid in result.placed else result.unplaced[uid].code.name)
            for uid in result.order}
    return {"group": result.status.code.name, "waitingOnPreemption": result.waiting_on_preemption, "pods": pods,
            "preemption": {uid: uid in result.preempting for uid in result.order}}


def _info_for_pod(spec: dict[str, Any]) -> dict[str, Any]:
    def member(raw: dict[str, Any]) -> Pod:
        return _pod(str(raw["name"]), int(raw.get("priority", 0)))

    try:
        head = member(spec["head"])
        listed = [member(raw) for raw in spec.get("unscheduledPods") or []]
        queued = [(member(raw), float(raw.get("initialAttempt", 0))) for raw in spec.get("queuePods") or []]
        initial = float(spec["head"].get("initialAttempt", 0))
    except (KeyError, TypeError, ValueError) as e:
        raise CaseError(f"bad case input: {e}") from None
    group = SchedulingPodGroup({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                                "metadata": {"name": "pg", "namespace": "default"},
                                "spec": {"schedulingPolicy": {"gang": {"minCount": 1}}}})
    objects = InMemoryObjects([head, *listed, group])
    sort = PrioritySort()
    q = SchedulingQueue(less=sort.less)
    for pod, at in queued:
        q.add_unschedulable_if_not_present(
            QueuedPodInfo(pod=pod, initial_attempt_timestamp=int(at * 1e9)), 0.0)
    popped = with_group(q, QueuedPodInfo(pod=head, initial_attempt_timestamp=int(initial * 1e9)),
                        gang_members(objects, {PROFILE: True}))
    members = popped.members if isinstance(popped, QueuedPodGroup) else [popped]
    order = member_order([m.pod for m in members], [m.initial_attempt_timestamp for m in members])
    return {"pods": [members[i].pod.name for i in order]}


def run_group_cycle_case(case: dict[str, Any]) -> dict[str, Any]:
    spec = case.get("input") or {}
    if case.get("function") == "PodGroupSchedulingAlgorithm":
        return _algorithm(spec)
    return _info_for_pod(spec)
