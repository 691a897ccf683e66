"""The Store's watchers: registering one (replaying the current objects or the
history since a resourceVersion) and telling every watcher of a kind about each
committed change. WatchHub is one of the Store actor's duties, with its own state
(the watchers by id)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from actors.base import MailboxClosed
from actors.store.history import WatchHistory
from actors.store.messages import WatchEvent
from framework.api.objects import KubeObject


@dataclass(slots=True)
class Watcher:
    kinds: frozenset[str] | None
    sink: Callable[[WatchEvent], None]



class WatchHub:
    def __init__(self) -> None:
        self._watchers: dict[int, Watcher] = {}
        self._next_watch = 1

    def tell(self, ev: WatchEvent) -> None:
        """A committed change, to every watcher of its kind."""
        for w in list(self._watchers.values()):
            if w.kinds is None or ev.kind in w.kinds:
                try:
                    w.sink(ev)
                except MailboxClosed:
                    pass

    def watch(self, kinds: frozenset[str] | None, from_rv: int, sink: Callable[[WatchEvent], None],
              objects: Mapping[str, Mapping[str, KubeObject]], history: WatchHistory, rv: int) -> tuple[int, int]:
        """Register `sink`; replay what happened after `from_rv` (0: the current
        `objects` as ADDED). Returns (watch id, resourceVersion now: `rv`)."""
        if from_rv == 0:
            for kind, objs in objects.items():
                if kinds is None or kind in kinds:
                    for obj in objs.values():
                        sink(WatchEvent("ADDED", kind, obj, None, int(obj.meta.resource_version or 0)))
        elif from_rv < rv:
            history.check(from_rv)
            for past in history.since(from_rv):
                if kinds is None or past.kind in kinds:
                    sink(past.event())
        wid = self._next_watch
        self._next_watch += 1
        self._watchers[wid] = Watcher(kinds, sink)
        return wid, rv

    def unwatch(self, wid: int) -> None:
        self._watchers.pop(wid, None)
