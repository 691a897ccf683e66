"""Victims' evictions, as upstream's Evaluator.PreemptPod run for each victim of a
group it evicts at once: the one sequence both preemption paths run (synchronous
preemption inside the cycle, asynchronous in the preemption actor).

A victim waiting at Permit is rejected there instead of deleted; any other first
gets the DisruptionTarget condition, then is deleted (a victim already gone at
either step ends its eviction quietly, without an event); the Preempted event is
recorded last, once the victim is rejected or deleted. Upstream evicts the victims
of a group in parallel, so no order among them is promised; each victim's own
steps keep theirs.

Pure: the writes go through `VictimWrites`, which the owner implements (the
scheduler with fire-and-forget store messages, the preemption actor with awaited
store calls: one ask to the waiting room and one store write for the whole group).
Nothing here does I/O itself.
"""
from __future__ import annotations

from typing import Protocol, Sequence

from framework.api.objects import Pod
from framework.preemption import disruption_target, preempted_event_message

PREEMPTED_REASON = "Preempted"
PREEMPTED_MESSAGE = "preempted"  # the rejection a victim waiting at Permit gets


class VictimWrites(Protocol):
    """The writes one group of evictions makes."""

    async def reject_if_waiting(self, victims: Sequence[Pod], plugin: str, message: str) -> frozenset[str]:
        """Reject at Permit each victim that waits there; the uids rejected."""
        ...

    async def evict(self, victims: Sequence[Pod], condition: dict[str, str], reason: str, message: str) -> None:
        """For each victim in order: add `condition` to its status, delete it, then
        record the Normal event (reason, message) about it; a victim gone at either
        write is skipped without an event. Raises the owner's error when a write is
        refused."""
        ...

    def record_event(self, victim: Pod, reason: str, message: str) -> None: ...


async def preempt_pods(writes: VictimWrites, victims: Sequence[Pod], preemptor: Pod, node_name: str,
                       plugin: str) -> None:
    """Evict `victims` for `preemptor` (nominated to `node_name`) in upstream's order,
    as one group evicted at once. A refused write raises (the owner's error); the
    victims rejected at Permit have their events then, the others none."""
    rejected = await writes.reject_if_waiting(victims, plugin, PREEMPTED_MESSAGE)
    message = preempted_event_message(preemptor, node_name)
    for victim in victims:
        if victim.uid in rejected:
            writes.record_event(victim, PREEMPTED_REASON, message)
    rest = [v for v in victims if v.uid not in rejected]
    if rest:
        await writes.evict(rest, disruption_target(preemptor), PREEMPTED_REASON, message)
