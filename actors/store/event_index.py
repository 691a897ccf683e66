"""The store's index of its stored Events (core/v1 Event objects): how it finds the
event a repeat folds into, an object's events, and the oldest ones to expire or
evict. It follows committed changes only (`observe`, from the store's fan-out, or
`rebuild` at load), so a batch the backend refuses leaves it untouched; what it
names is checked against the store's objects before use.

Pure: no I/O, no clock.
"""
from __future__ import annotations

import itertools
from typing import Iterable, Iterator

from framework.api.event import Correlation, Event

OLDEST_FIRST_READ = 64  # events `oldest` copies before the rest

ObjectRef = tuple[str, str]  # (involved kind, involved store key)


class EventIndex:
    __slots__ = ("_by_correlation", "_by_object", "_order", "crowded")

    def __init__(self) -> None:
        self._by_correlation: dict[Correlation, str] = {}
        self._by_object: dict[ObjectRef, dict[str, None]] = {}  # event keys in order of last write
        self._order: dict[str, float] = {}  # event key -> last seen (seconds), oldest write first
        self.crowded: set[ObjectRef] = set()  # objects with more events than the per-object bound

    def __len__(self) -> int:
        return len(self._order)

    def rebuild(self, events: Iterable[Event], per_object: int) -> None:
        self._by_correlation.clear()
        self._by_object.clear()
        self._order.clear()
        self.crowded.clear()
        for ev in sorted(events, key=lambda e: e.last_seen):
            self.observe(ev.key, ev, None, per_object)

    def observe(self, key: str, new: Event | None, old: Event | None, per_object: int) -> None:
        """A committed change of the Event stored under `key` (None: absent)."""
        if old is not None:
            corr = old.correlation()
            if self._by_correlation.get(corr) == key:
                del self._by_correlation[corr]
            ref = (old.involved_kind, old.involved_key)
            keys = self._by_object.get(ref)
            if keys is not None:
                keys.pop(key, None)
                if not keys:
                    del self._by_object[ref]
            self._order.pop(key, None)
        if new is not None:
            self._by_correlation[new.correlation()] = key
            ref = (new.involved_kind, new.involved_key)
            keys = self._by_object.setdefault(ref, {})
            keys[key] = None
            if len(keys) > per_object:
                self.crowded.add(ref)
            self._order[key] = new.last_seen

    def find(self, corr: Correlation) -> str | None:
        return self._by_correlation.get(corr)

    def of_object(self, kind: str, key: str) -> list[str]:
        """The keys of the events about (kind, key), oldest write first."""
        return list(self._by_object.get((kind, key), ()))

    def oldest(self) -> Iterator[tuple[str, float]]:
        """(event key, last seen), oldest write first (copies: the caller may remove
        what it was handed). The first few are copied alone: a sweep usually stops
        there, and copying every kept event per sweep made each write O(events)."""
        head = list(itertools.islice(self._order.items(), OLDEST_FIRST_READ))
        yield from head
        if len(head) == OLDEST_FIRST_READ:
            handed = {key for key, _ in head}
            yield from [(key, seen) for key, seen in self._order.items() if key not in handed]

    def first_seen(self) -> float | None:
        """When the oldest kept event was last seen."""
        return next(iter(self._order.values()), None)

    def beyond_bound(self, per_object: int) -> list[str]:
        """The oldest events of each crowded object beyond `per_object`; clears `crowded`."""
        out: list[str] = []
        for ref in self.crowded:
            keys = list(self._by_object.get(ref, ()))
            out += keys[:max(0, len(keys) - per_object)]
        self.crowded.clear()
        return out
