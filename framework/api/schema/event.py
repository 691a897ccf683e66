"""core/v1 Event's schema (upstream's ValidateEventCreate for a core/v1 event without
eventTime: the fields' types, and an event about a namespaced object lives in that
object's namespace)."""
from __future__ import annotations

from typing import Any, Mapping

from framework.api.schema.common import object_meta
from framework.api.schema.types import Ctx, Int, Obj, Str, Time, join
from framework.api.validation import invalid

OBJECT_REFERENCE = Obj({k: Str() for k in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion",
                                            "fieldPath")})


def _same_namespace(event: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    meta, inv = event.get("metadata"), event.get("involvedObject")
    if not isinstance(meta, dict) or not isinstance(inv, dict):
        return
    involved = inv.get("namespace")
    if isinstance(involved, str) and involved and involved != (meta.get("namespace") or "default"):
        ctx.add(invalid(join(path, "involvedObject.namespace"), involved, "does not match event.namespace"))


EVENT = Obj({
    "metadata": object_meta(),
    "involvedObject": OBJECT_REFERENCE,
    "reason": Str(), "message": Str(), "type": Str(),
    "source": Obj({"component": Str(), "host": Str()}),
    "firstTimestamp": Time(), "lastTimestamp": Time(), "count": Int(32),
    "eventTime": Str(), "series": Obj({"count": Int(32), "lastObservedTime": Str()}),
    "action": Str(), "related": OBJECT_REFERENCE, "reportingComponent": Str(), "reportingInstance": Str(),
}, checks=(_same_namespace,))
