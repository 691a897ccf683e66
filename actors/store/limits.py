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


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreLimits:
    max_object_bytes: int = DEFAULT_MAX_OBJECT_BYTES  # an object's msgpack encoding
    history_events: int = DEFAULT_HISTORY_EVENTS  # watch events kept for resume
    history_bytes: int = DEFAULT_HISTORY_BYTES
    max_events: int = DEFAULT_EVENTS  # Kubernetes Events (Scheduled, FailedScheduling, ...)
    event_ttl_seconds: float = DEFAULT_EVENT_TTL_SECONDS
    client_writes_per_turn: int = DEFAULT_CLIENT_WRITES_PER_TURN
