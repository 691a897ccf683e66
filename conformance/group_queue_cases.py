"""Queue cases with scheduling.k8s.io pod groups (GroupQueue.json beside this file):
upstream's scheduling-queue tests for PodGroup members, run through ksched's real
SchedulingQueue as the queue cases are (queue_cases.py, SCHEMA-ADDITIONS.md section 5),
with what a group adds:

- `queue.podGroups`: the PodGroups (scheduling.k8s.io/v1alpha2 objects) the informer
  view holds when the case starts (upstream's q.AddPodGroup before the pods).
- PreEnqueue: the case's plugins, then the real GangScheduling PreEnqueue over that
  view (a member whose PodGroup is missing is held gated, ksched's counterpart of
  upstream's incompletePodGroupPods), and GangScheduling's event registrations join the
  case's queueing hints.
- `pop` pops as the queue actor does: the popped member with every other member its
  queue still holds (actors/queue/group_pop.py's `with_group` over the pipeline's
  `gang_members`); the pop observation adds `group`, the members popped together
  (absent for a pod popped alone). Every member popped is in flight.
- ops `addPodGroup` / `updatePodGroup` (`podGroup`: an object; the view is updated and,
  for an add, the PodGroup/Add event is offered to the queue as the informer handler
  does) and `deletePodGroup` (`name`).
- op `groupAttempted` (upstream's AddAttemptedPodGroupIfNeeded): ksched's queue holds no
  group entry; each member came back through its own `requeue`, so the step changes
  nothing and is kept only to follow the upstream row step by step.
- `add`, `update`, `delete` also keep the pod in the view the group pop reads.

Expectations are read only to compare (queue_compare.py)."""
from __future__ import annotations

from typing import Any, Callable

from actors.queue.group_pop import GANG_PLUGIN, QueuedPodGroup, gang_members, with_group
from framework.api.groups import POD_GROUP_KEY
from framework.api.objects import Pod, parse_object
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import ActionType, ClusterEvent, Status
from framework.plugins.gangscheduling.gangscheduling import GangScheduling
from framework.cache import Snapshot
from conformance.queue_cases import QueueCaseError, QueueRun, popped_info


def is_group_queue_case(case: dict[str, Any]) -> bool:
    return "podGroups" in (case.get("queue") or {})


class GroupQueueRun(QueueRun):
    def __post_init__(self) -> None:
        qcfg = self.case.get("queue") or {}
        self.objects = InMemoryObjects([parse_object(raw) for raw in qcfg.get("podGroups") or []])
        self.gang = GangScheduling.new(None, FrameworkHandle(snapshot=Snapshot(), objects=self.objects))
        super().__post_init__()
        # one queue, one profile: every scheduler name the case's pods carry runs GangScheduling
        profiles = {Pod(raw).scheduler_name: True for raw in (self.case.get("pods") or {}).values()}
        self.members_of = gang_members(self.objects, profiles)

    def pre_enqueue(self, case_plugins: Callable[[Pod], Status] | None) -> Callable[[Pod], Status]:
        """The case's plugins, then GangScheduling's (as in the default profile)."""
        def run(pod: Pod) -> Status:
            st = case_plugins(pod) if case_plugins is not None else Status()
            if not st.is_success():
                return st
            gang = self.gang.pre_enqueue(pod)
            return Status(gang.code, *gang.reasons, plugin=GANG_PLUGIN) if gang is not None else Status()
        return run

    def hint_registrations(self) -> dict[str, list[Any]]:
        return {GANG_PLUGIN: self.gang.events_to_register()}

    def step(self, i: int, s: dict[str, Any]) -> dict[str, Any] | None:
        op = s["op"]
        if op == "pop":
            return self.pop_group(s)
        if op in ("addPodGroup", "updatePodGroup"):
            pg = parse_object(s["podGroup"])
            self.objects.put(pg)
            if op == "addPodGroup":
                event = ClusterEvent(POD_GROUP_KEY, ActionType.Add, "PodGroupAdd")
                self.queue.move_all_to_active_or_backoff(event, None, pg, self.now)
            return None
        if op == "deletePodGroup":
            ns, _, name = self.name(s["name"]).rpartition("/")
            self.objects.delete(POD_GROUP_KEY, f"{ns}/{name}")
            return None
        if op == "groupAttempted":
            return None
        if op in ("add", "update"):
            self.objects.put(self.pod(s["pod" if op == "add" else "new"]))
        elif op == "delete":
            self.objects.delete("Pod", self.pod(s["pod"]).key)
        return super().step(i, s)

    def pop_group(self, s: dict[str, Any]) -> dict[str, Any]:
        qpi = self.queue.pop()
        if qpi is None:
            return popped_info(None)
        got = with_group(self.queue, qpi, self.members_of)
        members = got.members if isinstance(got, QueuedPodGroup) else [qpi]
        for m in members:
            self.popped[m.pod.key] = m
        if s.get("saveAs"):
            self.vars[s["saveAs"]] = qpi.pod
        out = popped_info(qpi)
        if isinstance(got, QueuedPodGroup):
            out["group"] = sorted(m.pod.key for m in members)
        return out


def run_group_queue_case(case: dict[str, Any]) -> dict[str, Any]:
    try:
        return GroupQueueRun(case).run()
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, QueueCaseError):
            raise
        raise QueueCaseError(f"bad case input: {e}") from None


__all__ = ["GroupQueueRun", "is_group_queue_case", "run_group_queue_case"]
