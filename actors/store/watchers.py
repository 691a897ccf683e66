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
    early: bool = False  # told at a turn's hand-over to the disk (actors/store/premise.py)



class WatchHub:
    def __init__(self) -> None:
        self._watchers: dict[int, Watcher] = {}
        # The sinks of a kind's watchers in watch order, made on first use and forgotten at
        # every watch and unwatch: all of them, and all but the early ones (early_told).
        self._by_kind: dict[str, tuple[Callable[[WatchEvent], None], ...]] = {}
        self._late_by_kind: dict[str, tuple[Callable[[WatchEvent], None], ...]] = {}
        self._next_watch = 1
        self._early = 0  # how many watchers are early

    @property
    def has_early(self) -> bool:
        return self._early > 0

    def tell(self, ev: WatchEvent, *, early_told: bool = False) -> None:
        """A committed change, to every watcher of its kind (`early_told`: but the
        early watchers, told at the hand-over already)."""
        table = self._late_by_kind if early_told else self._by_kind
        sinks = table.get(ev.kind)
        if sinks is None:
            sinks = table[ev.kind] = tuple(w.sink for w in self._watchers.values()
                                           if (w.kinds is None or ev.kind in w.kinds) and not (early_told and w.early))
        for sink in sinks:  # a tuple: a watch or unwatch meanwhile makes a new one
            try:  # _deliver's, written out: a call fewer a watcher and an event
                sink(ev)
            except MailboxClosed:
                pass

    def tell_early(self, ev: WatchEvent) -> None:
        """A change handed to the disk (or undone after it failed), to the early watchers."""
        for w in list(self._watchers.values()):
            if w.early and (w.kinds is None or ev.kind in w.kinds):
                _deliver(w, ev)

    def watch(self, kinds: frozenset[str] | None, from_rv: int, sink: Callable[[WatchEvent], None],
              objects: Mapping[str, Mapping[str, KubeObject]], history: WatchHistory, rv: int,
              early: bool = False) -> tuple[int, int]:
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
        self._watchers[wid] = Watcher(kinds, sink, early)
        self._by_kind, self._late_by_kind = {}, {}
        self._early += early
        return wid, rv

    def unwatch(self, wid: int) -> None:
        w = self._watchers.pop(wid, None)
        if w is not None:
            self._by_kind, self._late_by_kind = {}, {}
            self._early -= w.early


def _deliver(w: Watcher, ev: WatchEvent) -> None:
    try:
        w.sink(ev)
    except MailboxClosed:
        pass
