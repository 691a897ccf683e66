"""The Store's watchers: registering one (replaying the current objects or the
history since a resourceVersion) and telling every watcher of a kind about each
committed change. A mixin of the Store actor, over its state."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from actors.base import MailboxClosed
from actors.store.history import WatchHistory
from actors.store.messages import WatchEvent
from framework.api.objects import KubeObject


@dataclass(slots=True)
class Watcher:
    kinds: frozenset[str] | None
    sink: Callable[[WatchEvent], None]



class Watchers:
    _objects: dict[str, dict[str, KubeObject]]
    _history: WatchHistory
    _watchers: dict[int, Watcher]
    _next_watch: int
    _rv: int

    def _tell_watchers(self, ev: WatchEvent) -> None:
        for w in list(self._watchers.values()):
            if w.kinds is None or ev.kind in w.kinds:
                try:
                    w.sink(ev)
                except MailboxClosed:
                    pass

    def _watch(self, kinds: frozenset[str] | None, from_rv: int, sink: Callable[[WatchEvent], None]) -> tuple[int, int]:
        """Register `sink`; replay what happened after `from_rv` (0: the current
        objects as ADDED). Returns (watch id, resourceVersion now)."""
        if from_rv == 0:
            for kind, objs in self._objects.items():
                if kinds is None or kind in kinds:
                    for obj in objs.values():
                        sink(WatchEvent("ADDED", kind, obj, None, int(obj.meta.resource_version or 0)))
        elif from_rv < self._rv:
            self._history.check(from_rv)
            for past in self._history.since(from_rv):
                if kinds is None or past.kind in kinds:
                    sink(past.event())
        wid = self._next_watch
        self._next_watch += 1
        self._watchers[wid] = Watcher(kinds, sink)
        return wid, self._rv
