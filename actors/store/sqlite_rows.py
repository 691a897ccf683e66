"""Reading the SQLite store's rows at start-up, whatever they hold (issue 19).

A row is used only when its kind and key are UTF-8 text, its resource_version an
integer in 1..MAX_RESOURCE_VERSION, its body UTF-8 JSON of an object with
metadata, and the object no larger than the object limit (its msgpack encoding,
as the store counts it on write). Any other row is handed back as unreadable
(kind, key, why): the store quarantines it (a log line naming it and a Warning
event) and serves the rest; the row stays in the file until a write to the same
name replaces it. SQLite's own decoding is never asked for text (every column is
read as bytes), so a non-UTF-8 value cannot raise half-way through the rows.

The meta table's resource_version, when it is not such an integer, is rebuilt
from the highest resource_version among the rows (quarantined ones included:
versions must never go back) and written back, with a log line.
"""
from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass
from typing import Any

from actors.store.backend import LoadedState
from actors.store.raw import encoded_size

log = logging.getLogger("ksched.store")

# Above this a resourceVersion leaves too little room for later writes (2^63 - 1
# is SQLite's largest integer: a row there made every later write fail).
MAX_RESOURCE_VERSION = 2**62
# A body's JSON is at most 6 times its msgpack encoding (a control character
# escaped as \u0000) and at least a third of it (a float takes 9 bytes in msgpack,
# "0.0," 4 in JSON): bodies above 6x the limit are over it without reading them,
# bodies below a third of it are within it without encoding them.
JSON_PER_MSGPACK_MAX = 6
MSGPACK_PER_JSON_MAX = 3
_SLACK = 64

_SELECT = ("SELECT CAST(kind AS BLOB), CAST(key AS BLOB), resource_version, typeof(resource_version), "
           "length(CAST(body AS BLOB)), CASE WHEN length(CAST(body AS BLOB)) <= ? THEN CAST(body AS BLOB) END "
           "FROM objects ORDER BY resource_version")


@dataclass(frozen=True, slots=True)
class _Row:
    kind: str
    key: str
    rv: Any
    rv_type: str
    size: int | None  # the body's length in bytes (None: no body)
    body: bytes | None  # None when there is none or it is too large to read


def usable_version(value: Any, sql_type: str, lowest: int = 1) -> int | None:
    """`value` if it is an integer resourceVersion the store can go on from."""
    if sql_type != "integer" or not isinstance(value, int) or not lowest <= value <= MAX_RESOURCE_VERSION:
        return None
    return value


def load_rows(conn: sqlite3.Connection, max_object_bytes: int | None) -> LoadedState:
    """Every usable object, the rows that are not, and the resourceVersion to go on from."""
    state = LoadedState()
    cap = max_object_bytes * JSON_PER_MSGPACK_MAX + _SLACK if max_object_bytes else 2**62
    top = 0
    for kind_b, key_b, rv, rv_type, size, body in conn.execute(_SELECT, (cap,)):
        row = _Row(_text(kind_b), _text(key_b), rv, rv_type, size, body)
        version = usable_version(rv, rv_type)
        if version is not None:
            top = max(top, version)
        raw, why = _object(row, version, max_object_bytes)
        if raw is None:
            state.unreadable.append((row.kind, row.key, why))
            continue
        raw.setdefault("metadata", {})["resourceVersion"] = str(version)
        state.objects.append(raw)
    state.resource_version = _meta_version(conn, top)
    return state


def _object(row: _Row, version: int | None, limit: int | None) -> tuple[dict[str, Any] | None, str]:
    """The row's object, or None and why the store cannot use it."""
    if "\ufffd" in row.kind or "\ufffd" in row.key:
        return None, "kind or key is not UTF-8 text"
    if version is None:
        return None, (f"resource_version {row.rv!r} ({row.rv_type}) is not an integer "
                      f"from 1 to {MAX_RESOURCE_VERSION}")
    if row.body is None:
        return None, ("no body" if row.size is None
                      else f"object is {row.size} bytes, above the limit of {limit} bytes")
    try:
        raw = json.loads(row.body.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "body is not UTF-8 text"
    except (ValueError, TypeError, RecursionError):
        raw = None
    if not isinstance(raw, dict) or not isinstance(raw.get("metadata", {}), dict):
        return None, "not a JSON object with metadata"
    if limit and len(row.body) * MSGPACK_PER_JSON_MAX > limit:
        size = encoded_size(raw)
        if size > limit:
            return None, f"object is {size} bytes, above the limit of {limit} bytes"
    return raw, ""


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _meta_version(conn: sqlite3.Connection, top: int) -> int:
    row = conn.execute("SELECT CASE WHEN typeof(value) = 'integer' THEN value ELSE CAST(value AS BLOB) END, "
                       "typeof(value) FROM meta WHERE name = 'resource_version'").fetchone()
    if row is None:
        return top
    value = usable_version(row[0], row[1], lowest=0)
    if value is not None:
        return max(top, value)
    log.warning("the store's meta resource_version %r (%s) is unreadable; rebuilt as %d from the rows",
                _text(row[0]), row[1], top)
    try:
        conn.execute("UPDATE meta SET value = ? WHERE name = 'resource_version'", (top,))
    except sqlite3.OperationalError as exc:  # a full disk: the next load rebuilds it again
        log.warning("could not write the rebuilt meta resource_version: %s", exc)
    return top
