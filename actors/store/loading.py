"""The Store's start: reading the backend's objects, and leaving out (quarantining)
those that can no longer be used: functions over the Store actor's state, called
once by Store.load before the store serves anything.

Only shapes are checked (types, widths, quantities, nesting): what an older version
accepted stays served and counted, unknown fields included."""
from __future__ import annotations

import logging
from typing import Any, Callable, Mapping, Protocol

from actors.store.fields import name_of
from actors.store.messages import RecordEvent
from actors.store.reads import key_of as _key
from actors.store.sharing import share_containers
from framework.api.errors import ValidationError
from framework.api.groups import kind_key
from framework.api.objects import parse_object
from framework.api.schema import admitted



class LoadTarget(Protocol):
    """What loading fills in of the Store actor (actor.py): its objects, resource
    versions, watch history and quarantine, read from its backend."""

    backend: Any
    limits: Any
    quarantined: Any
    _objects: Any
    _rv: int
    _committed_rv: int
    _history: Any
    _sorted_keys: Any
    tell: Callable[..., Any]

log = logging.getLogger("ksched.store")


async def load_objects(store: LoadTarget) -> None:
    """Read the backend's objects."""
    state = await store.backend.load_all(max_object_bytes=store.limits.max_object_bytes)
    objects: Any = state.objects
    for i, raw in enumerate(objects):
        if isinstance(objects, list):
            objects[i] = None  # the decoded dict goes once the store has its own copy
        try:
            # Shapes only: what an older version accepted stays served and counted.
            checked, errors = admitted(raw, strict=False, semantic=False)
            if errors:
                raise errors[0]
            if isinstance(checked, dict) and checked.get("kind") == "Pod":
                share_containers(checked)  # as at creation (the backend's dicts are one per object)
            obj = parse_object(checked)
        except ValidationError as e:
            _quarantine(store, raw, str(e))
            continue
        store._objects[obj.kind][obj.key] = obj
    for kind, key, why in state.unreadable:
        _quarantine(store, {"kind": kind}, why, key)
    store._rv = store._committed_rv = state.resource_version
    store._history.reset(store._rv)
    store._sorted_keys.clear()

def _quarantine(store: LoadTarget, raw: Any, why: str, key: str = "") -> None:
    """Leave a stored object that no longer validates out of the store (it stays in
    the backend until a write replaces it), with a log line and a Warning event
    (written by the store's first turn)."""
    kind = str(kind_key(raw) or raw.get("kind")) if isinstance(raw, Mapping) else "?"
    named = name_of(raw)
    key = key or (_key(kind, *named) if named is not None else "?")
    store.quarantined[(kind, key)] = why
    log.warning("quarantined stored %s %s: %s", kind, key, why)
    store.tell(RecordEvent(kind=kind, key=key, type="Warning", reason="Quarantined",
                          message=f"stored {kind} {key} is not valid and is not served: {why}"))
