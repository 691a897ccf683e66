"""core/v1 Events as the REST API serves them: a read-only view of the store's event
log (Scheduled, FailedScheduling, Preempted, ...), built on each list. Each record
becomes an Event about its object, with the object's current uid, named
`<object>.<sequence in hex>`, with kube's involvedObject.* field selectors.
(Events become stored objects in their own change; this view then goes.)
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from framework.api.timeutil import format_time
from transport.kube.resources import api_version_of
from transport.kube.status import bad_request

EVENT_FIELDS = frozenset({"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                          "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                          "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
                          "metadata.name", "metadata.namespace"})
COMPONENT = "default-scheduler"


def event_object(seq: int, kind: str, key: str, rec: Any, uid: str) -> dict[str, Any]:
    ns, _, name = key.rpartition("/")
    when = format_time(int(rec.time) * 1_000_000_000)
    return {
        "kind": "Event", "apiVersion": "v1",
        "metadata": {"name": f"{name}.{seq:x}", "namespace": ns or "default", "uid": f"event-{seq}",
                     "resourceVersion": str(seq), "creationTimestamp": when},
        "involvedObject": {"kind": kind, "namespace": ns, "name": name, "uid": uid,
                           "apiVersion": api_version_of(kind)},
        "reason": rec.reason, "message": rec.message, "type": rec.type,
        "source": {"component": COMPONENT}, "reportingComponent": COMPONENT, "reportingInstance": "",
        "firstTimestamp": when, "lastTimestamp": when, "count": 1,
    }


def _value(event: Mapping[str, Any], field: str) -> str:
    if field.startswith("involvedObject."):
        return str((event.get("involvedObject") or {}).get(field.split(".", 1)[1], ""))
    if field.startswith("metadata."):
        return str((event.get("metadata") or {}).get(field.split(".", 1)[1], ""))
    if field == "source":
        return str((event.get("source") or {}).get("component", ""))
    return str(event.get(field, ""))


def event_filter(field_selector: str) -> Callable[[Mapping[str, Any]], bool]:
    """A predicate for kube's event field selectors (`=`, `==`, `!=`, comma = AND).
    describe node sends `involvedObject.namespace=` (empty) for cluster-scoped objects."""
    terms: list[tuple[str, bool, str]] = []
    for part in filter(None, field_selector.split(",")):
        for op in ("!=", "==", "="):
            if op in part:
                field, value = part.split(op, 1)
                break
        else:
            raise bad_request(f"invalid selector: '{field_selector}'; can't understand '{part}'")
        if field not in EVENT_FIELDS:
            raise bad_request(f'"{field}" is not a known field selector: only "{", ".join(sorted(EVENT_FIELDS))}"')
        terms.append((field, op != "!=", value))
    return lambda ev: all((_value(ev, f) == v) == eq for f, eq, v in terms)


def list_events(records: list[tuple[int, str, str, Any]], uid_of: Callable[[str, str], str], namespace: str,
                field_selector: str) -> list[dict[str, Any]]:
    keep = event_filter(field_selector)
    out = []
    for seq, kind, key, rec in records:
        ev = event_object(seq, kind, key, rec, uid_of(kind, key))
        if namespace and ev["metadata"]["namespace"] != namespace:
            continue
        if keep(ev):
            out.append(ev)
    return out
