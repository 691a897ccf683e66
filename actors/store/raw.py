"""Small pure helpers over raw (JSON-shaped) objects for the Store's write path:
naming an object of a batch in an error, comparing without resourceVersion,
writing into a stored section, setting a pod condition, and an object's size."""
from __future__ import annotations

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
    as null or a non-object is replaced, so a status write never fails on it)."""
    return dict(value) if isinstance(value, Mapping) else {}


def set_condition(status: dict[str, Any], cond: dict[str, Any]) -> None:
    have = status.get("conditions")
    conds = [c for c in (have if isinstance(have, list) else [])
             if isinstance(c, Mapping) and c.get("type") != cond["type"]]
    conds.append(cond)
    status["conditions"] = conds


def encoded_size(raw: Mapping[str, Any]) -> int:
    """An object's size as the wire and the size limit count it: its msgpack encoding."""
    return len(msgpack.packb(raw, use_bin_type=True))


__all__ = ["describe", "encoded_size", "section", "set_condition", "without_version"]
