"""Which cluster events the queue acts on (upstream's isEventOfInterest)."""
from __future__ import annotations

from typing import Iterable

from framework.interface import ClusterEvent, ClusterEventWithHint

HintMap = dict[str, list[ClusterEventWithHint]]  # plugin name -> registered events


class EventInterest:
    """Called with an event: True for a wildcard event or one that some plugin of
    some profile registered for; answers are kept per (resource, action)."""

    def __init__(self, hint_maps: Iterable[HintMap]) -> None:
        self._registered = tuple({reg.event for m in hint_maps for regs in m.values() for reg in regs})
        self._known: dict[tuple[str, int], bool] = {}

    def __call__(self, event: ClusterEvent) -> bool:
        if event.resource == "*":
            return True
        key = (event.resource, int(event.action))
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = any(reg.matches(event) for reg in self._registered)
        return known
