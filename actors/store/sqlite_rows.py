"""Reading the SQLite store's rows at start-up, whatever they hold (issue 19).

A row is used only when its kind and key are UTF-8 text, its resource_version an
integer in 1..MAX_RESOURCE_VERSION, its body UTF-8 JSON of an object with
metadata that names the row's kind and key, and the object no larger than the
object limit (its msgpack encoding, as the store counts it on write). Any other row is handed back as unreadable
(kind, key, why): the store quarantines it (a log line naming it and a Warning
event) and serves the rest; the row stays in the file until a write to the same
name replaces it. SQLite's own decoding is never asked for text (the rows are read
with text as bytes), so a non-UTF-8 value cannot raise half-way through the rows.

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
from framework.api.groups import kind_key
from framework.api.objects import KINDS

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

@dataclass(frozen=True, slots=True)
class _Row:
    kind: str
    key: str
    names_ok: bool  # kind and key are UTF-8 text
    rv: Any
    size: int | None  # the body's length (None: no body)
    body: Any  # bytes; None when there is none or it is too large to read


_SELECT = ("SELECT kind, key, resource_version, length(body), CASE WHEN length(body) <= ? THEN body END "
           "FROM objects ORDER BY resource_version")


def usable_version(value: Any, lowest: int = 1) -> int | None:
    """`value` if it is an integer resourceVersion the store can go on from."""
    if type(value) is not int or not lowest <= value <= MAX_RESOURCE_VERSION:
        return None
    return value


def load_rows(conn: sqlite3.Connection, max_object_bytes: int | None) -> LoadedState:
    """Every usable object, the rows that are not, and the resourceVersion to go on from.
    Text comes back as bytes while this runs (SQLite never decodes it)."""
    factory = conn.text_factory
    conn.text_factory = bytes
    try:
        return _load(conn, max_object_bytes)
    finally:
        conn.text_factory = factory


def _load(conn: sqlite3.Connection, limit: int | None) -> LoadedState:
    state = LoadedState()
    # length() counts characters of text (at most its bytes): above the cap is over the limit.
    cap = limit * JSON_PER_MSGPACK_MAX + _SLACK if limit else MAX_RESOURCE_VERSION
    small = limit // MSGPACK_PER_JSON_MAX if limit else MAX_RESOURCE_VERSION
    top = 0
    for kind, key, rv, size, body in conn.execute(_SELECT, (cap,)):
        version = usable_version(rv)
        if version is not None:
            top = max(top, version)
            if type(body) is bytes and len(body) <= small:  # the common case, checked at once
                try:
                    names = (kind.decode(), key.decode())  # UTF-8, or the checks below say why not
                    raw = json.loads(body.decode())
                except (ValueError, AttributeError, RecursionError):
                    raw = None
                if type(raw) is dict and type(raw.get("metadata", {})) is dict and _names(raw) == names:
                    raw.setdefault("metadata", {})["resourceVersion"] = str(version)
                    state.objects.append(raw)
                    continue
        row = _Row(_text(kind), _text(key), _utf8(kind) and _utf8(key), rv, size, body)
        raw, why = _object(row, version, limit)
        if raw is None:
            state.unreadable.append((row.kind, row.key, why))
            continue
        raw.setdefault("metadata", {})["resourceVersion"] = str(version)
        state.objects.append(raw)
    state.resource_version = _meta_version(conn, top)
    return state


def _object(row: _Row, version: int | None, limit: int | None) -> tuple[dict[str, Any] | None, str]:
    """The row's object, or None and why the store cannot use it."""
    if not row.names_ok:
        return None, "kind or key is not UTF-8 text"
    if version is None:
        return None, (f"resource_version {_shown(row.rv)} ({_sql_type(row.rv)}) is not an integer "
                      f"from 1 to {MAX_RESOURCE_VERSION}")
    if not isinstance(row.body, bytes):
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
    named = _names(raw)
    if named != (row.kind, row.key):
        # Served under the body's name, a delete of it would leave this row to bring it back.
        return None, f"the body is {named[0]} {named[1]}, not the row's {row.kind} {row.key}"
    if limit and len(row.body) * MSGPACK_PER_JSON_MAX > limit:
        size = encoded_size(raw)
        if size > limit:
            return None, f"object is {size} bytes, above the limit of {limit} bytes"
    return raw, ""


def _names(raw: dict[str, Any]) -> tuple[str, str]:
    """(kind, key) as the store files the object: "namespace/name", or "name" for a
    cluster-scoped kind."""
    kind, meta = kind_key(raw), raw.get("metadata") or {}
    name, ns = meta.get("name"), meta.get("namespace") or "default"
    cls = KINDS.get(kind) if isinstance(kind, str) else None
    return str(kind), str(name) if cls is not None and not cls.namespaced else f"{ns}/{name}"


def _sql_type(value: Any) -> str:
    return {int: "integer", float: "real", bytes: "text", type(None): "null"}.get(type(value), "blob")


def _shown(value: Any) -> str:
    return repr(_text(value)) if isinstance(value, bytes) else repr(value)


def _utf8(value: Any) -> bool:
    if not isinstance(value, bytes):
        return True
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _meta_version(conn: sqlite3.Connection, top: int) -> int:
    row = conn.execute("SELECT value FROM meta WHERE name = 'resource_version'").fetchone()
    if row is None:
        return top
    value = usable_version(row[0], lowest=0)
    if value is not None:
        return max(top, value)
    log.warning("the store's meta resource_version %s (%s) is unreadable; rebuilt as %d from the rows",
                _shown(row[0]), _sql_type(row[0]), top)
    try:
        conn.execute("UPDATE meta SET value = ? WHERE name = 'resource_version'", (top,))
    except sqlite3.OperationalError as exc:  # a full disk: the next load rebuilds it again
        log.warning("could not write the rebuilt meta resource_version: %s", exc)
    return top
