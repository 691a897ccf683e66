"""The SQLite store's small commits: written on the event loop's thread, made durable
by a helper process that fsyncs the write-ahead log (issue 26, h26-churn5).

Why (docs/decisions.md, "Small commits on the loop's thread, the WAL's fsync in a
helper process"): a commit handed to the writer thread costs the loop two hand-overs
of the interpreter lock and two thread wake-ups (the loop waits for the writer to
begin, the writer waits for the lock to report its end), about as much as the
commit itself when it is one bind. A batch of a few rows takes SQLite ~20-30 us of
CPU, less than the hand-over; what takes time is the fsync, and an fsync needs no
interpreter at all.

So a small batch is written by the loop's own connection, with PRAGMA
synchronous=NORMAL (in WAL mode: the commit writes its frames to the log, no fsync;
checkpoints still sync the log before copying it and the database after), and is
durable once the helper, a separate process with no interpreter lock to share, has
fsynced the log file: what synchronous=FULL does inside the commit. It is answered
(callers, watchers) only after that, as every commit was. A kill -9 of the daemon
loses nothing it acknowledged (the helper acknowledged the fsync first), and a write
the daemon made but did not acknowledge may be there or not, as before.

The helper reads one byte per request from its stdin, fsyncs the log (one fsync for
every request read at once: they share it) and writes one byte per request back, `k`
durable or `e` failed (its stderr, the daemon's, says why). The loop reads the
answers when its selector says they are there (`add_reader`); `finish` may also block
for them.
"""
from __future__ import annotations

import asyncio
import collections
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from actors.store.messages import Unavailable

_HELPER = r"""
import os, sys
path = sys.argv[1]
while True:
    try:
        data = os.read(0, 65536)
    except InterruptedError:
        continue
    if not data:
        break
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        answer = b"k"
    except OSError as e:
        print(f"ksched store: fsync of {path} failed: {e}", file=sys.stderr, flush=True)
        answer = b"e"
    os.write(1, answer * len(data))
"""


class SyncedCommit:
    """A batch SQLite has written to the log; durable once the helper has fsynced it
    (the StartedCommit shape of actors/store/local_commit.py)."""

    __slots__ = ("_sync", "_error", "landed", "started_at", "expected_seconds", "seconds", "_on_success",
                 "_on_landed", "_timed")

    def __init__(self, sync: "WalSync", expected: float, on_success: Callable[[], None],
                 on_landed: Callable[[], None] | None, timed: Callable[[float], None]) -> None:
        self._sync = sync
        self._error: Exception | None = None
        self.landed = False  # the helper has answered
        self.started_at = time.perf_counter()
        self.expected_seconds = expected
        self.seconds = 0.0
        self._on_success = on_success
        self._on_landed = on_landed
        self._timed = timed  # the store's expected commit time follows this one

    def finish(self) -> None:
        """Block until the helper has answered; raise if the log is not known durable."""
        while not self.landed:
            self._sync.wait_answer()
        self._timed(self.seconds)
        if self._error is not None:
            raise self._error
        self._on_success()

    def land(self, error: Exception | None) -> None:
        self.seconds = time.perf_counter() - self.started_at
        self._error = error
        self.landed = True
        if self._on_landed is not None:
            self._on_landed()


class WalSync:
    """The helper process that fsyncs one SQLite write-ahead log, and the commits
    waiting for it (in request order: it answers in order)."""

    def __init__(self, wal: Path) -> None:
        self.wal = wal
        self._proc: subprocess.Popen[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: collections.deque[SyncedCommit] = collections.deque()
        self.failed: str | None = None  # once an fsync failed, the log's state is unknown: no commit is durable
        self.requests = 0  # fsyncs asked for (stats, tests)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def request(self, commit: SyncedCommit) -> None:
        """Ask for the log to be fsynced; `commit` lands when the helper answers."""
        proc = self._started()
        self._waiting.append(commit)
        self.requests += 1
        try:
            os.write(proc.stdin.fileno(), b"s")  # type: ignore[union-attr]
        except OSError as e:  # the helper is gone: fail what waits, start afresh next time
            self._lost(f"the fsync helper is gone ({e})")

    def wait_answer(self) -> None:
        """Block until the helper has answered at least once (or is gone)."""
        proc = self._proc
        if proc is None:
            self._fail_all(Unavailable(f"store commit failed: {self.failed or 'no fsync helper'}"))
            return
        select.select([proc.stdout], [], [])  # type: ignore[list-item]
        self._read()

    def _started(self) -> subprocess.Popen[bytes]:
        loop = asyncio.get_running_loop()
        if self._proc is None:
            self._proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _HELPER, str(self.wal)],
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True)
            os.set_blocking(self._proc.stdout.fileno(), False)  # type: ignore[union-attr]
        if self._loop is not loop:
            self._unwatch()
            loop.add_reader(self._proc.stdout.fileno(), self._read)  # type: ignore[union-attr]
            self._loop = loop
        return self._proc

    def _read(self) -> None:
        proc = self._proc
        if proc is None:
            return
        try:
            data = os.read(proc.stdout.fileno(), 4096)  # type: ignore[union-attr]
        except BlockingIOError:
            return
        except OSError as e:
            data, why = b"", str(e)
        else:
            why = "the fsync helper ended"
        if not data:
            self._lost(why)
            return
        for answer in data:
            commit = self._waiting.popleft()
            if answer != ord("k"):
                self.failed = f"the fsync of {self.wal} failed; restart the daemon to read back what is on disk"
            commit.land(Unavailable(f"store commit failed: {self.failed}") if self.failed else None)

    def _lost(self, why: str) -> None:
        """The helper ended (killed?): a new one fsyncs what waits for it. The log
        holds those commits already (the page cache outlives the helper), so failing
        them would leave rows in the file that the store took back."""
        self._unwatch()
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
        if not self._waiting:
            return
        try:
            proc = self._started()
            os.write(proc.stdin.fileno(), b"s" * len(self._waiting))  # type: ignore[union-attr]
        except OSError as e:
            self.failed = f"no fsync helper for {self.wal} ({why}; {e})"
            self._fail_all(Unavailable(f"store commit failed: {self.failed}"))

    def _fail_all(self, err: Exception) -> None:
        while self._waiting:
            self._waiting.popleft().land(err)

    def _unwatch(self) -> None:
        if self._loop is not None and self._proc is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._proc.stdout.fileno())  # type: ignore[union-attr]
        self._loop = None

    def close(self) -> None:
        """End the helper once it has answered everything asked (its stdin closed)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(proc.stdout.fileno())  # type: ignore[union-attr]
        self._loop = None
        proc.stdin.close()  # type: ignore[union-attr]
        os.set_blocking(proc.stdout.fileno(), True)  # type: ignore[union-attr]
        rest = proc.stdout.read() if self._waiting else b""  # type: ignore[union-attr]
        proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        for answer in rest:
            if self._waiting:
                self._waiting.popleft().land(None if answer == ord("k") else Unavailable("store commit failed: fsync"))
        self._fail_all(Unavailable("store commit failed: the store closed"))
