"""The Store actor: authoritative objects, validation, resourceVersion, durability, watch.

- actor.py      the Store actor (the only writer), holding its duties: turns.py (TurnLoop,
                LocalCommit), write_chain.py (+ strategies.py), reads.py, watchers.py,
                event_recorder.py; shared.py + etcd_commit.py for etcd
- messages.py   what it takes (Create, Apply, Bind, Watch, ...), WatchEvent, EventRecord, its errors
- client.py     StoreClient, the ref everyone else holds
- backend.py    the durability interface; memory.py and sqlite.py implement it
                (sqlite_rows.py: rows read and quarantined at load; sqlite_space.py: a full disk)
- admission.py  Priority admission (PriorityClass -> spec.priority)
- fields.py     server-owned fields (uid, creationTimestamp, generation, deletionTimestamp, generateName)
- raw.py        helpers over raw objects (describe, encoded_size, exact_encoding, set_condition)
- weights.py    what a write weighs (encoded_size) with less packing: remembered specs, pending pods
- select.py     label and field selectors for list and watch
"""
from actors.store.messages import (
    AlreadyExists, Conflict, EventRecord, Gone, Invalid, NotFound, StoreError, WatchEvent,
)
from actors.store.client import StoreClient
from actors.store.actor import Store

__all__ = ["AlreadyExists", "Conflict", "EventRecord", "Gone", "Invalid", "NotFound", "Store", "StoreClient",
           "StoreError", "WatchEvent"]
