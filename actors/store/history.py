"""The store's bounded memory: watch history, compacted as etcd compacts (and the
bounds of its stored Events, actors.store.event_recorder).

`WatchHistory` keeps the committed watch events a watch (or a paged list) may
resume from, bounded both by count and by bytes (each event is weighed by its
object's encoded size). Dropping the oldest events is compaction: a resume from
a resourceVersion at or below `compacted_rv` can no longer be served, and the
store answers `Expired` (kube-apiserver's 410 "too old resource version"), after
which a client lists again.

Pure: no I/O, no clock of its own (times are passed in).
"""
from __future__ import annotations

import bisect
import collections
from typing import Any, Iterator, Mapping, NamedTuple

from actors.store.messages import Gone, WatchEvent
from framework.api.objects import KubeObject, parse_object

DEFAULT_HISTORY_EVENTS = 10_000
DEFAULT_HISTORY_BYTES = 64 * 1024 * 1024
DEFAULT_EVENTS = 10_000
DEFAULT_EVENT_TTL_SECONDS = 3600.0
EVENTS_PER_OBJECT = 50  # stored Events about one object (the oldest go first)
DELETE_WEIGHT = 64  # a DELETED event holds no new object; it costs its own record


class PastEvent(NamedTuple):
    """A watch event as the history keeps it: the objects' raw dicts only. The
    parsed objects (several KB a pod) are made again when a watch replays it, so
    an old pod version the history holds costs its raw dict, most of which is
    shared with the newer version (the store's bind and status writes copy only
    what they change). A NamedTuple, not a frozen dataclass: one is made for every
    committed change, and a tuple's __new__ takes about a third of the time of the
    dataclass's one object.__setattr__ a field."""

    type: str
    kind: str
    key: str
    raw: Mapping[str, Any]
    old_raw: Mapping[str, Any] | None
    resource_version: int

    @classmethod
    def of(cls, ev: WatchEvent) -> "PastEvent":
        return cls(ev.type, ev.kind, ev.obj.key, ev.obj.raw, None if ev.old is None else ev.old.raw,
                   ev.resource_version)

    def old(self) -> KubeObject | None:
        return None if self.old_raw is None else parse_object(self.old_raw)

    def event(self) -> WatchEvent:
        return WatchEvent(self.type, self.kind, parse_object(self.raw), self.old(), self.resource_version)


class WatchHistory:
    """Committed watch events in resourceVersion order, every one after
    `compacted_rv` up to the newest."""

    __slots__ = ("max_events", "max_bytes", "compacted_rv", "bytes", "_events", "_sizes")

    def __init__(self, *, max_events: int = DEFAULT_HISTORY_EVENTS, max_bytes: int = DEFAULT_HISTORY_BYTES,
                 start_rv: int = 0) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.compacted_rv = start_rv  # nothing at or below this can be replayed
        self.bytes = 0
        # Each event and its weight, side by side: not a (PastEvent, size) tuple each, one
        # object fewer for the collector to walk for every change the history keeps.
        self._events: collections.deque[PastEvent] = collections.deque()
        self._sizes: collections.deque[int] = collections.deque()

    def __len__(self) -> int:
        return len(self._events)

    def reset(self, rv: int) -> None:
        """Everything up to `rv` is compacted (the store just loaded)."""
        self._events.clear()
        self._sizes.clear()
        self.bytes = 0
        self.compacted_rv = rv

    def append(self, ev: PastEvent, size: int) -> None:
        self._events.append(ev)
        self._sizes.append(size)
        self.bytes += size
        while self._events and (len(self._events) > self.max_events or self.bytes > self.max_bytes):
            old = self._events.popleft()
            self.bytes -= self._sizes.popleft()
            self.compacted_rv = old.resource_version

    def check(self, from_rv: int, what: str = "resource version") -> None:
        """Raise Gone when events after `from_rv` have been compacted away."""
        if from_rv < self.compacted_rv:
            raise Gone(f"too old {what}: {from_rv} ({self.compacted_rv})")

    def since(self, from_rv: int) -> Iterator[PastEvent]:
        """The kept events after `from_rv`, oldest first (check() first)."""
        if not self._events:
            return
        # resourceVersions increase but need not be contiguous (etcd: one revision per
        # transaction, shared by its writes, and revisions spent on other keys)
        start = bisect.bisect_right(self._events, from_rv, key=lambda e: e.resource_version)
        for i in range(start, len(self._events)):
            yield self._events[i]
