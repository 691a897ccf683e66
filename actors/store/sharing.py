"""Identical parts of different stored objects kept once.

Stored raw dicts are never changed in place (a new version copies what it
changes), so a part two objects hold equal can be one object. Pods made from one
template carry the same `spec.containers` (in a small pod, about a third of its
raw dict): the store keeps one list for all of them. Bounded, and keyed by the
value's exact encoding (msgpack with exact types), so 1, 1.0 and True (equal in
Python) are never merged.
"""
from __future__ import annotations

from typing import Any

from actors.store.raw import exact_encoding
from actors.store.row_text import remember

MAX_SHARED = 4096

_CONTAINERS: dict[bytes, list[Any]] = {}


def exact_key(value: Any) -> bytes | None:
    """A key only an identical JSON value shares (msgpack keeps 1, 1.0 and True, str
    and bytes apart, and with strict_types takes no tuple or subclass); None for a
    value it cannot encode so (such a value is not shared)."""
    try:
        return exact_encoding(value)
    except (TypeError, ValueError, OverflowError):
        return None


def share_containers(raw: dict[str, Any]) -> None:
    """Make `raw["spec"]["containers"]` the shared equal list when there is one.
    `raw` and its spec must be the store's own, not yet stored (they are changed)."""
    spec = raw.get("spec")
    containers = spec.get("containers") if type(spec) is dict else None
    if type(containers) is not list or not containers:
        return
    key = exact_key(containers)
    if key is None:
        return
    shared = _CONTAINERS.get(key)
    if shared is None:
        if len(_CONTAINERS) >= MAX_SHARED:
            _CONTAINERS.clear()
        _CONTAINERS[key] = containers
        remember(containers)  # its row text, once (row_text.py)
    elif shared is not containers:
        spec["containers"] = shared
