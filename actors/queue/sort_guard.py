"""QueueSort's `less`, guarded against a plugin that raises.

A heap whose comparison raises halfway through a sift is left half-sifted, so
the exception must not reach the heap. A comparison that raises is answered by
PrioritySort's order instead (priority, then time queued), and the pod at fault
is noted (the one the plugin cannot compare with itself; both when neither); after the operation the queue takes them out of activeQ and
puts them in the error backoff, as upstream retries a pod whose attempt ended in
an Error. The heap's order among the other pods is then restored.
"""
from __future__ import annotations

import logging

from actors.queue.heap import Less
from framework.interface import QueuedPodInfo

log = logging.getLogger("ksched.queue")


def priority_sort_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort's order: higher priority first, then the earlier timestamp."""
    if a.pod.priority != b.pod.priority:
        return a.pod.priority > b.pod.priority
    return a.timestamp < b.timestamp


class SortGuard:
    """Callable as `less`; collects the pods whose comparison raised."""

    def __init__(self, less: Less, plugin: str) -> None:
        self._less = less
        self.plugin = plugin
        self.faulted: dict[str, str] = {}  # pod key -> the error, until taken

    def __call__(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        try:
            return self._less(a, b)
        except Exception as e:  # noqa: BLE001 - a plugin's bug is an Error for its pods
            why = f'running QueueSort plugin "{self.plugin}": {e}'
            for q in self._culprits(a, b):
                self.faulted.setdefault(q.pod.key, why)
            return priority_sort_less(a, b)

    def _culprits(self, a: QueuedPodInfo, b: QueuedPodInfo) -> tuple[QueuedPodInfo, ...]:
        """The pods the plugin cannot compare even with themselves; both when
        neither alone makes it raise."""
        alone = tuple(q for q in (a, b) if not self._compares(q))
        return alone or (a, b)

    def _compares(self, q: QueuedPodInfo) -> bool:
        try:
            self._less(q, q)
        except Exception:  # noqa: BLE001 - the probe only asks whether it raises
            return False
        return True

    def take_faults(self) -> dict[str, str]:
        """The faults so far, logged; `faulted` is emptied in place (the queue reads
        it between operations, without a call, to see whether there is work)."""
        faults = dict(self.faulted)
        self.faulted.clear()
        for key, why in faults.items():
            log.error("pod %s: %s", key, why)
        return faults
