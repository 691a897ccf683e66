"""Identical parts of different stored objects kept once.

Stored raw dicts are never changed in place (a new version copies what it
changes), so a part two objects hold equal can be one object. Pods made from one
template carry the same `spec.containers` (in a small pod, about a third of its
raw dict): the store keeps one list for all of them. Bounded, and keyed by a
typed form of the value, so 1, 1.0 and True (equal in Python) are never merged.
"""
from __future__ import annotations

from typing import Any, Hashable

MAX_SHARED = 4096

_CONTAINERS: dict[Hashable, list[Any]] = {}


def frozen(value: Any) -> Hashable:
    """A hashable form of a JSON value that only an identical value shares (the
    store checks nesting depth before, so the recursion is bounded)."""
    t = type(value)
    if t is dict:
        return (dict, tuple((k, frozen(v)) for k, v in value.items()))
    if t is list:
        return (list, tuple(frozen(v) for v in value))
    return (t, value)


def share_containers(raw: dict[str, Any]) -> None:
    """Make `raw["spec"]["containers"]` the shared equal list when there is one.
    `raw` and its spec must be the store's own, not yet stored (they are changed)."""
    spec = raw.get("spec")
    containers = spec.get("containers") if type(spec) is dict else None
    if type(containers) is not list or not containers:
        return
    key = frozen(containers)
    shared = _CONTAINERS.get(key)
    if shared is None:
        if len(_CONTAINERS) >= MAX_SHARED:
            _CONTAINERS.clear()
        _CONTAINERS[key] = containers
    elif shared is not containers:
        spec["containers"] = shared
