"""The scheduler's side of preemption: PostFilter inside the scheduling cycle, and
what DefaultPreemption asks of the owner through the handle.

Runs in the Scheduler actor's loop (it reads and changes the scheduler's cache,
nominator and counters). With SchedulerAsyncPreemption on, a preemption leaves
the cycle as one Preempt message to the preemption actor (actors/preemption.py);
with it off, victims are evicted here, inside the cycle: each stays in the cache
as terminating by preemption until its deletion comes back from the store, so a
preemptor retried meanwhile waits for it (PodEligibleToPreemptOthers) instead of
preempting a second node.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from actors.base import ActorRef, MailboxClosed
from actors.clock import Clock, now_ns
from actors.metrics_sink import MetricsSink
from actors.queue.nominator import Nominator
from actors.preemption import Preempt, PreemptionMsg
from actors.queue.actor import PreemptionBegun, PreemptionEnded
from actors.store import StoreClient
from actors.store.messages import EvictPods, UpdatePodStatus
from framework.attempt_outcome import FitError
from framework.api.objects import Pod
from framework.api.timeutil import format_time
from framework.cache import Cache, Snapshot
from framework.extender import Extender
from framework.preemption_extenders import narrow_preemption_candidates
from framework.interface import Code, CycleState
from framework.preempt_pod import preempt_pods
from framework.preemption import Candidate, as_terminating_by_preemption
from framework.preemption_inflight import PreemptionJob, VictimsInFlight
from framework.runtime import Framework, PostFilterRun, run_unsuspended

PREEMPTION_PLUGIN = "DefaultPreemption"


class PreemptionHost(Protocol):
    """What this step uses of the Scheduler actor it runs in."""

    cache: Cache
    snapshot: Snapshot
    clock: Clock
    nominator: Nominator
    store: StoreClient
    metrics: MetricsSink
    extenders: Sequence[Extender]
    victims_in_flight: VictimsInFlight

    @property
    def queue(self) -> ActorRef: ...

    def reject_waiting(self, uid: str, plugin: str, message: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class PostFiltered:
    """What the PostFilter step hands the failed cycle: the node nominated ("" clears
    a nomination, None leaves it) and whether DefaultPreemption ran (the failure
    memo counts a preemption attempt again when it replays this failure)."""

    nominated: str | None
    preemption_ran: bool


NOT_RUN = PostFiltered(None, False)


class SentVictimWrites:
    """Evictions' writes inside the cycle: the scheduler's own view of waiting pods,
    and one store message sent without waiting (the store takes them in order). Each
    answers at once, so preempt_pods runs to its end without suspending."""

    __slots__ = ("sched",)

    def __init__(self, sched: PreemptionHost) -> None:
        self.sched = sched

    async def reject_if_waiting(self, victims: Sequence[Pod], plugin: str, message: str) -> frozenset[str]:
        return frozenset(v.uid for v in victims if self.sched.reject_waiting(v.uid, plugin, message))

    async def evict(self, victims: Sequence[Pod], condition: dict[str, str], reason: str, message: str) -> None:
        self.sched.store.send(EvictPods(victims=tuple((v.namespace, v.name, v.meta.uid) for v in victims),
                                        condition=condition, event_reason=reason, event_message=message))

    def record_event(self, victim: Pod, reason: str, message: str) -> None:
        self.sched.store.record_event("Pod", victim.key, "Normal", reason, message, victim.meta.uid)


class PreemptionStep:
    def __init__(self, sched: PreemptionHost, actor: ActorRef[PreemptionMsg] | None) -> None:
        self.sched = sched
        self.actor = actor
        self.victims = 0  # evicted in the cycle, or handed to the preemption actor
        self._writes = SentVictimWrites(sched)

    # --- PostFilter --------------------------------------------------------------------------------

    async def post_filter(self, fwk: Framework, state: CycleState, pod: Pod, err: FitError) -> PostFiltered:
        """upstream's RunPostFilterPlugins in the cycle; preempting extenders, when
        configured, narrow DefaultPreemption's candidates (an awaited call)."""
        if not fwk.has_post_filter_plugins():
            return NOT_RUN
        before = self.victims
        return self._done(err, await fwk.run_post_filter(state, pod, err.diagnosis.node_to_status), before)

    async def narrow(self, preemptor: Pod, candidates: list[Candidate]) -> list[Candidate]:
        pods_on_node = {ni.name: [pi.pod for pi in ni.pods] for ni in self.sched.snapshot.list()}
        return await narrow_preemption_candidates(self.sched.extenders, preemptor, candidates, pods_on_node)

    def _done(self, err: FitError, run: PostFilterRun, before: int) -> PostFiltered:
        ran = run.code_of(PREEMPTION_PLUGIN)
        if ran is not None:  # as upstream's DefaultPreemption.PostFilter and prepareCandidate(Async)
            self.sched.metrics.preemption_attempt()
            if ran == Code.Success:
                self.sched.metrics.preemption_victims(self.victims - before)
        if run.status.code != Code.Error:
            err.diagnosis.post_filter_msg = run.status.message()
        # "" (a PostFilter result without a node) clears a stale nomination.
        nominated = run.result.nominated_node_name if run.result is not None else None
        return PostFiltered(nominated, ran is not None)

    # --- requests through the handle ----------------------------------------------------------------

    def start(self, job: PreemptionJob) -> None:
        """An asynchronous preemption leaves the cycle: the queue, which owns the
        in-flight record, marks the preemptor (before its Requeue, sent later in
        this cycle), and the preemption actor takes the evictions."""
        self.victims += len(job.victims)
        for victim in job.victims:
            self._chosen(victim)
        uid = job.uid  # the preemptor's, or its PodGroup's when the group preempts as one
        self.sched.queue.try_tell(PreemptionBegun(uid=uid))
        try:
            if self.actor is None:
                raise MailboxClosed("no preemption actor")
            self.actor.tell(Preempt(job=job))
        except MailboxClosed:  # shutting down: nothing will evict, so nothing may hold the pod
            self.sched.queue.try_tell(PreemptionEnded(uid=uid))

    def evict(self, victim: Pod, preemptor: Pod, message: str) -> None:
        """Synchronous preemption's eviction (`message` is the DisruptionTarget text,
        which preempt_pods builds again): the victim turns terminating in the cache at
        once, then upstream's PreemptPod runs as one store message (EvictPods), so a
        watcher sees the condition on the victim before it goes, and the Preempted
        event after (as upstream)."""
        s = self.sched
        self.victims += 1
        if self._chosen(victim):
            s.cache.update_pod(as_terminating_by_preemption(victim, format_time(now_ns(s.clock)), preemptor))
        run_unsuspended(preempt_pods(self._writes, (victim,), preemptor, victim.node_name, PREEMPTION_PLUGIN))

    def _chosen(self, victim: Pod) -> bool:
        """A victim bound in the cache (not one assumed, which Permit rejects in memory
        and which comes back pending) is recorded in flight until its deletion is seen:
        from this choice on it no longer counts toward its gang's quorum. Whether it was."""
        s = self.sched
        if victim.node_name and s.cache.get_pod(victim.key) is not None and not s.cache.is_assumed(victim):
            s.victims_in_flight.add(victim.uid)
            return True
        return False

    def nominate(self, pairs: list[tuple[Pod, str]]) -> None:
        """A gang preemptor's other members go to the nodes its plan chose: recorded in
        the nominator (their next attempt tries that node first and other pods see
        the room taken) and in their status."""
        s = self.sched
        for pod, node in pairs:
            s.nominator.add(pod, node)
            s.store.send(UpdatePodStatus(namespace=pod.namespace, name=pod.name, uid=pod.meta.uid,
                                         condition=None, nominated_node_name=node))

    def clear_nominations(self, pods: list[Pod]) -> None:
        """Synchronous preemption took these lower-priority pods' nominated node:
        forget the nomination here and in their status (clearNominatedNodeName)."""
        s = self.sched
        for pod in pods:
            s.nominator.delete(pod)
            s.store.send(UpdatePodStatus(namespace=pod.namespace, name=pod.name, uid=pod.meta.uid,
                                         condition=None, nominated_node_name=""))
