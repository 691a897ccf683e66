"""Events as stored objects: how the Store records, folds, expires and bounds the
core/v1 Events the scheduler reports (Scheduled, FailedScheduling, Preempted, ...).
EventRecorder is one of the Store actor's duties, with its own state (the index of
stored Events, this turn's new ones, the expiry timer); it reads the store's
objects and writes through the store's write and remove.

- RecordEvent is fire and forget (upstream's recorder is asynchronous and best
  effort): it becomes an Event write in the turn that takes it, committed with the
  rest of that turn (group commit), never a transaction of its own. A repeat of an
  event (same object uid, type, reason and message) updates the stored one, count
  + 1 and lastTimestamp now, as client-go's EventCorrelator does.
- Events live `limits.event_ttl_seconds` from their last write (kube-apiserver's
  --event-ttl): a timer on the injected clock sends SweepEvents when the oldest is
  due, and the sweep deletes every expired event (watchers see DELETED). At most
  `limits.max_events` are kept, and EVENTS_PER_OBJECT per object: a sweep is asked
  for as soon as a commit passes a bound, and deletes the oldest first.
- A pod's events are those of its current life: GetEvents selects by the object's
  uid (as kubectl describe does with involvedObject.uid).
"""
from __future__ import annotations

import functools
import logging
from typing import Any, Callable, Mapping

from actors.base import MailboxClosed
from actors.clock import Clock, Timer
from actors.store.event_index import EventIndex
from actors.store.fields import new_uid
from actors.store.history import EVENTS_PER_OBJECT
from actors.store.limits import StoreLimits
from actors.store.messages import EventRecord, RecordEvent, SweepEvents, WatchEvent
from framework.api.decode import GROUP_VERSIONS
from framework.api.event import Event, correlation_of, new_event, repeated
from framework.api.objects import KINDS, KubeObject

log = logging.getLogger("ksched.store")


class EventRecorder:
    def __init__(self, objects: Mapping[str, Mapping[str, KubeObject]], limits: StoreLimits,
                 clock: Callable[[], float], timers: Clock | None, tell: Callable[[Any], None],
                 write: Callable[..., KubeObject], remove: Callable[..., None]) -> None:
        self._objects = objects
        self.limits = limits
        self._clock = clock
        self._tell = tell  # the store's inbox (SweepEvents)
        self._write = write
        self._remove = remove
        self._timers = timers  # the clock that arms the expiry timer (None: expiry on the next sweep only)
        self._event_index = EventIndex()
        self._recorded: dict[Any, str] = {}  # this turn's new events by correlation (not committed yet)
        self._expiry: Timer | None = None
        self._expiry_at = 0.0
        self._sweep_asked = False

    def loaded(self) -> None:
        """The store has loaded its objects: index the stored Events."""
        self._event_index.rebuild(self._objects["Event"].values(), EVENTS_PER_OBJECT)  # type: ignore[arg-type]
        self._after_event_change()

    # --- writes ---------------------------------------------------------------------------------

    def record(self, msg: RecordEvent, batch: Any) -> None:
        about = self._objects.get(msg.kind, {}).get(msg.key)
        uid = msg.uid or (about.meta.uid if about is not None else "")
        cls = KINDS.get(msg.kind)
        ns, _, name = msg.key.rpartition("/") if cls is None or cls.namespaced else ("", "", msg.key)
        corr = correlation_of(msg.kind, ns, name, uid, msg.type, msg.reason, msg.message)
        now = self._clock()
        stored = self._objects["Event"]
        key = self._recorded.get(corr) or self._event_index.find(corr)
        current = stored.get(key) if key is not None else None
        make: Callable[[dict[str, Any]], KubeObject]
        if isinstance(current, Event) and current.correlation() == corr:
            raw = repeated(current, now)
            make = current.seen_again  # only count and lastTimestamp moved: nothing else is parsed again
        else:
            raw = new_event(name=self._event_name(name, ns or "default", now), kind=msg.kind,
                            api_version=GROUP_VERSIONS.get(msg.kind, "v1"), namespace=ns, involved_name=name,
                            uid=uid, type=msg.type, reason=msg.reason, message=msg.message, now=now)
            raw["metadata"]["uid"] = new_uid()
            key = f"{raw['metadata']['namespace']}/{raw['metadata']['name']}"
            # The Event the store keeps, from the fields it was made of (parsing `raw` gives the same).
            make = functools.partial(Event.new, kind=msg.kind, namespace=ns, involved_name=name, uid=uid,
                                     type=msg.type, reason=msg.reason, message=msg.message,
                                     seen_ns=int(now) * 1_000_000_000)
        self._write("Event", key, raw, batch, make=make)
        self._recorded.pop(corr, None)
        self._recorded[corr] = key  # in order of write

    def _event_name(self, name: str, namespace: str, now: float) -> str:
        """`<object>.<unix nanoseconds in hex>` (client-go's recorder), one past any taken."""
        nanos = int(now * 1e9)
        while f"{namespace}/{name}.{nanos:x}" in self._objects["Event"]:
            nanos += 1
        return f"{name}.{nanos:x}"

    def sweep(self, batch: Any) -> None:
        """Delete the expired events, then the oldest beyond the bounds."""
        self._sweep_asked = False
        stored = self._objects["Event"]
        for key in self._event_index.beyond_bound(EVENTS_PER_OBJECT):
            if key in stored:
                self._remove("Event", key, stored[key], batch)
        now, ttl = self._clock(), self.limits.event_ttl_seconds
        excess = len(stored) - self.limits.max_events
        next_due = None
        for key, seen in self._event_index.oldest():
            if key not in stored:
                continue
            if excess <= 0 and seen + ttl > now:
                next_due = seen + ttl
                break
            self._remove("Event", key, stored[key], batch)
            excess -= 1
        self.cancel_expiry()
        if next_due is not None:
            self._arm_expiry(next_due)

    def take_recorded(self) -> None:
        """A new turn (or group): the last one's uncommitted events are committed or gone."""
        self._recorded.clear()

    # --- following commits ----------------------------------------------------------------------

    def observe(self, ev: WatchEvent) -> None:
        """A committed change: an Event's keeps the index (and the expiry) true."""
        if ev.kind == "Event":
            new = ev.obj if ev.type != "DELETED" and isinstance(ev.obj, Event) else None
            old = ev.old if isinstance(ev.old, Event) else None
            self._event_index.observe(ev.obj.key, new, old, EVENTS_PER_OBJECT)
            self._after_event_change()

    def _after_event_change(self) -> None:
        index = self._event_index
        first = index.first_seen()
        if first is None:
            return
        due = first + self.limits.event_ttl_seconds
        if len(index) > self.limits.max_events or index.crowded or due <= self._clock():
            self._ask_sweep()
        elif self._expiry is None or due < self._expiry_at:
            self.cancel_expiry()
            self._arm_expiry(due)

    def _ask_sweep(self) -> None:
        if self._sweep_asked:
            return
        try:
            self._tell(SweepEvents())
            self._sweep_asked = True
        except MailboxClosed:
            pass

    @property
    def expire_at(self) -> float | None:
        """When the armed expiry timer is due (None: none armed)."""
        return self._expiry_at if self._expiry is not None else None

    def _arm_expiry(self, when: float) -> None:
        if self._timers is None:
            return
        self._expiry_at = when
        self._expiry = self._timers.call_at(when, self._expired)

    def _expired(self) -> None:
        self._expiry = None
        self._ask_sweep()

    def cancel_expiry(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None

    # --- reads ----------------------------------------------------------------------------------

    def about(self, kind: str, key: str) -> list[EventRecord]:
        """Every stored event about `key`, whichever life of the object (a synchronous
        read, like peek), oldest write first."""
        return self._records(kind, key, None)

    def this_life(self, kind: str, key: str) -> list[EventRecord]:
        """The events about the object stored under `key` now: those of its uid (a deleted
        namesake's are not shown, as kubectl describe selects by involvedObject.uid).
        With no object there, every event about the key. Oldest write first."""
        current = self._objects.get(kind, {}).get(key)
        return self._records(kind, key, current.meta.uid if current is not None else None)

    def _records(self, kind: str, key: str, uid: str | None) -> list[EventRecord]:
        stored = self._objects["Event"]
        keys = dict.fromkeys(self._event_index.of_object(kind, key))
        for corr, k in self._recorded.items():  # this turn's, not committed yet (a read after a tell sees it)
            if corr[1] == kind and (f"{corr[2]}/{corr[3]}" if corr[2] else corr[3]) == key:
                keys.pop(k, None)
                keys[k] = None
        out = []
        for k in keys:
            ev = stored.get(k)
            if not isinstance(ev, Event) or (uid is not None and ev.involved_uid != uid):
                continue
            out.append(EventRecord(ev.type, ev.reason, ev.message, ev.last_seen, ev.involved_uid, ev.count,
                                   ev.first_seen, ev.source, ev.name))
        return out

