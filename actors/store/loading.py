"""The Store's start: reading the backend's objects, and leaving out (quarantining)
those that can no longer be used. `load_objects` is handed what it fills (the store's
objects by kind) and its backend, not the Store: called once by Store.load before
the store serves anything, which then takes the resource version and tells the
quarantine events (`quarantine_event`).

Only shapes are checked (types, widths, quantities, nesting): what an older version
accepted stays served and counted, unknown fields included."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping

from actors.store.backend import StoreBackend
from actors.store.fields import name_of
from actors.store.messages import RecordEvent
from actors.store.reads import key_of as _key
from actors.store.sharing import share_containers
from framework.api.errors import ValidationError
from framework.api.groups import kind_key
from framework.api.objects import KubeObject, parse_object
from framework.api.schema import admitted


@dataclass(frozen=True, slots=True, kw_only=True)
class Loaded:
    """What loading found besides the objects: the backend's resource version, and
    each stored object left out, (kind, key, why), in the order found."""

    resource_version: int
    quarantined: list[tuple[str, str, str]]


log = logging.getLogger("ksched.store")


async def load_objects(backend: StoreBackend, max_object_bytes: int,
                       objects: Mapping[str, dict[str, KubeObject]]) -> Loaded:
    """Read the backend's objects into `objects` (by kind, then key)."""
    state = await backend.load_all(max_object_bytes=max_object_bytes)
    found: Any = state.objects
    quarantined: list[tuple[str, str, str]] = []
    for i, raw in enumerate(found):
        if isinstance(found, list):
            found[i] = None  # the decoded dict goes once the store has its own copy
        try:
            # Shapes only: what an older version accepted stays served and counted.
            checked, errors = admitted(raw, strict=False, semantic=False)
            if errors:
                raise errors[0]
            if isinstance(checked, dict) and checked.get("kind") == "Pod":
                share_containers(checked)  # as at creation (the backend's dicts are one per object)
            obj = parse_object(checked)
        except ValidationError as e:
            quarantined.append(_quarantined(raw, str(e)))
            continue
        objects[obj.kind][obj.key] = obj
    for kind, key, why in state.unreadable:
        quarantined.append(_quarantined({"kind": kind}, why, key))
    return Loaded(resource_version=state.resource_version, quarantined=quarantined)


def _quarantined(raw: Any, why: str, key: str = "") -> tuple[str, str, str]:
    """A stored object that no longer validates, left out of the store (it stays in
    the backend until a write replaces it), with a log line."""
    kind = str(kind_key(raw) or raw.get("kind")) if isinstance(raw, Mapping) else "?"
    named = name_of(raw)
    key = key or (_key(kind, *named) if named is not None else "?")
    log.warning("quarantined stored %s %s: %s", kind, key, why)
    return kind, key, why


def quarantine_event(kind: str, key: str, why: str) -> RecordEvent:
    """The Warning event told of a quarantined object (written by the store's first turn)."""
    return RecordEvent(kind=kind, key=key, type="Warning", reason="Quarantined",
                       message=f"stored {kind} {key} is not valid and is not served: {why}")
