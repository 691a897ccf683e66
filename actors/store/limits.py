"""How much the store may hold and do per turn (DaemonConfiguration `limits.store`).

Defaults follow the upstream control plane: etcd refuses requests above 1.5 MiB
(--max-request-bytes), kube-apiserver keeps Events one hour (--event-ttl).
"""
from __future__ import annotations

from dataclasses import dataclass

from actors.store.history import (
    DEFAULT_EVENT_TTL_SECONDS, DEFAULT_EVENTS, DEFAULT_HISTORY_BYTES, DEFAULT_HISTORY_EVENTS,
)

DEFAULT_MAX_OBJECT_BYTES = 1536 * 1024  # etcd's default --max-request-bytes
DEFAULT_CLIENT_WRITES_PER_TURN = 100  # objects of client writes one store turn takes (more starves bindings)
FAIR_SHARE = 0.5  # the scheduler's share of the loop while client writes wait (issue 14's fair turns)
MAX_FAIR_PAUSE_SECONDS = 0.05  # the longest the store yields to the scheduler after one turn
DEFAULT_BULK_APPLY_OBJECTS = 256  # an Apply of at least this many objects is a bulk apply
DEFAULT_BULK_APPLY_SCHEDULER_SHARE = 0.0  # no fair pause after one: binding goes on in the loop's other turns


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreLimits:
    max_object_bytes: int = DEFAULT_MAX_OBJECT_BYTES  # an object's msgpack encoding
    history_events: int = DEFAULT_HISTORY_EVENTS  # watch events kept for resume
    history_bytes: int = DEFAULT_HISTORY_BYTES
    max_events: int = DEFAULT_EVENTS  # Kubernetes Events (Scheduled, FailedScheduling, ...)
    event_ttl_seconds: float = DEFAULT_EVENT_TTL_SECONDS
    client_writes_per_turn: int = DEFAULT_CLIENT_WRITES_PER_TURN
    # The bulk-apply share: after a turn that stored a client Apply of at least
    # `bulk_apply_objects` objects, while bindings came and client writes wait, the
    # store yields the loop for this share of it (0 to FAIR_SHARE) instead of half.
    bulk_apply_objects: int = DEFAULT_BULK_APPLY_OBJECTS
    bulk_apply_scheduler_share: float = DEFAULT_BULK_APPLY_SCHEDULER_SHARE

    def __post_init__(self) -> None:
        if not 0.0 <= self.bulk_apply_scheduler_share <= FAIR_SHARE:
            raise ValueError(f"bulk_apply_scheduler_share must be between 0 and {FAIR_SHARE}")


def fair_pause(turn_seconds: float, scheduler_share: float) -> float:
    """How long the store yields the loop after a turn of `turn_seconds` so that the
    scheduler gets `scheduler_share` of it: turn * share / (1 - share), at most
    MAX_FAIR_PAUSE_SECONDS (a share of one half pauses as long as the turn took)."""
    if scheduler_share <= 0.0 or turn_seconds <= 0.0:
        return 0.0
    return min(turn_seconds * scheduler_share / (1.0 - scheduler_share), MAX_FAIR_PAUSE_SECONDS)
