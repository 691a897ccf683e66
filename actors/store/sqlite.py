"""SQLiteBackend: the daemon's durable StoreBackend (stdlib sqlite3, WAL mode).

One row per live object (kind, key) with its resourceVersion and JSON body, and
one row holding the highest resourceVersion ever committed, so versions keep
increasing after deletes and restarts. Bindings are durable because a binding is
the pod's own row (spec.nodeName, PodScheduled condition).

Every call runs on one dedicated thread (sqlite3 connections belong to the thread
that opened them), so the event loop never blocks on disk. `commit(writes)` is one
transaction: the store's whole batch becomes durable at once (group commit), or
nothing does.

A data directory is owned by one daemon at a time: an exclusive flock on the
directory itself, held open for the daemon's life and released by the kernel even
when the process is killed. No file in it can be deleted to defeat it (a lock
file could be). The directory is made 0700 and the store's files 0600 (SQLite
gives its -wal and -shm files the database's mode); a looser directory is
tightened, with a warning.

A commit SQLite refuses for a reason that may pass (disk full, I/O error, a busy
file) fails as Unavailable with SQLite's own message; the batch is rolled back
in memory and the next one is tried afresh. A full disk is logged once per
episode, and a reserve file lets batches of deletes commit while it lasts
(actors.store.sqlite_space); `disk_full` tells the store to give deletes turns
of their own meanwhile. Rows the store cannot use are quarantined at load
(actors.store.sqlite_rows).
"""
from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import sqlite3
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Sequence, TypeVar

from actors.store.backend import LoadedState, Write
from actors.store.messages import Unavailable
from actors.store.sqlite_rows import load_rows
from actors.store.sqlite_space import DEFAULT_RESERVE_BYTES, DiskSpace, is_disk_full

log = logging.getLogger("ksched.store")

T = TypeVar("T")

DB_FILE = "store.db"
DIR_MODE = 0o700
FILE_MODE = 0o600
SCHEMA_VERSION = 1
SYNCHRONOUS_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    resource_version INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
"""


# A batch's rows as one JSON array parameter ([kind, key, rv, body text] each), read
# by SQLite's json_each: one statement for every upsert, one for every delete.
_UPSERT_ROWS = (
    "INSERT INTO objects (kind, key, resource_version, body) "
    "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), "
    "json_extract(value, '$[3]') FROM json_each(?) WHERE true "
    "ON CONFLICT (kind, key) DO UPDATE SET resource_version = excluded.resource_version, body = excluded.body"
)
_DELETE_ROWS = (
    "DELETE FROM objects WHERE (kind, key) IN "
    "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))"
)


class DataDirLocked(RuntimeError):
    """Another process holds the data directory."""


class StoreUnreadable(RuntimeError):
    """The data directory holds something this version cannot read."""


class SQLiteBackend:
    """A StoreBackend (actors.store.backend) on one SQLite file under `data_dir`.

    `synchronous` is SQLite's PRAGMA synchronous: FULL (default) survives power
    loss; NORMAL survives a process crash (kill -9) but may lose the last commits
    on power loss, for more throughput. `reserve_bytes` is the disk reserve kept
    for deletes (0: none); `max_pages` caps the file (PRAGMA max_page_count), a
    full disk at that size (tests emulate one with it).
    """

    def __init__(self, data_dir: str | os.PathLike[str], *, synchronous: str = "FULL",
                 reserve_bytes: int = DEFAULT_RESERVE_BYTES, max_pages: int | None = None) -> None:
        if synchronous not in SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {', '.join(SYNCHRONOUS_MODES)}, got {synchronous!r}")
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / DB_FILE
        self.synchronous = synchronous
        self.max_pages = max_pages
        self.space = DiskSpace(self.data_dir, self.path, reserve_bytes)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ksched-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self.commits = 0  # batches committed, for group-commit tests and stats

    async def _run(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    # --- StoreBackend ---------------------------------------------------------------

    async def load_all(self, max_object_bytes: int | None = None) -> LoadedState:
        """Every usable row; rows that are not come back as `unreadable` (sqlite_rows)."""
        return await self._run(lambda: self._load_all_sync(max_object_bytes))

    async def commit(self, writes: Sequence[Write]) -> None:
        if not writes:
            return
        batch = list(writes)  # encoded on the sqlite thread: the event loop runs meanwhile
        await self._run(lambda: self._commit_sync(_rows(batch)))
        self.commits += 1

    async def close(self) -> None:
        try:
            await self._run(self._close_sync)
        finally:
            self._executor.shutdown(wait=True)

    # --- on the sqlite thread -------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        self.data_dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        self._lock_fd = os.open(self.data_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            self._lock_fd = None
            raise DataDirLocked(f"data directory {self.data_dir} is in use by another ksched process") from None
        self._restrict_modes()
        # isolation_level=None: we issue BEGIN/COMMIT ourselves, one transaction per batch.
        conn = sqlite3.connect(self.path, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.executescript(_SCHEMA)
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            elif version != SCHEMA_VERSION:
                raise StoreUnreadable(f"{self.path}: schema version {version} is not supported (expected {SCHEMA_VERSION})")
            if self.max_pages is not None:
                conn.execute(f"PRAGMA max_page_count={int(self.max_pages)}")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreUnreadable(f"{self.path}: {exc}") from None
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        self.space.ensure_reserve()
        return conn

    def _restrict_modes(self) -> None:
        """The store is the owner's alone: directory 0700, files 0600."""
        mode = stat.S_IMODE(os.stat(self._lock_fd).st_mode)  # type: ignore[arg-type]
        if mode & 0o077:
            log.warning("data directory %s had mode %04o; setting %04o", self.data_dir, mode, DIR_MODE)
            os.chmod(self._lock_fd, DIR_MODE)  # type: ignore[arg-type]
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE))  # SQLite's journals copy this mode
        for suffix in ("", "-wal", "-shm"):
            try:
                if stat.S_IMODE(os.stat(f"{self.path}{suffix}").st_mode) & 0o077:
                    os.chmod(f"{self.path}{suffix}", FILE_MODE)
            except FileNotFoundError:
                pass

    def _load_all_sync(self, max_object_bytes: int | None) -> LoadedState:
        return load_rows(self._open(), max_object_bytes)

    @property
    def disk_full(self) -> bool:
        """The last commit that was not only deletes found the disk full."""
        return self.space.full

    def _commit_sync(self, rows: list[tuple[str, str, int, str | None]]) -> None:
        conn = self._open()
        deletes_only = all(body is None for _, _, _, body in rows)
        try:
            try:
                self._write_rows(conn, rows)
            except sqlite3.OperationalError as exc:
                if not (deletes_only and is_disk_full(exc)):
                    raise
                self.space.make_room(conn)
                self._write_rows(conn, rows)
        except sqlite3.OperationalError as exc:
            # disk full, an I/O error, a locked file: say what SQLite said; a later batch may succeed
            if is_disk_full(exc):
                self.space.refused(exc)
            raise Unavailable(f"store commit failed: {exc}") from None
        self.space.committed(deletes_only)

    @staticmethod
    def _write_rows(conn: sqlite3.Connection, rows: list[tuple[str, str, int, str | None]]) -> None:
        """The batch in one transaction of at most four statements, whatever its size:
        each statement is one call into SQLite, and every call gives the interpreter
        lock back to the event loop's thread and waits to take it again (a statement
        per row made a 2,000-object apply 2,000 such hand-overs)."""
        top = max(rv for _, _, rv, _ in rows)
        last = {(kind, key): (kind, key, rv, body) for kind, key, rv, body in rows}  # each key's final state
        upserts = [[k, key, rv, body] for k, key, rv, body in last.values() if body is not None]
        deletes = [[k, key] for k, key, _, body in last.values() if body is None]
        conn.execute("BEGIN IMMEDIATE")
        try:
            if deletes:
                conn.execute(_DELETE_ROWS, (json.dumps(deletes, separators=(",", ":")),))
            if upserts:
                conn.execute(_UPSERT_ROWS, (json.dumps(upserts, separators=(",", ":")),))
            conn.execute(
                "INSERT INTO meta (name, value) VALUES ('resource_version', ?) "
                "ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value)",
                (top,),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite has already rolled back after some errors (SQLITE_FULL)
                conn.execute("ROLLBACK")
            raise

    def _close_sync(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor drops the flock
            self._lock_fd = None


def _rows(writes: Sequence[Write]) -> list[tuple[str, str, int, str | None]]:
    """The rows of a batch (a stored object is never changed in place, so another
    thread may read it)."""
    return [(w.kind, w.key, w.resource_version, None if w.raw is None else json.dumps(w.raw, separators=(",", ":")))
            for w in writes]
