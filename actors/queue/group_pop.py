"""A gang popped as one unit (1.36's QueuedPodGroupInfo, as upstream's scheduler
gathers it with PopSpecificPod): when the pod Pop takes from activeQ is a member of
a scheduling.k8s.io PodGroup (a gang or a basic policy, as upstream 1.36 sends every
pod with spec.schedulingGroup to scheduleOnePodGroup) whose profile runs GangScheduling,
every other member still queued (activeQ, backoffQ, the unschedulable pool; a gated
one when PreEnqueue now lets it in) comes out with it, and the Pop's answer is a QueuedPodGroup.
Members PreEnqueue still refuses, in flight, bound or assumed stay where they are.

Which pods are a gang's other members is the pipeline's `GangMembers` function over
the scheduler's informer view, read synchronously as the queue's PreEnqueue
plugins read it (docs/decisions.md, "Refs, not actors")."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

from framework.api.groups import POD_GROUP_KEY
from framework.api.objects import Pod
from framework.api.workload_api import SchedulingPodGroup
from framework.interface import QueuedPodInfo

if TYPE_CHECKING:
    from actors.queue.scheduling_queue import SchedulingQueue
    from framework.handle import InMemoryObjects

GANG_PLUGIN = "GangScheduling"
# A gang pod's other unscheduled members; None when the pod is not popped with a group.
GangMembers = Callable[[Pod], "list[Pod] | None"]


@dataclass(slots=True)
class QueuedPodGroup:
    """The members of one gang popped together (handed-over copies, the popped pod first)."""

    namespace: str
    name: str
    members: list[QueuedPodInfo]

    @property
    def keys(self) -> list[str]:
        return [q.pod.key for q in self.members]


Popped = QueuedPodInfo | QueuedPodGroup


def popped_keys(item: Popped) -> list[str]:
    return item.keys if isinstance(item, QueuedPodGroup) else [item.pod.key]


def pop_specific(q: "SchedulingQueue", key: str) -> QueuedPodInfo | None:
    """Take one queued, ungated pod out of whichever sub-queue holds it, in flight."""
    if key in q.in_flight:
        return None
    qpi = q.active_q.remove(key) or q.backoff_q.remove(key) or q.error_backoff_q.remove(key)
    if qpi is None and key in q.unschedulable and (not q.unschedulable.is_gated(key) or _lets_in(q, key)):
        qpi = q.unschedulable.pop(key, None)
        if qpi is not None:
            qpi.gated, qpi.gating_plugin = False, ""
    return q.hand_out(qpi) if qpi is not None else None


def _lets_in(q: "SchedulingQueue", key: str) -> bool:
    """A gated member whose PreEnqueue now passes: the event that let the popped pod
    in (its quorum's last pod) may not have reached the member's gate yet."""
    qpi = q.unschedulable.get(key)
    st = q.pre_enqueue(qpi.pod) if qpi is not None else None
    return st is None or st.is_success()


def with_group(q: "SchedulingQueue", qpi: QueuedPodInfo, members_of: GangMembers) -> Popped:
    """The popped pod alone, or with its gang's other queued members."""
    others = members_of(qpi.pod)
    if others is None:
        return qpi
    members = [qpi]
    for pod in others:
        got = pop_specific(q, pod.key)
        if got is not None:
            members.append(got)
    return QueuedPodGroup(qpi.pod.namespace, qpi.pod.scheduling_group, members)


def gang_members(objects: "InMemoryObjects", gang_profiles: Mapping[str, bool]) -> GangMembers:
    """The pipeline's GangMembers: the pod's PodGroup exists (gang or basic policy)
    and its profile (by schedulerName) runs GangScheduling."""
    def members_of(pod: Pod) -> list[Pod] | None:
        group = pod.scheduling_group
        if not group or not gang_profiles.get(pod.scheduler_name, False):
            return None
        pg = objects.get(POD_GROUP_KEY, pod.namespace, group)
        if not isinstance(pg, SchedulingPodGroup):
            return None
        return [p for p in objects.scheduling_group_pods(pod.namespace, group)
                if not p.node_name and p.uid != pod.uid and not p.is_deleting]
    return members_of


__all__ = ["GANG_PLUGIN", "GangMembers", "Popped", "QueuedPodGroup", "gang_members", "pop_specific", "popped_keys",
           "with_group"]
