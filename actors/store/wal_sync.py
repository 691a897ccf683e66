"""The SQLite store's small commits: written on the event loop's thread, made durable
by a sync of the write-ahead log, done by a helper process or, when the helper has
not answered by the time the loop needs the answer, by the loop's own thread
(issue 26, h26-churn5, h26-inline).

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
durable once the log file has been synced: what synchronous=FULL does inside the
commit. It is answered (callers, watchers) only after that, as every commit was. A
kill -9 of the daemon loses nothing it acknowledged, and a write the daemon made but
did not acknowledge may be there or not, as before.

Who syncs. The helper, a separate process with no interpreter lock to share, is
asked at once, so the sync runs while the loop does other work (the scheduler's
cycle for the pod a delete freed) and the loop never blocks for it. But on a machine
whose cores are busy the helper's answer is late: it waits for a CPU to read the
request, and again to answer once its sync has returned, and the loop waits for a
CPU to read the answer. So the turn loop waits for the answer only as long as the
helper's answers took lately (`expected_seconds`: the median of its last round
trips), or until a new message makes it join the commit; when it joins a commit still
unanswered (`SyncedCommit.finish`), the loop's thread fdatasyncs the log itself, a
blocking call that holds no interpreter lock, and tells a helper that has not read
the requests yet (`d` after them): a helper that then reads requests all followed by
a `d` answers them without a sync of its own. A sync is `fdatasync`, as SQLite's own in FULL mode.

The protocol: one byte `s` a request, `d` when the loop has synced everything asked
so far; one byte back a request, `k` synced, `c` covered by the loop's sync, `e`
failed (the helper's stderr, the daemon's, says why). The helper syncs once for every
request it reads at once. The loop reads the answers when its selector says they are
there (`add_reader`) or when it joins a commit.
"""
from __future__ import annotations

import array
import asyncio
import collections
import fcntl
import os
import select
import statistics
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Callable

from actors.store.messages import Unavailable
from actors.store.sqlite_writer import FIRST_EXPECTED_SECONDS, MAX_EXPECTED_SECONDS

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
    asked = data.count(b"s")
    if not asked:
        continue
    if data.find(b"s", data.rfind(b"d") + 1) < 0:
        answer = b"c"  # every request here came before the loop's own fsync: it is durable
    else:
        try:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fdatasync(fd)  # what SQLite itself calls to sync its log (strace: fdatasync)
            finally:
                os.close(fd)
            answer = b"k"
        except OSError as e:
            print(f"ksched store: fsync of {path} failed: {e}", file=sys.stderr, flush=True)
            answer = b"e"
    os.write(1, answer * asked)
"""


# How many of the helper's recent round trips the expected time is the median of: one
# that waited for a CPU (several ms under load) moves it little, and a slower disk or a
# busier machine moves it within a few commits.
_TIMES_KEPT = 9


class SyncedCommit:
    """A batch SQLite has written to the log; durable once the log has been fsynced
    (the StartedCommit shape of actors/store/local_commit.py)."""

    __slots__ = ("_sync", "_error", "landed", "started_at", "expected_seconds", "seconds", "_on_success",
                 "_on_landed")

    def __init__(self, sync: "WalSync", on_success: Callable[[], None],
                 on_landed: Callable[[], None] | None) -> None:
        self._sync = sync
        self._error: Exception | None = None
        self.landed = False  # known durable (or failed)
        self.started_at = time.perf_counter()
        self.expected_seconds = sync.expected_seconds
        self.seconds = 0.0
        self._on_success = on_success
        self._on_landed = on_landed

    def finish(self) -> None:
        """Block until the log is synced (by the helper, or here when the helper has
        not answered); raise if it is not known durable."""
        if not self.landed:
            self._sync.settle()
        while not self.landed:
            self._sync.wait_answer()
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
    """The helper process that syncs one SQLite write-ahead log, the loop's own sync
    when the helper is late, and the commits waiting (in request order: the helper
    answers in order; a commit the loop's fsync landed keeps its place until the
    helper's answer for it is read)."""

    def __init__(self, wal: Path) -> None:
        self.wal = wal
        self._proc: subprocess.Popen[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: collections.deque[SyncedCommit] = collections.deque()
        self._times: collections.deque[float] = collections.deque([FIRST_EXPECTED_SECONDS], maxlen=_TIMES_KEPT)
        self.expected_seconds = FIRST_EXPECTED_SECONDS  # the median of the helper's recent round trips
        self.failed: str | None = None  # once an fsync failed, the log's state is unknown: no commit is durable
        self.requests = 0  # fsyncs asked for (stats, tests)
        self.helper_fsyncs = 0  # requests the helper answered with its own fsync
        self.covered = 0  # requests the helper answered as covered by the loop's fsync
        self.loop_fsyncs = 0  # syncs the loop's thread did because the helper had not answered when it joined a commit

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def request(self, commit: SyncedCommit) -> None:
        """Ask for the log to be fsynced; `commit` lands when that is done."""
        proc = self._started()
        self._waiting.append(commit)
        self.requests += 1
        try:
            os.write(proc.stdin.fileno(), b"s")  # type: ignore[union-attr]
        except OSError as e:  # the helper is gone: fail what waits, start afresh next time
            self._lost(f"the fsync helper is gone ({e})")

    def settle(self) -> None:
        """The loop needs the waiting commits now (the turn loop joins one): read the
        answers already there; for what is still unanswered, fdatasync the log here
        rather than wait for the helper (under load it waits for a CPU to read the
        request, and again to answer after its own sync)."""
        self._read()
        proc = self._proc
        if proc is not None and any(not c.landed for c in self._waiting):
            self._fsync_here(proc)

    def _fsync_here(self, proc: subprocess.Popen[bytes]) -> None:
        """fdatasync the log on the loop's thread (no interpreter lock held meanwhile)
        and land every commit asked so far: their frames were written before this call.
        A helper that has not read those requests yet is told first, so that it answers
        them without a sync of its own; one that has read them is not written to (it is
        syncing, and a note would only wake it again)."""
        unread = array.array("i", [0])
        try:
            fcntl.ioctl(proc.stdin.fileno(), termios.FIONREAD, unread)  # type: ignore[union-attr]
            if unread[0] > 0:
                os.write(proc.stdin.fileno(), b"d")  # type: ignore[union-attr]
        except OSError:
            pass  # the helper is gone: its answers are not needed for these
        self.loop_fsyncs += 1
        try:
            fd = os.open(self.wal, os.O_RDONLY)
            try:
                os.fdatasync(fd)  # what SQLite itself calls to sync its log (strace: fdatasync)
            finally:
                os.close(fd)
        except OSError as e:
            self.failed = f"the fsync of {self.wal} failed ({e}); restart the daemon to read back what is on disk"
            error: Exception | None = Unavailable(f"store commit failed: {self.failed}")
        else:
            error = None
        for commit in self._waiting:
            if not commit.landed:
                commit.land(error)

    def wait_answer(self) -> None:
        """Block until the helper has answered at least once (or is gone)."""
        proc = self._proc
        if proc is None:
            self._fail_all(Unavailable(f"store commit failed: {self.failed or 'no fsync helper'}"))
            return
        select.select([proc.stdout], [], [])  # type: ignore[list-item]
        self._read()

    def _timed(self, seconds: float) -> None:
        """The helper answered `seconds` after the request. Only the helper's round trips
        count: the loop's own syncs begin when the window has passed and end sooner when
        the helper's sync was under way (counting them would shrink the window until
        the loop synced every commit itself, losing the overlap)."""
        self._times.append(seconds)
        self.expected_seconds = min(MAX_EXPECTED_SECONDS, statistics.median(self._times))

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
            self._answered(answer)

    def _answered(self, answer: int) -> None:
        """The helper's answer to the oldest request."""
        commit = self._waiting.popleft()
        if answer == ord("e"):
            self.failed = f"the fsync of {self.wal} failed; restart the daemon to read back what is on disk"
        elif answer == ord("c"):
            self.covered += 1
        else:
            self.helper_fsyncs += 1
        if commit.landed:  # the loop's own fsync landed it already
            return
        if self.failed is None:
            self._timed(time.perf_counter() - commit.started_at)
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
        self._waiting = collections.deque(c for c in self._waiting if not c.landed)  # the new helper answers these
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
            commit = self._waiting.popleft()
            if not commit.landed:
                commit.land(err)

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
                self._answered(answer)
        self._fail_all(Unavailable("store commit failed: the store closed"))
