"""Preemptions whose API calls run outside the scheduling cycle (SchedulerAsyncPreemption).

Upstream's Evaluator keeps a `preempting` UID set and `lastVictimsPendingPreemption`
under a mutex: the scheduling cycle inserts the preemptor before it starts the
goroutine, the goroutine registers the last victim and removes the preemptor when
it is done, and DefaultPreemption's PreEnqueue asks `IsPodRunningPreemption`.

Here the record has one owner, the queue actor (actors/queue/actor.py), whose
PreEnqueue (DefaultPreemption) is its one reader: the scheduling cycle's request
to start a preemption (handle.start_preemption) reaches it as PreemptionBegun,
sent before the preemptor's Requeue; the preemption actor (actors/preemption.py)
sends PreemptionLastVictim and PreemptionEnded. Pure: no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from framework.api.objects import Pod

PREEMPTION_RUNNING = "waiting for the preemption for this pod to be finished"
PREEMPTION_RUNNING_GROUP = "waiting for the preemption for this pod group to be finished"

# (namespace, name) -> the pod as the scheduler's informer view has it, or None.
PodLookup = Callable[[str, str], "Pod | None"]


@dataclass(frozen=True, slots=True)
class PreemptionJob:
    """What the preemption actor does for one preemptor: clear `lower_nominated`'s
    nominations, then evict `victims` (none already terminating), the last one
    after the others. `group_uid`: the preemptor's PodGroup when the group preempts
    as one (WorkloadAwarePreemption, upstream's podGroupExecutorPreemptor): the
    in-flight record holds the group, every member waits (`members`, its pending
    ones), not the preemptor alone."""

    preemptor: Pod
    node_name: str
    victims: tuple[Pod, ...]
    lower_nominated: tuple[Pod, ...]
    plugin: str
    group_uid: str = ""
    members: tuple[Pod, ...] = ()

    @property
    def uid(self) -> str:
        """The key of the in-flight record: the PodGroup's uid, else the preemptor's."""
        return self.group_uid or self.preemptor.uid

    @property
    def held(self) -> tuple[Pod, ...]:
        """The pods the record holds back, activated or let in again when it ends."""
        return self.members if self.group_uid else (self.preemptor,)


class InFlightPreemptions:
    """preemptor UID (a pod's, or its PodGroup's when the group preempts as one) ->
    the last victim it waits for ((namespace, name), or None while the other victims
    are still being evicted)."""

    __slots__ = ("_running",)

    def __init__(self) -> None:
        self._running: dict[str, tuple[str, str] | None] = {}

    def __len__(self) -> int:
        return len(self._running)

    def __contains__(self, uid: object) -> bool:
        return uid in self._running

    def begin(self, uid: str) -> None:
        self._running[uid] = None

    def last_victim(self, uid: str, victim: Pod) -> None:
        if uid in self._running:
            self._running[uid] = (victim.namespace, victim.name)

    def end(self, uid: str) -> None:
        self._running.pop(uid, None)

    def is_running(self, uid: str, lookup: PodLookup) -> bool:
        """upstream's IsPodRunningPreemption: running until the last victim is
        registered and then gone or terminating in the informer view, so a
        deletion seen before the actor ends the entry does not strand the pod."""
        if uid not in self._running:
            return False
        last = self._running[uid]
        if last is None:
            return True
        victim = lookup(*last)
        return victim is not None and not victim.is_deleting


class VictimsInFlight:
    """The bound pods a preemption of this scheduler chose as victims whose deletion it
    has not seen yet (uids). From the choice on, such a pod no longer counts toward its
    gang's quorum (GangScheduling, the group cycle): a victim gang evicted whole goes
    in more than one write (the asynchronous preemption deletes the last victim after
    the others), and its pending member must not bind on the count of a member already
    chosen to go. The owner adds victims when it evicts them or hands them to the
    preemption actor and drops each at its deletion (or when it ends terminal)."""

    __slots__ = ("_uids",)

    def __init__(self) -> None:
        self._uids: set[str] = set()

    def __len__(self) -> int:
        return len(self._uids)

    def __contains__(self, uid: object) -> bool:
        return uid in self._uids

    def add(self, uid: str) -> None:
        self._uids.add(uid)

    def discard(self, uid: str) -> None:
        self._uids.discard(uid)
