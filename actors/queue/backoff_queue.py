"""Backoff arithmetic and the backoffQ's order (upstream's backend/queue/backoff_queue.go)."""
from __future__ import annotations

from framework.interface import QueuedPodInfo


def backoff_duration_ns(attempts: int, initial_ns: int, max_ns: int) -> int:
    """initial * 2^(attempts-1) capped at max; 0 before any attempt."""
    if attempts == 0:
        return 0
    d = initial_ns
    for _ in range(1, attempts):
        if d > max_ns - d:
            return max_ns
        d += d
    return d


def backoff_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    return (a.backoff_expiration or 0) < (b.backoff_expiration or 0)
