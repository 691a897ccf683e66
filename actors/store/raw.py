"""Small pure helpers over raw (JSON-shaped) objects for the Store's write path:
naming an object of a batch in an error, comparing without resourceVersion,
writing into a stored section, setting a pod condition, and an object's size."""
from __future__ import annotations

import threading
from typing import Any, Mapping

import msgpack

from framework.api.groups import kind_key


def describe(raw: Any, index: int) -> str:
    """`objects[3] (Pod default/web-3)`: which object of a batch an error is about."""
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    name = "/".join(str(x) for x in (meta.get("namespace"), meta.get("name")) if x)
    kind = kind_key(raw)
    return f"objects[{index}] ({kind} {name})" if name else f"objects[{index}]"


def without_version(raw: Mapping[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (raw.get("metadata") or {}).items() if k != "resourceVersion"}
    return {**raw, "metadata": meta}


def section(value: Any) -> dict[str, Any]:
    """A stored object's section as a dict to write into (one an older version let in
    as null or a non-object is replaced, so a status write never fails on it). A
    plain dict, the usual section, skips `typing.Mapping`'s isinstance (the generic
    alias's check goes through two Python-level calls: 0.75 -> 0.2 us a call, two a bind)."""
    if type(value) is dict:
        return dict(value)
    return dict(value) if isinstance(value, Mapping) else {}


def set_condition(status: dict[str, Any], cond: dict[str, Any]) -> None:
    have = status.get("conditions")
    conds = [c for c in (have if isinstance(have, list) else [])
             if (type(c) is dict or isinstance(c, Mapping)) and c.get("type") != cond["type"]]
    conds.append(cond)
    status["conditions"] = conds


class _Packers(threading.local):
    """One reusable msgpack Packer of each kind per thread (the SQLite writer's thread
    weighs rows too): `msgpack.packb` builds a Packer for every call, 1.3 of its 2.0
    microseconds on a small pod; a Packer's output and its buffer after an error (it
    is emptied) are those of a fresh one."""

    def __init__(self) -> None:
        self.plain = msgpack.Packer(use_bin_type=True)
        self.exact = msgpack.Packer(use_bin_type=True, strict_types=True)


_PACKERS = _Packers()


def encoded_size(raw: Mapping[str, Any]) -> int:
    """An object's size as the wire and the size limit count it: its msgpack encoding
    (msgpack.packb(raw, use_bin_type=True)'s length). Packed with exact types first:
    for plain JSON types both Packers write the same bytes, and the exact one skips the
    subclass checks (a float check that walks a str's type for every str: ~17 % of a
    pod's packing). A value it refuses (a tuple, a subclass, what neither packs) is
    packed as before, which gives its length or raises as before."""
    try:
        return len(_PACKERS.exact.pack(raw))
    except Exception:  # noqa: BLE001 - the plain Packer below answers, or raises, as it always did
        return len(_PACKERS.plain.pack(raw))


def exact_encoding(value: Any) -> bytes:
    """msgpack.packb(value, use_bin_type=True, strict_types=True): raises as it does."""
    return _PACKERS.exact.pack(value)


__all__ = ["describe", "encoded_size", "exact_encoding", "section", "set_condition", "without_version"]
