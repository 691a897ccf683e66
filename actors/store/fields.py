"""Fields the server owns, filled by the Store as an API server fills them.

- A new object gets a new metadata.uid (a UUID), metadata.creationTimestamp (the
  store's clock, whole seconds, RFC 3339) and metadata.generation 1, whatever the
  writer set, and loses metadata.deletionTimestamp and deletionGracePeriodSeconds
  (upstream's rest.BeforeCreate and FillObjectMetaSystemFields; the store sets
  resourceVersion as it writes). It gets a metadata.name from
  metadata.generateName plus five random characters when it has no name
  (upstream's names.SimpleNameGenerator).
- A replaced object (apply of an existing name, update) keeps its uid,
  creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds and generation
  from the stored object whatever the manifest says (rest.BeforeUpdate); a
  manifest naming another uid is Invalid (`metadata.uid: field is immutable`), and
  generation moves by one when anything outside metadata and status changed, as
  upstream's strategies count spec changes. It keeps its status, and a pod the
  spec fields the server set (nodeName from binding; priority, priorityClassName
  and preemptionPolicy from priority admission), whenever the new manifest leaves
  them out: applying the same file twice never unbinds a pod, forgets why it
  waits, or reads as a change to an immutable pod spec.
- `as_given=True` (the conformance driver's store: WriteRules.server_fields off) keeps
  what the writer set and fills only what is missing: upstream's test objects are
  stored as written by a fake clientset (a terminating PVC, a chosen
  creationTimestamp that orders Coscheduling's groups).

Both functions take the raw manifest as the writer sent it and return a new dict
(the input is not changed); anything not shaped like an object is returned as is,
for validation to reject naming the field.
"""
from __future__ import annotations

import os
import random
from collections import deque
from functools import lru_cache
from collections.abc import Mapping
from typing import Any

from actors.store.messages import Invalid
from framework.api.timeutil import format_time
from framework.api.validation import invalid

# k8s.io/apimachinery/pkg/util/rand: no vowels (no words), no confusable 0/1/3.
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATED_SUFFIX = 5
MAX_GENERATE_NAME_PREFIX = 63 - GENERATED_SUFFIX
POD_SPEC_SERVER_FIELDS = ("nodeName", "priority", "priorityClassName", "preemptionPolicy")
# metadata the server owns: set on create, carried over from the stored object on update
SYSTEM_FIELDS = ("uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds")


def _meta(raw: Any) -> Mapping[str, Any] | None:
    if type(raw) is not dict and not isinstance(raw, Mapping):  # a plain dict skips the ABC's Python-level check
        return None
    meta = raw.get("metadata")
    return meta if type(meta) is dict or isinstance(meta, Mapping) else None


def name_of(raw: Any) -> tuple[str, str] | None:
    """(namespace, name) a manifest names, or None when it names nothing usable."""
    meta = _meta(raw)
    if meta is None:
        return None
    name, ns = meta.get("name"), meta.get("namespace") or "default"
    if not isinstance(name, str) or not name or not isinstance(ns, str):
        return None
    return ns, name


UIDS_PER_READ = 256
_UIDS: deque[str] = deque()  # made ahead, from one read of the system's random source
os.register_at_fork(after_in_child=_UIDS.clear)  # a child never hands out its parent's


def new_uid() -> str:
    """A random (version 4, RFC 4122 variant) UUID in its string form, as
    str(uuid.uuid4()) gives it from the same 16 random bytes of os.urandom, without
    the UUID object. The bytes are read for UIDS_PER_READ uids at once: os.urandom
    lets go of the interpreter lock, and the store's writer thread, when busy, then
    keeps it until its own next wait (two uids a pod: its own and its Scheduled
    event's). deque.popleft is atomic: no two callers get one uid."""
    try:
        return _UIDS.popleft()
    except IndexError:
        _UIDS.extend(_uids(os.urandom(16 * UIDS_PER_READ)))
        return _UIDS.popleft()


def _uids(random_bytes: bytes) -> list[str]:
    out = []
    for i in range(0, len(random_bytes), 16):
        b = bytearray(random_bytes[i:i + 16])
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        h = b.hex()
        out.append(f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
    return out


_SUFFIX_BITS = len(NAME_ALPHABET).bit_length()  # the bits random.Random's choice draws for an index


def generated_suffix(rand: random.Random) -> str:
    """GENERATED_SUFFIX characters of NAME_ALPHABET, each `rand.choice(NAME_ALPHABET)`.
    For a plain random.Random that is its _randbelow_with_getrandbits: getrandbits of the
    alphabet length's bit count, drawn again while not below the length; done so here, so
    the same seed makes the same names with one C call a draw instead of choice's four
    Python frames and calls (tests/actors/test_store_fields.py holds it to choice)."""
    if type(rand) is not random.Random:  # (a subclass may draw otherwise: ask it)
        return "".join([rand.choice(NAME_ALPHABET) for _ in range(GENERATED_SUFFIX)])
    bits, n = rand.getrandbits, len(NAME_ALPHABET)
    suffix = ""
    for _ in range(GENERATED_SUFFIX):
        r = bits(_SUFFIX_BITS)
        while r >= n:
            r = bits(_SUFFIX_BITS)
        suffix += NAME_ALPHABET[r]
    return suffix


def for_new_object(raw: Any, now_s: float, rand: random.Random, *, as_given: bool = False) -> Any:
    meta = _meta(raw)
    if meta is None:
        return raw
    m = dict(meta)
    prefix = m.get("generateName")
    if not m.get("name") and isinstance(prefix, str) and prefix:
        m["name"] = prefix[:MAX_GENERATE_NAME_PREFIX] + generated_suffix(rand)
    if not as_given:
        for f in SYSTEM_FIELDS:
            m.pop(f, None)
        m["generation"] = 1
    if not m.get("uid"):
        m["uid"] = new_uid()
    if not m.get("creationTimestamp"):
        m["creationTimestamp"] = _whole_seconds(int(now_s))
    return {**raw, "metadata": m}


def for_replacement(raw: Any, current: Mapping[str, Any], *, as_given: bool = False) -> Any:
    meta = _meta(raw)
    if meta is None:
        return raw
    out, m = dict(raw), dict(meta)
    have_meta = current.get("metadata") or {}
    if as_given:
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
    if not as_given:
        _keep_system_fields(out, m, current, have_meta)
    return out


def _keep_system_fields(out: Mapping[str, Any], m: dict[str, Any], current: Mapping[str, Any],
                        have_meta: Mapping[str, Any]) -> None:
    """rest.BeforeUpdate on the new object `out` (its metadata `m`): the stored
    object's system fields, generation one up when more than metadata and status
    changed."""
    uid = m.get("uid")
    if uid and uid != have_meta.get("uid"):
        err = invalid("metadata.uid", uid, "field is immutable")
        raise Invalid(str(err), err.field)
    for f in SYSTEM_FIELDS:
        if f in have_meta:
            m[f] = have_meta[f]
        else:
            m.pop(f, None)
    if any(out.get(k) != current.get(k) for k in set(out) | set(current) if k not in ("metadata", "status")):
        gen = have_meta.get("generation")
        m["generation"] = (gen if isinstance(gen, int) and not isinstance(gen, bool) else 1) + 1


@lru_cache(maxsize=64)
def _whole_seconds(seconds: int) -> str:
    """A creationTimestamp: the objects of a burst are created within a few seconds."""
    return format_time(seconds * 1_000_000_000)
