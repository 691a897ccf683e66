"""Pending workloads per ClusterQueue: an active heap and an inadmissible list, popped
one head per ClusterQueue per cycle (pkg/cache/queue/cluster_queue.go, manager.go)."""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from framework.kueue.workload import WorkloadInfo

# requeue reasons (pkg/cache/queue)
GENERIC = ""
FAILED_AFTER_NOMINATION = "FailedAfterNomination"
NO_FIT = "NoFit"
NAMESPACE_MISMATCH = "NamespaceMismatch"
PENDING_PREEMPTION = "PendingPreemption"
PREEMPTION_FAILED = "PreemptionFailed"
PREEMPTION_NO_CANDIDATES = "PreemptionNoCandidates"
_IMMEDIATE_BEST_EFFORT = {FAILED_AFTER_NOMINATION, PENDING_PREEMPTION, PREEMPTION_FAILED}


def order_key(wl: WorkloadInfo) -> tuple:
    """Higher priority first, then earlier queue-order time, then UID."""
    return (-wl.priority, wl.queue_order_time(), wl.uid, wl.key)


@dataclass
class ClusterQueueQueue:
    name: str
    strategy: str = "BestEffortFIFO"
    _heap: list[tuple] = field(default_factory=list)
    _active: dict[str, WorkloadInfo] = field(default_factory=dict)
    inadmissible: dict[str, WorkloadInfo] = field(default_factory=dict)
    sticky: str = ""  # the BestEffortFIFO preemptor that stays at the head
    _seq: dict[str, int] = field(default_factory=dict)  # key -> the push whose heap entry is current
    _pushes: int = 0

    def push(self, wl: WorkloadInfo) -> None:
        self.inadmissible.pop(wl.key, None)
        if wl.key in self._active and self._active[wl.key] is wl and self._seq.get(wl.key, -1) >= 0:
            return  # already queued as it is
        self._active[wl.key] = wl
        self._pushes += 1
        self._seq[wl.key] = self._pushes
        heapq.heappush(self._heap, (0 if wl.key == self.sticky else 1,) + order_key(wl) + (self._pushes,))
        if len(self._heap) > 2 * len(self._active) + 64:  # drop stale entries now and then
            self._heap = [e for e in self._heap if self._seq.get(e[-2]) == e[-1]]
            heapq.heapify(self._heap)

    def delete(self, key: str) -> None:
        self._active.pop(key, None)
        self._seq.pop(key, None)
        self.inadmissible.pop(key, None)
        if self.sticky == key:
            self.sticky = ""

    def __contains__(self, key: str) -> bool:
        return key in self._active or key in self.inadmissible

    def pending(self) -> int:
        return len(self._active) + len(self.inadmissible)

    def active_keys(self) -> list[str]:
        return sorted(self._active)

    def pop(self) -> WorkloadInfo | None:
        while self._heap:
            item = heapq.heappop(self._heap)
            key = item[-2]
            if self._seq.get(key) == item[-1]:
                del self._seq[key]
                return self._active.pop(key)
        return None

    def requeue(self, wl: WorkloadInfo, reason: str) -> None:
        """After a failed attempt: back to the heap or parked, per the queueing strategy."""
        if self.strategy == "BestEffortFIFO":
            self.sticky = wl.key if reason == PENDING_PREEMPTION else (self.sticky if self.sticky != wl.key else "")
        immediate = (reason != NAMESPACE_MISMATCH) if self.strategy == "StrictFIFO" else reason in _IMMEDIATE_BEST_EFFORT
        if immediate:
            self.push(wl)
        else:
            self._active.pop(wl.key, None)
            self._seq.pop(wl.key, None)
            self.inadmissible[wl.key] = wl

    def requeue_inadmissible(self) -> None:
        for wl in list(self.inadmissible.values()):
            self.push(wl)
