"""Reading a SQLite store's file back with a connection of its own, for the backend's tests."""
from __future__ import annotations

import sqlite3
from pathlib import Path


def objects_and_meta(data_dir: Path) -> tuple[list[tuple], tuple | None]:
    """The objects table's rows (kind, key, resourceVersion, body) in key order, and the
    meta row holding the store's resourceVersion (None when it was never written)."""
    db = sqlite3.connect(data_dir / "store.db")
    try:
        rows = db.execute("SELECT kind, key, resource_version, body FROM objects ORDER BY kind, key").fetchall()
        top = db.execute("SELECT value FROM meta WHERE name = 'resource_version'").fetchone()
    finally:
        db.close()
    return rows, top
