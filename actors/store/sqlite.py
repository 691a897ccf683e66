"""SQLiteBackend: the daemon's durable StoreBackend (stdlib sqlite3, WAL mode).

One row per live object (kind, key) with its resourceVersion and JSON body, and
one row holding the highest resourceVersion a delete committed: with the live rows'
own, the highest ever committed, so versions keep increasing after deletes and
restarts (a batch of upserts leaves that row alone: its page is not written again).
Bindings are durable because a binding is the pod's own row (spec.nodeName,
PodScheduled condition).

Every call runs on one dedicated, long-lived thread (actors.store.sqlite_writer;
sqlite3 connections belong to the thread that opened them), so the event loop never
waits for the disk. A batch is one transaction, written by one statement (a temporary
view whose INSTEAD OF trigger deletes, upserts and moves the resourceVersion):
the store's whole batch becomes durable at once (group commit), or nothing does.
`start_commit(writes)` hands a batch over and returns at once (the turn loop prepares
its next turn meanwhile); the returned PendingCommit's `finish()` joins it.

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
import logging
import os
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from actors.store.backend import LoadedState, Write
from actors.store.messages import Unavailable
from actors.store.row_text import encode as _encode, row_text
from actors.store.sqlite_rows import load_rows
from actors.store.sqlite_space import DEFAULT_RESERVE_BYTES, DiskSpace, is_disk_full
from actors.store.sqlite_writer import PendingCommit, SQLiteWriter

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


# A batch's rows as JSON array parameters ([kind, key, rv, body text] each, [kind, key]
# for a delete), read by SQLite's json_each. The INSERT into the temporary view is the
# whole batch in one statement and one implicit transaction: its trigger deletes,
# upserts and raises the meta row's resourceVersion to the deletes' highest (`top`, NULL
# without deletes: an upsert's version stays in its row, and a later delete of the row
# has a higher one, so loading takes the highest of both), and SQLite commits (fsync) before the
# call returns, all without the interpreter lock (sqlite_writer.py says why that matters).
_BATCH_TRIGGER = """
CREATE TEMP VIEW IF NOT EXISTS batch (upserts, deletes, top) AS SELECT NULL, NULL, NULL;
CREATE TEMP TRIGGER IF NOT EXISTS write_batch INSTEAD OF INSERT ON batch BEGIN
    DELETE FROM objects WHERE (kind, key) IN
        (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(NEW.deletes));
    INSERT INTO objects (kind, key, resource_version, body)
        SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
               json_extract(value, '$[3]') FROM json_each(NEW.upserts) WHERE true
        ON CONFLICT (kind, key) DO UPDATE SET resource_version = excluded.resource_version, body = excluded.body;
    INSERT INTO meta (name, value) SELECT 'resource_version', NEW.top WHERE NEW.top IS NOT NULL
        ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value);
END;
"""
_WRITE_BATCH = "INSERT INTO batch (upserts, deletes, top) VALUES (?, ?, ?)"
# A small batch, one row of parameters per key (a NULL body deletes it and raises the
# meta row): still one statement and one transaction, the trigger run once per row.
_ROWS_TRIGGER = """
CREATE TEMP VIEW IF NOT EXISTS batch_rows (kind, key, rv, body) AS SELECT NULL, NULL, NULL, NULL;
CREATE TEMP TRIGGER IF NOT EXISTS write_row INSTEAD OF INSERT ON batch_rows BEGIN
    DELETE FROM objects WHERE NEW.body IS NULL AND kind = NEW.kind AND key = NEW.key;
    INSERT INTO objects (kind, key, resource_version, body)
        SELECT NEW.kind, NEW.key, NEW.rv, NEW.body WHERE NEW.body IS NOT NULL
        ON CONFLICT (kind, key) DO UPDATE SET resource_version = excluded.resource_version, body = excluded.body;
    INSERT INTO meta (name, value) SELECT 'resource_version', NEW.rv WHERE NEW.body IS NULL
        ON CONFLICT (name) DO UPDATE SET value = max(value, excluded.value);
END;
"""
# A batch of up to ROWS_MAX keys takes this statement; more take _WRITE_BATCH. Up to
# ROWS_EXACT keys a statement has one row a key; a larger batch takes the statement of
# the next size in ROWS_SIZES, its last row repeated to fill it (writing a key again
# with the same version and body, or deleting it again, changes nothing), so a daemon
# prepares and caches at most len(ROWS_SIZES) statements (~1 MB of SQLite's memory,
# within sqlite3's cache of 128) instead of one for every size.
ROWS_EXACT = 16
ROWS_SIZES = (*range(1, ROWS_EXACT + 1), 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256)
ROWS_MAX = ROWS_SIZES[-1]
_WRITE_ROWS = {n: "INSERT INTO batch_rows (kind, key, rv, body) VALUES " + ", ".join(["(?, ?, ?, ?)"] * n)
               for n in ROWS_SIZES}
_ROWS_SIZE = [0] + [next(size for size in ROWS_SIZES if size >= n) for n in range(1, ROWS_MAX + 1)]


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
        self._writer = SQLiteWriter()
        self._conn: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self.commits = 0  # batches committed, for group-commit tests and stats

    async def _run(self, fn: Callable[[], T]) -> T:
        return await self._writer.call(fn)

    # --- StoreBackend ---------------------------------------------------------------

    async def load_all(self, max_object_bytes: int | None = None) -> LoadedState:
        """Every usable row; rows that are not come back as `unreadable` (sqlite_rows)."""
        return await self._run(lambda: self._load_all_sync(max_object_bytes))

    async def commit(self, writes: Sequence[Write]) -> None:
        if not writes:
            return
        pending = self.start_commit(writes)
        await asyncio.sleep(pending.expected_seconds)  # the loop runs while the disk works
        pending.finish()

    def start_commit(self, writes: Sequence[Write], on_landed: Callable[[], None] | None = None) -> PendingCommit:
        """Hand the batch to the writer thread and return once SQLite has it (the
        event loop's thread encodes the rows: under the interpreter lock the writer
        would take the same time from it). `finish()` on the result joins it;
        `on_landed` is called on the writer thread when it has ended."""
        batch = _Batch.of(writes)
        return self._writer.start_commit(lambda pending: self._commit_sync(batch, pending), self._counted, on_landed)

    def _counted(self) -> None:
        self.commits += 1

    async def close(self) -> None:
        try:
            await self._run(self._close_sync)
        finally:
            self._writer.stop()

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
            conn.executescript(_BATCH_TRIGGER + _ROWS_TRIGGER)
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

    def _commit_sync(self, batch: "_Batch", pending: PendingCommit) -> None:
        conn = self._open()
        try:
            try:
                pending.begin()
                conn.execute(batch.sql, batch.params)
            except sqlite3.OperationalError as exc:
                if not (batch.deletes_only and is_disk_full(exc)):
                    raise
                self.space.make_room(conn)
                conn.execute(batch.sql, batch.params)
        except sqlite3.OperationalError as exc:
            if conn.in_transaction:  # SQLite rolls a failed statement's own transaction back; be sure
                conn.execute("ROLLBACK")
            # disk full, an I/O error, a locked file: say what SQLite said; a later batch may succeed
            if is_disk_full(exc):
                self.space.refused(exc)
            raise Unavailable(f"store commit failed: {exc}") from None
        self.space.committed(batch.deletes_only)

    def _close_sync(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor drops the flock
            self._lock_fd = None


@dataclass(frozen=True, slots=True)
class _Batch:
    """A batch as the one statement and its parameters: each key's last write (the same
    final rows as applying them in order), bodies as the JSON text `json.dumps` makes
    (row_text.py: `json.dumps(raw, separators=(",", ":"))`'s text, with less work).
    Up to ROWS_MAX rows are bound one value a parameter (`_WRITE_ROWS`: no JSON array
    around the bodies, encoded once and not parsed again by SQLite; past ROWS_EXACT the
    last row repeated up to the statement's size); more go as JSON arrays with the
    deletes' highest resourceVersion (`_WRITE_BATCH`)."""

    sql: str
    params: tuple[Any, ...]
    deletes_only: bool

    @classmethod
    def of(cls, writes: Sequence[Write]) -> "_Batch":
        last = {(w.kind, w.key): w for w in writes}
        deletes_only = all(w.raw is None for w in writes)
        if len(last) <= ROWS_MAX:  # each key's last write: a deleted key's delete is its highest version
            flat: list[Any] = []
            for w in last.values():
                flat += (w.kind, w.key, w.resource_version,
                         row_text(w.kind, w.raw) if w.raw is not None else None)
            size = _ROWS_SIZE[len(last)]
            if size > len(last):
                flat += flat[-4:] * (size - len(last))  # the last row again: the same final rows
            return cls(_WRITE_ROWS[size], tuple(flat), deletes_only)
        upserts = [[w.kind, w.key, w.resource_version, row_text(w.kind, w.raw)]
                   for w in last.values() if w.raw is not None]
        deletes = [[w.kind, w.key] for w in last.values() if w.raw is None]
        top = max((w.resource_version for w in last.values() if w.raw is None), default=None)
        up = _encode(upserts) if upserts else None
        down = _encode(deletes) if deletes else None
        return cls(_WRITE_BATCH, (up, down, top), deletes_only)
