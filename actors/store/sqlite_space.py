"""A full disk under the SQLite store: logged once per episode, and a reserve that
lets deletes commit while it lasts (issue 19).

- An episode starts at the first commit SQLite refuses as full (SQLITE_FULL: the
  disk, or a PRAGMA max_page_count cap) and ends at the next commit of anything
  but deletes that succeeds; each end is logged once. Writes in between answer
  Unavailable (retryable), as before.
- The reserve is a file of `reserve_bytes` real blocks beside the database
  (posix_fallocate). A batch of deletes the disk refuses releases it, checkpoints
  the WAL into the database and truncates it, and is tried once more: SQLite needs
  room to delete (WAL frames), and a full disk usually holds a WAL that could not
  be checkpointed because the database file could not grow; the reserve's room
  lets that checkpoint finish, and truncating the WAL gives its blocks back. The
  pages the deletes free inside the file are reused by later writes. The reserve
  is made again once a commit succeeds with room for it.

Every method runs on the backend's SQLite thread.
"""
from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

log = logging.getLogger("ksched.store")

RESERVE_FILE = "store.reserve"
# A checkpoint may need to grow the database by every committed frame of the WAL
# (SQLite checkpoints at 1,000 pages, 4 MiB, plus the batch that passed it): the
# reserve covers that and 4 MiB more for the batch.
DEFAULT_RESERVE_BYTES = 8 * 1024 * 1024
FILE_MODE = 0o600


def is_disk_full(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF == sqlite3.SQLITE_FULL
    return "full" in str(exc)


class DiskSpace:
    """The disk-full state of one store file and its reserve."""

    def __init__(self, data_dir: Path, db_path: Path, reserve_bytes: int = DEFAULT_RESERVE_BYTES) -> None:
        self.reserve_path = data_dir / RESERVE_FILE
        self.db_path = db_path
        self.reserve_bytes = reserve_bytes
        self.full = False
        self._made = False  # this store made (or found) the reserve and has not released it since

    def ensure_reserve(self) -> bool:
        """Make the reserve if it is missing and there is room; whether it exists.
        Called after every commit, on the writer thread and under the interpreter lock:
        once made, the reserve is known to exist until this store releases it (the data
        directory is the daemon's alone), so no stat and no pathlib a commit."""
        if self.reserve_bytes <= 0:
            return False
        if self._made:
            return True
        if self.reserve_path.exists():
            self._made = True
            return True
        try:
            fd = os.open(self.reserve_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except OSError:
            return False
        try:
            os.posix_fallocate(fd, 0, self.reserve_bytes)
            made = True
        except OSError:  # no room (yet): tried again after a later commit
            made = False
        finally:
            os.close(fd)
        if not made:
            self.reserve_path.unlink(missing_ok=True)
        self._made = made
        return made

    def release_reserve(self) -> bool:
        """Give the reserve's blocks back to the disk; whether there was one."""
        self._made = False
        try:
            self.reserve_path.unlink()
        except FileNotFoundError:
            return False
        log.warning("store: released the %d-byte disk reserve so that deletes can commit while %s is full",
                    self.reserve_bytes, self.db_path)
        return True

    def make_room(self, conn: sqlite3.Connection) -> None:
        """Before retrying a batch of deletes the full disk refused: the reserve's
        blocks back to the disk, and the WAL checkpointed and truncated."""
        self.release_reserve()
        try:
            busy, frames, moved = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            log.warning("store: checkpointing %s to make room failed: %s", self.db_path, exc)
            return
        if busy or frames != moved:
            log.warning("store: the checkpoint of %s could not finish (%d of %d WAL frames moved)",
                        self.db_path, moved, frames)

    def refused(self, exc: sqlite3.Error) -> None:
        """A commit failed because the disk (or the page cap) is full."""
        if not self.full:
            self.full = True
            log.error("store: the disk holding %s is full (SQLite: %s): writes answer Unavailable until space "
                      "is freed; deletes still commit", self.db_path, exc)

    def committed(self, deletes_only: bool) -> None:
        """A commit succeeded: the episode ends once anything but deletes is stored."""
        if self.full and not deletes_only:
            self.full = False
            log.warning("store: %s has room again; writes are stored", self.db_path)
        if not self.full:
            self.ensure_reserve()
