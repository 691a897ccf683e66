"""One victim's eviction, as upstream's Evaluator.PreemptPod: the one sequence both
preemption paths run (synchronous preemption inside the cycle, asynchronous in the
preemption actor).

A victim waiting at Permit is rejected there instead of deleted; any other first
gets the DisruptionTarget condition, then is deleted (a victim already gone at
either step ends the eviction quietly, without an event); the Preempted event is
recorded last, once the victim is rejected or deleted.

Pure: the writes go through `VictimWrites`, which the owner implements (the
scheduler with fire-and-forget store messages, the preemption actor with awaited
store calls). Nothing here does I/O itself.
"""
from __future__ import annotations

from typing import Protocol

from framework.api.objects import Pod
from framework.preemption import disruption_target, preempted_event_message

PREEMPTED_REASON = "Preempted"
PREEMPTED_MESSAGE = "preempted"  # the rejection a victim waiting at Permit gets


class VictimWrites(Protocol):
    """The writes one eviction makes; each answers whether the victim was still there."""

    async def reject_if_waiting(self, victim: Pod, plugin: str, message: str) -> bool:
        """Reject the victim at Permit if it waits there; whether it did."""
        ...

    async def add_condition(self, victim: Pod, condition: dict[str, str]) -> bool:
        """Add the condition to the victim's status; False: the victim is gone."""
        ...

    async def delete(self, victim: Pod) -> bool:
        """Delete the victim; False: it was gone already."""
        ...

    def record_event(self, victim: Pod, reason: str, message: str) -> None: ...


async def preempt_pod(writes: VictimWrites, victim: Pod, preemptor: Pod, node_name: str, plugin: str) -> None:
    """Evict `victim` for `preemptor` (nominated to `node_name`) in upstream's order.
    A refused write raises (the owner's error) and records nothing."""
    if not await writes.reject_if_waiting(victim, plugin, PREEMPTED_MESSAGE):
        if not await writes.add_condition(victim, disruption_target(preemptor)):
            return
        if not await writes.delete(victim):
            return
    writes.record_event(victim, PREEMPTED_REASON, preempted_event_message(preemptor, node_name))
