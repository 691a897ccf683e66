"""core/v1 Event as a stored kind: what the scheduler records about an object
(Scheduled, FailedScheduling, Preempted, ...), kept like every other kind and
registered in KINDS.

`Event` parses what the store reads of one: the involved object, the reason, type
and message, the count and the last time it was seen (the TTL runs from there, as
kube-apiserver's lease is renewed on every write). `correlation()` is what
client-go's EventCorrelator folds repeats by (the same source, object, type,
reason and message); `new_event` and `repeated` make the objects the store writes.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

from framework.api.errors import ValidationError
from framework.api.meta import KubeObject, ObjectMeta, _map, _str, slot_copier
from framework.api.objects import KINDS
from framework.api.timeutil import format_time, parse_time

COMPONENT = "default-scheduler"  # source.component and reportingComponent of the scheduler's events

Correlation = tuple[str, str, str, str, str, str, str, str]


class Event(KubeObject):
    __slots__ = ("involved_kind", "involved_namespace", "involved_name", "involved_uid", "reason", "type",
                 "message", "source", "count", "first_seen", "last_seen")
    kind = "Event"

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        inv = _map(raw, "involvedObject", "")
        self.involved_kind = _str(inv, "kind", "involvedObject")
        self.involved_namespace = _str(inv, "namespace", "involvedObject")
        self.involved_name = _str(inv, "name", "involvedObject")
        self.involved_uid = _str(inv, "uid", "involvedObject")
        self.reason = _str(raw, "reason", "")
        self.type = _str(raw, "type", "")
        self.message = _str(raw, "message", "")
        self.source = _str(_map(raw, "source", ""), "component", "source")
        count = raw.get("count")
        self.count = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1
        created = self.meta.creation_timestamp / 1e9
        self.first_seen = _seconds(raw.get("firstTimestamp") or raw.get("eventTime"), created)
        self.last_seen = _seconds(raw.get("lastTimestamp") or raw.get("eventTime"), self.first_seen)

    @classmethod
    def new(cls, raw: Mapping[str, Any], *, kind: str, namespace: str, involved_name: str, uid: str, type: str,
            reason: str, message: str, seen_ns: int) -> "Event":
        """The Event parsing `raw` gives, where `raw` is what `new_event` made of the same
        fields (seen once at `seen_ns`, the whole second it stamps) and the store then gave
        its uid and resourceVersion: built from the fields, nothing read back."""
        ev = object.__new__(cls)
        m = raw["metadata"]
        meta = ev.meta = ObjectMeta.made(name=m["name"], namespace=m["namespace"], uid=m.get("uid", ""),
                                         creation_timestamp=seen_ns)
        rv = m.get("resourceVersion")
        meta.resource_version = str(rv) if rv is not None else ""
        ev.raw, ev.name, ev.namespace, ev.labels = raw, meta.name, meta.namespace, meta.labels
        ev.key = f"{meta.namespace}/{meta.name}"
        ev.uid = meta.uid or ev.key
        ev.involved_kind, ev.involved_namespace, ev.involved_name, ev.involved_uid = kind, namespace, involved_name, uid
        ev.reason, ev.type, ev.message, ev.source, ev.count = reason, type, message, COMPONENT, 1
        ev.first_seen = ev.last_seen = seen_ns / 1e9
        return ev

    def seen_again(self, raw: Mapping[str, Any]) -> "Event":
        """This event as stored again from `raw`, which `repeated` made of it (count and
        lastTimestamp moved) and the store gave its resourceVersion: the fields
        that moved are read from `raw`, the others are this event's (what parsing
        `raw` whole would give: nothing else of it differs)."""
        again = _copy_event(self)
        again.raw = raw
        again.meta = self.meta.with_resource_version((raw.get("metadata") or {}).get("resourceVersion"))
        count = raw.get("count")
        again.count = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1
        again.last_seen = _seconds(raw.get("lastTimestamp") or raw.get("eventTime"), self.first_seen)
        return again

    @property
    def involved_key(self) -> str:
        """The store key of the object this event is about."""
        ns = self.involved_namespace
        return f"{ns}/{self.involved_name}" if ns else self.involved_name

    def correlation(self) -> Correlation:
        return (self.source, self.involved_kind, self.involved_namespace, self.involved_name, self.involved_uid,
                self.type, self.reason, self.message)


_copy_event = slot_copier(Event, (*KubeObject.__slots__, *Event.__slots__))


def _seconds(value: Any, default: float) -> float:
    if value is None:
        return default
    try:
        return parse_time(value, "lastTimestamp") / 1e9
    except ValidationError:
        return default


def correlation_of(kind: str, namespace: str, name: str, uid: str, type: str, reason: str,
                   message: str) -> Correlation:
    """An event the scheduler is about to record, as Event.correlation() reads a stored one."""
    return (COMPONENT, kind, namespace, name, uid, type, reason, message)


@lru_cache(maxsize=64)
def _stamp(second: int) -> str:
    """metav1.Time's text for a whole second (events of one second share it)."""
    return format_time(second * 1_000_000_000)


def new_event(*, name: str, kind: str, api_version: str, namespace: str, involved_name: str, uid: str,
              type: str, reason: str, message: str, now: float) -> dict[str, Any]:
    """A core/v1 Event as client-go's recorder makes one (name `<object>.<unix nanos in
    hex>`, the object's namespace, "default" for a cluster-scoped one), seen once now."""
    when = _stamp(int(now))
    involved = {"kind": kind, "namespace": namespace, "name": involved_name, "uid": uid, "apiVersion": api_version}
    if not namespace:
        del involved["namespace"]
    return {
        "kind": "Event", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": namespace or "default", "creationTimestamp": when},
        "involvedObject": involved,
        "reason": reason, "message": message, "type": type,
        "source": {"component": COMPONENT}, "reportingComponent": COMPONENT, "reportingInstance": "",
        "firstTimestamp": when, "lastTimestamp": when, "count": 1,
    }


def repeated(current: Event, now: float) -> dict[str, Any]:
    """`current` seen once more now: count + 1 and lastTimestamp (client-go's
    EventLogger updates the stored event so, keeping its name and first time)."""
    return {**current.raw, "count": current.count + 1, "lastTimestamp": _stamp(int(now))}


KINDS["Event"] = Event
