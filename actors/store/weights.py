"""What a stored object weighs: its msgpack encoding's length (raw.encoded_size, the
size limit's and the watch history's measure), found with less packing for a pod.

A pod's spec is about half its encoding, and the pods of a template share one admitted
spec object (pod_specs.py), stored and never changed in place (the invariant the row
texts rest on too, row_text.py). Its length is packed once (`remember`) and kept with
the spec, which keeps it alive (its id is never another object's while it is kept):
a created pod packs only the rest (`weight`). A pod not bound yet is kept with its
length as stored (`PodLengths`), and its binding is weighed from it and the binding's
change, packing nothing.

msgpack writes a map as its header (fixmap below 16 entries, map16 below 2**16, map32)
and then each key and value in turn, so a dict's length is its header's, plus the
length of the same dict without one item, less that dict's header, plus the item's
key and value. A str is its UTF-8 bytes after a header (fixstr below 32 bytes, str8
below 2**8 with use_bin_type, str16 below 2**16, str32). Anything else (a spec not
weighed, a dict subclass, a node name not a str, a change not the usual one) is
packed whole, as before.
"""
from __future__ import annotations

from typing import Any

from actors.store.raw import encoded_size

MAX_WEIGHED = 8192  # parts kept with their length (the specs of templates); full: start afresh
_SPEC_ITEM = 5  # the key "spec": a fixstr header and four bytes

_RV_KEY = 16  # "resourceVersion"
_NODE_NAME_KEY = 9  # "nodeName"
# "conditions" and a list of one {"type": "PodScheduled", "status": "True"}: 11 + 1 + 1 + 5 + 13 + 7 + 5
_CONDITIONS_ITEM = 43
_ABSENT = object()

_PARTS: dict[int, Any] = {}  # id -> the part, kept alive
_LENGTHS: dict[int, int] = {}  # id -> its encoding's length
MAX_PENDING = 1 << 16  # pods kept with their length until their binding (PodLengths); full: start afresh


def map_header(n: int) -> int:
    return 1 if n < 16 else 3 if n < 0x10000 else 5


# A map of n items grows its header by two bytes with one item more when n is one of these
# (fixmap to map16, map16 to map32): `_GROWS.get(n, 0)`, a call fewer than two map_header's.
_GROWS = {15: 2, 0xFFFF: 2}


def str_length(s: str) -> int:
    """msgpack's length of a str (use_bin_type=True); a lone surrogate raises, as packing it does."""
    n = len(s) if s.isascii() else len(s.encode("utf-8"))
    return n + (1 if n < 32 else 2 if n < 0x100 else 3 if n < 0x10000 else 5)


def _keep(part: Any, length: int) -> None:
    if len(_PARTS) >= MAX_WEIGHED:
        _PARTS.clear()
        _LENGTHS.clear()
    _LENGTHS[id(part)] = length  # the length first: a part found in _PARTS has its own
    _PARTS[id(part)] = part


def remember(part: Any) -> None:
    """`part` is stored and never changed in place: keep its length (a part that cannot
    be packed is not kept)."""
    if _PARTS.get(id(part)) is part:
        return
    try:
        length = encoded_size(part)
    except Exception:  # noqa: BLE001 - not kept: its objects are packed whole, which says why
        return
    _keep(part, length)


class PodLengths:
    """The Store's pods not bound yet, each with its length as stored, until its binding:
    a binding's length is then the stored pod's and the binding's change (`bound`),
    packing nothing. Keyed by the pod's key, each write replacing the entry, the raw
    dict kept beside its length and asked by identity: a pod written since (or a write
    undone) is not the one kept, and is packed. Bounded: full, it starts afresh."""

    __slots__ = ("_raws", "_lengths")

    def __init__(self) -> None:
        self._raws: dict[str, dict[str, Any]] = {}
        self._lengths: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._raws)

    def stamped(self, raw: dict[str, Any], kind: str, key: str, rv: int, size: int) -> None:
        """The store's write of `raw` (`size`: its length as given): its metadata a new
        dict with resourceVersion `rv`, its kind set when missing. A pod not bound yet
        is then kept with its length as stored (`size` and the resourceVersion's change)."""
        given = raw.get("metadata")
        meta = dict(given or {})
        had = meta.get("resourceVersion", _ABSENT)
        text = meta["resourceVersion"] = str(rv)
        raw["metadata"] = meta
        if "kind" not in raw:
            raw["kind"] = kind
            if kind == "Pod":  # a key more at the top: packed at its binding
                self.drop(key)
            return
        if kind != "Pod":
            return
        spec = raw.get("spec")
        if type(given) is not dict or type(spec) is not dict or spec.get("nodeName"):
            self.drop(key)  # bound, or an odd shape: an older version kept is let go
            return
        try:
            if had is _ABSENT:  # one item more in the metadata
                size += _RV_KEY + str_length(text) + _GROWS.get(len(given), 0)
            elif type(had) is str:
                size += str_length(text) - str_length(had)
            else:
                self.drop(key)
                return
        except UnicodeError:  # a lone surrogate in the old one: packed at its binding
            self.drop(key)
            return
        if len(self._raws) >= MAX_PENDING:
            self._raws.clear()
            self._lengths.clear()
        self._lengths[key] = size  # the length first: a raw found in _raws has its own
        self._raws[key] = raw

    def drop(self, key: str) -> None:
        """Let go of the pod under `key` (deleted, or written in a form not kept): only
        its binding could use it, and a raw held past its pod's life is memory wasted."""
        self._raws.pop(key, None)
        self._lengths.pop(key, None)

    def bound(self, key: str, pod: dict[str, Any], base: dict[str, Any], node: str, status: dict[str, Any]
              ) -> int | None:
        """The length of the binding of the stored `pod` (pod_writes.bind: its `base`
        spec with nodeName `node`, its `status` with PodScheduled=True and no
        nomination, as written; every other value the stored one's), from the stored
        pod's kept length (dropped now: the bound pod is another); None when it is not
        kept or the change is not the usual one (then it is packed)."""
        length = self._lengths.pop(key, None)
        if self._raws.pop(key, None) is not pod or length is None:
            return None
        old = pod.get("status")
        if type(old) is not dict or pod.get("spec") is not base or "nodeName" in base or type(node) is not str:
            return None
        try:
            length += _NODE_NAME_KEY + str_length(node) + _GROWS.get(len(base), 0)
        except UnicodeError:
            return None
        if "conditions" in old or "nominatedNodeName" in old:
            return length + encoded_size(status) - encoded_size(old)
        return length + _CONDITIONS_ITEM + _GROWS.get(len(old), 0)


def weight(raw: Any) -> int:
    """`encoded_size(raw)`, raising as it does."""
    if type(raw) is dict:
        spec = raw.get("spec")
        if spec is not None and _PARTS.get(id(spec)) is spec:
            length = _LENGTHS.get(id(spec))
            if length is not None:
                rest = raw.copy()
                del rest["spec"]
                return encoded_size(rest) + _GROWS.get(len(rest), 0) + _SPEC_ITEM + length
    return encoded_size(raw)


__all__ = ["PodLengths", "map_header", "remember", "str_length", "weight"]
