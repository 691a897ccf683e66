"""Fields the server owns, filled by the Store as an API server fills them.

- A new object gets metadata.uid (a UUID) and metadata.creationTimestamp (the
  store's clock, whole seconds, RFC 3339) unless the writer set them, and a
  metadata.name from metadata.generateName plus five random characters when it has
  no name (upstream's names.SimpleNameGenerator).
- A replaced object (apply of an existing name, update) keeps its uid and
  creationTimestamp, its status, and a pod the spec fields the server set
  (nodeName from binding; priority, priorityClassName and preemptionPolicy from
  priority admission), whenever the new manifest leaves them out: applying the
  same file twice never unbinds a pod, forgets why it waits, or reads as a change
  to an immutable pod spec.

Both functions take the raw manifest as the writer sent it and return a new dict
(the input is not changed); anything not shaped like an object is returned as is,
for validation to reject naming the field.
"""
from __future__ import annotations

import random
import uuid
from typing import Any, Mapping

from framework.api.timeutil import format_time

# k8s.io/apimachinery/pkg/util/rand: no vowels (no words), no confusable 0/1/3.
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATED_SUFFIX = 5
MAX_GENERATE_NAME_PREFIX = 63 - GENERATED_SUFFIX
POD_SPEC_SERVER_FIELDS = ("nodeName", "priority", "priorityClassName", "preemptionPolicy")


def _meta(raw: Any) -> Mapping[str, Any] | None:
    if not isinstance(raw, Mapping):
        return None
    meta = raw.get("metadata")
    return meta if isinstance(meta, Mapping) else None


def name_of(raw: Any) -> tuple[str, str] | None:
    """(namespace, name) a manifest names, or None when it names nothing usable."""
    meta = _meta(raw)
    if meta is None:
        return None
    name, ns = meta.get("name"), meta.get("namespace") or "default"
    if not isinstance(name, str) or not name or not isinstance(ns, str):
        return None
    return ns, name


def for_new_object(raw: Any, now_s: float, rand: random.Random) -> Any:
    meta = _meta(raw)
    if meta is None:
        return raw
    m = dict(meta)
    prefix = m.get("generateName")
    if not m.get("name") and isinstance(prefix, str) and prefix:
        suffix = "".join(rand.choice(NAME_ALPHABET) for _ in range(GENERATED_SUFFIX))
        m["name"] = prefix[:MAX_GENERATE_NAME_PREFIX] + suffix
    if not m.get("uid"):
        m["uid"] = str(uuid.uuid4())
    if not m.get("creationTimestamp"):
        m["creationTimestamp"] = format_time(int(now_s) * 1_000_000_000)
    return {**raw, "metadata": m}


def for_replacement(raw: Any, current: Mapping[str, Any]) -> Any:
    meta = _meta(raw)
    if meta is None:
        return raw
    out, m = dict(raw), dict(meta)
    have_meta = current.get("metadata") or {}
    for f in ("uid", "creationTimestamp"):
        if not m.get(f) and have_meta.get(f):
            m[f] = have_meta[f]
    out["metadata"] = m
    if "status" not in raw and "status" in current:
        out["status"] = current["status"]
    spec, have_spec = raw.get("spec"), current.get("spec") or {}
    if current.get("kind") == "Pod" and isinstance(spec, Mapping):
        kept = {f: have_spec[f] for f in POD_SPEC_SERVER_FIELDS
                if spec.get(f) in (None, "") and have_spec.get(f) not in (None, "")}
        if kept:
            out["spec"] = {**spec, **kept}
    return out
