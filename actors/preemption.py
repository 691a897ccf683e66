"""The preemption actor: evictions that run outside the scheduling cycle
(SchedulerAsyncPreemption, upstream's prepareCandidateAsync goroutine).

The scheduling cycle chooses the victims, nominates the preemptor, tells the
queue (which owns the InFlightPreemptions record its PreEnqueue reads) that the
preemptor's preemption began and posts a Preempt message here; then it goes on
to the next pod. This actor tells the queue the last victim and the end. For each job this actor runs one task that
1. clears the nominations of lower-priority pods nominated to the node
   (a failure there marks the job failed but does not stop it);
2. evicts every victim but the last at once (asyncio.gather: the store takes
   them in one batch), then, if none of them failed, registers the last victim
   and evicts it: a victim waiting at Permit is rejected by the waiting room
   (asked RejectIfWaiting: the room, which owns the waits, answers whether it
   held the victim) instead of deleted; any other first gets the DisruptionTarget condition
   (reason PreemptionByScheduler) in the store and is then deleted (NotFound on
   either call is success, and NotFound on the condition skips the delete); each
   preempted pod gets a Preempted event;
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
from typing import Union, assert_never

from actors.base import Actor, ActorRef, MailboxClosed
from actors.queue.actor import Activate, PreemptionEnded, PreemptionLastVictim, QueueMsg, Regate
from actors.store import NotFound, StoreClient, StoreError
from actors.waiting_room import WaitingRoomMsg, reject_if_waiting
from framework.api.objects import Pod
from framework.preempt_pod import preempt_pod
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
        uid = job.preemptor.uid
        ok = True
        try:
            ok = await self._clear_nominations(job.lower_nominated)
            victims = job.victims
            if len(victims) > 1:
                results = await asyncio.gather(*(self._evict(job, v) for v in victims[:-1]), return_exceptions=True)
                failures = [r for r in results if isinstance(r, BaseException)]
                for r in failures:
                    if not isinstance(r, Exception):
                        raise r  # cancellation
                    log.error("preempting for %s failed: %r", job.preemptor.key, r)
                if failures:
                    ok = False
                    victims = ()  # the last victim is spared: the preemptor retries sooner
            if victims:
                self.queue.try_tell(PreemptionLastVictim(uid=uid, victim=victims[-1]))
                await self._evict(job, victims[-1])
        except Exception as e:  # noqa: BLE001 - one job's failure (store refused, stopped) is that job's
            log.error("preempting for %s failed: %r", job.preemptor.key, e)
            ok = False
        finally:
            self.queue.try_tell(PreemptionEnded(uid=uid))
            self.running -= 1
        if not ok:
            self.failed += 1
            self.queue.try_tell(Activate(pods=(job.preemptor,)))
        else:
            # Held by PreEnqueue while this ran, with no deletion left to come (another
            # preemption had already removed every victim): it would wait for an
            # unrelated Pod/Delete event.
            self.queue.try_tell(Regate(pod_key=job.preemptor.key, plugin=job.plugin))

    async def _clear_nominations(self, pods: tuple[Pod, ...]) -> bool:
        ok = True
        for pod in pods:
            try:
                await self.store.update_pod_status(pod.namespace, pod.name, uid=pod.meta.uid, nominated_node_name="")
            except (StoreError, MailboxClosed) as e:  # not critical: the eviction goes on
                log.error("clearing the nomination of %s failed: %r", pod.key, e)
                ok = False
        return ok

    async def _evict(self, job: PreemptionJob, victim: Pod) -> None:
        """upstream's PreemptPod (framework.preempt_pod); raises StoreError when the store refused."""
        await preempt_pod(self._writes, victim, job.preemptor, job.node_name, job.plugin)


@dataclass(frozen=True, slots=True)
class AwaitedVictimWrites:
    """An eviction's writes as awaited store calls; the waiting room, which owns the
    waits, answers whether it held the victim."""

    store: StoreClient
    waiting_room: ActorRef[WaitingRoomMsg]

    async def reject_if_waiting(self, victim: Pod, plugin: str, message: str) -> bool:
        return await reject_if_waiting(self.waiting_room, victim.uid, plugin, message)

    async def add_condition(self, victim: Pod, condition: dict[str, str]) -> bool:
        try:
            await self.store.update_pod_status(victim.namespace, victim.name, uid=victim.meta.uid,
                                               condition=condition)
        except NotFound:
            return False
        return True

    async def delete(self, victim: Pod) -> bool:
        try:
            await self.store.delete("Pod", victim.namespace, victim.name)
        except NotFound:
            return False
        return True

    def record_event(self, victim: Pod, reason: str, message: str) -> None:
        self.store.record_event("Pod", victim.key, "Normal", reason, message, victim.meta.uid)
