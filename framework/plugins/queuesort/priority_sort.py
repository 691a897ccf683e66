"""PrioritySort: activeQ order by pod priority, then by time queued."""
from __future__ import annotations

from typing import Any

from framework.interface import Handle, QueuedPodInfo


class PrioritySort:
    name = "PrioritySort"

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "PrioritySort":
        return cls()

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Higher spec.priority first (absent = 0); equal priorities go by the
        earlier queue timestamp. Equal timestamps give False both ways."""
        pa, pb = a.pod.priority, b.pod.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)


PLUGINS = [PrioritySort]
