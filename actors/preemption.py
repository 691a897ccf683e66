"""The preemption actor: evictions that run outside the scheduling cycle
(SchedulerAsyncPreemption, upstream's prepareCandidateAsync goroutine).

The scheduling cycle chooses the victims, nominates the preemptor, tells the
queue (which owns the InFlightPreemptions record its PreEnqueue reads) that the
preemptor's preemption began and posts a Preempt message here; then it goes on
to the next pod. This actor tells the queue the last victim and the end. For each job this actor runs one task that
1. clears the nominations of lower-priority pods nominated to the node
   (a failure there marks the job failed but does not stop it);
2. evicts every victim but the last at once, then, if that did not fail,
   registers the last victim and evicts it (framework.preempt_pod, for each of the
   two groups): victims waiting at Permit are rejected by the waiting room (one
   RejectIfWaiting ask: the room, which owns the waits, answers which it held)
   instead of deleted; each other gets the DisruptionTarget condition (reason
   PreemptionByScheduler), is deleted and gets its Preempted event, the whole
   group in one store write (EvictPods: a victim gone at the condition or the
   delete is skipped, as upstream's NotFound; a refused write fails the group);
3. ends the preemptor's entry, and on any failure activates the preemptor,
   which could otherwise stay in the unschedulable pool; otherwise asks the queue
   to run PreEnqueue again if this preemption gates the preemptor (a preemptor
   gated while every victim had already been deleted by someone else gets no
   deletion event to wake it: upstream would wait for an unrelated one).
DefaultPreemption's PreEnqueue holds the preemptor back while its entry runs,
and lets it go as soon as the last victim is gone or terminating in the
scheduler's view (so the last deletion's event is never lost).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Sequence, Union, assert_never

from actors.base import Actor, ActorRef, MailboxClosed
from actors.queue.actor import Activate, PreemptionEnded, PreemptionLastVictim, QueueMsg, Regate
from actors.store import StoreClient, StoreError
from actors.waiting_room import WaitingRoomMsg, reject_those_waiting
from framework.api.objects import Pod
from framework.preempt_pod import preempt_pods
from framework.preemption_inflight import PreemptionJob

log = logging.getLogger("ksched.preemption")


@dataclass(frozen=True, slots=True, kw_only=True)
class Preempt:
    job: PreemptionJob


PreemptionMsg = Union[Preempt]


class PreemptionActor(Actor[PreemptionMsg]):
    name = "preemption"

    def __init__(self, *, store: StoreClient,
                 waiting_room: ActorRef[WaitingRoomMsg], queue: ActorRef[QueueMsg]) -> None:
        super().__init__()
        self.store = store
        self.waiting_room = waiting_room
        self.queue = queue
        self._writes = AwaitedVictimWrites(store, waiting_room)
        self.running = 0
        self.failed = 0  # jobs that ended with an error (their preemptor was activated)
        self._jobs: asyncio.TaskGroup | None = None

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:  # the jobs; leaving it waits for them
            self._jobs = tg
            await super().run()

    def idle(self) -> bool:
        return super().idle() and self.running == 0

    def stop(self) -> None:
        """No new jobs; the running ones finish (the store is still open)."""
        self.inbox.close(drain=True)

    async def handle(self, msg: PreemptionMsg) -> None:
        match msg:
            case Preempt(job=job):
                assert self._jobs is not None
                self.running += 1
                self._jobs.create_task(self._run(job))
            case _:
                assert_never(msg)

    async def _run(self, job: PreemptionJob) -> None:
        uid = job.uid
        ok = True
        try:
            ok = await self._clear_nominations(job.lower_nominated)
            victims = job.victims
            if len(victims) > 1:
                try:
                    await self._evict(job, victims[:-1])
                except Exception as e:  # noqa: BLE001 - the store refused: the last victim is spared
                    log.error("preempting for %s failed: %r", job.preemptor.key, e)
                    ok = False
                    victims = ()  # the preemptor retries sooner
            if victims:
                self.queue.try_tell(PreemptionLastVictim(uid=uid, victim=victims[-1]))
                await self._evict(job, victims[-1:])
        except Exception as e:  # noqa: BLE001 - one job's failure (store refused, stopped) is that job's
            log.error("preempting for %s failed: %r", job.preemptor.key, e)
            ok = False
        finally:
            self.queue.try_tell(PreemptionEnded(uid=uid))
            self.running -= 1
        if not ok:
            self.failed += 1
            self.queue.try_tell(Activate(pods=job.held))
        else:
            # Held by PreEnqueue while this ran, with no deletion left to come (another
            # preemption had already removed every victim): it would wait for an
            # unrelated Pod/Delete event.
            for pod in job.held:
                self.queue.try_tell(Regate(pod_key=pod.key, plugin=job.plugin))

    async def _clear_nominations(self, pods: tuple[Pod, ...]) -> bool:
        ok = True
        for pod in pods:
            try:
                await self.store.update_pod_status(pod.namespace, pod.name, uid=pod.meta.uid, nominated_node_name="")
            except (StoreError, MailboxClosed) as e:  # not critical: the eviction goes on
                log.error("clearing the nomination of %s failed: %r", pod.key, e)
                ok = False
        return ok

    async def _evict(self, job: PreemptionJob, victims: tuple[Pod, ...]) -> None:
        """upstream's PreemptPod for each of `victims`, at once (framework.preempt_pod);
        raises StoreError when the store refused."""
        await preempt_pods(self._writes, victims, job.preemptor, job.node_name, job.plugin)


@dataclass(frozen=True, slots=True)
class AwaitedVictimWrites:
    """A group of evictions as two awaited asks: the waiting room, which owns the
    waits, answers which victims it held; the store evicts the others in one write."""

    store: StoreClient
    waiting_room: ActorRef[WaitingRoomMsg]

    async def reject_if_waiting(self, victims: Sequence[Pod], plugin: str, message: str) -> frozenset[str]:
        return await reject_those_waiting(self.waiting_room, tuple(v.uid for v in victims), plugin, message)

    async def evict(self, victims: Sequence[Pod], condition: dict[str, str], reason: str, message: str) -> None:
        await self.store.evict_pods([(v.namespace, v.name, v.meta.uid) for v in victims], condition=condition,
                                    event_reason=reason, event_message=message)

    def record_event(self, victim: Pod, reason: str, message: str) -> None:
        self.store.record_event("Pod", victim.key, "Normal", reason, message, victim.meta.uid)
