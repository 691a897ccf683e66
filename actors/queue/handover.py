"""How a QueuedPodInfo crosses the queue's boundary: as a copy.

The queue owns its records (attempts, timestamps, the rejector sets). A popped
pod leaves as a copy the scheduler may change freely (it sets the pod it
attempted and who rejected it); a failed pod comes back as a copy the queue then
owns. The copy is shallow (the Pod is immutable) with both plugin sets copied,
so neither side ever sees the other's later writes.
"""
from __future__ import annotations

from framework.interface import QueuedPodInfo


def handed_over(qpi: QueuedPodInfo) -> QueuedPodInfo:
    """A copy of `qpi` sharing nothing mutable with it."""
    return type(qpi)(
        pod=qpi.pod,
        timestamp=qpi.timestamp,
        initial_attempt_timestamp=qpi.initial_attempt_timestamp,
        attempts=qpi.attempts,
        unschedulable_plugins=set(qpi.unschedulable_plugins),
        pending_plugins=set(qpi.pending_plugins),
        gated=qpi.gated,
        gating_plugin=qpi.gating_plugin,
        backoff_expiration=qpi.backoff_expiration,
        popped_cycle=qpi.popped_cycle,
        tie=qpi.tie,
    )
