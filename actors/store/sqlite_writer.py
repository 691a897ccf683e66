"""The SQLite store's writer: one long-lived thread per store, and the hand-over of a
commit to it that does not fight the event loop for the interpreter lock.

Why a hand-over and not `run_in_executor` (docs/decisions.md, "A SQLite commit that
never waits for the interpreter lock"): a thread that wants the lock back while the
event loop's thread is busy waits until that thread is made to drop it, and an
asyncio loop that has work drops and retakes the lock at every `select(0)`, which
restarts the waiter's 5 ms clock each time. Measured on SchedulingBasic at 5,000
nodes, a two-row commit waited 115 ms for the lock to start and 530 ms more between
its statements. So the loop's thread hands the lock over itself, twice per commit:

- `start_commit` puts the job on the writer's queue and blocks (lock released)
  until the writer is about to enter SQLite, at most START_WAIT_SECONDS (a machine
  whose cores are all busy may not run the writer sooner: the loop goes on and the
  writer begins when `finish` blocks); the writer then runs the whole batch in
  one statement (a BEGIN, the rows and the COMMIT's fsync inside one C call that
  holds no lock), so the loop runs on while the disk works;
- `PendingCommit.finish` blocks (lock released) until the writer has returned from
  SQLite and recorded the outcome: at most the rest of the commit's time.

Other calls (load, close, tests' own statements) go through `call`, an asyncio
future resolved from the thread: they are rare and may wait for the lock.
"""
from __future__ import annotations

import _thread
import asyncio
import queue
import threading
import time
from typing import Any, Callable, TypeVar

T = TypeVar("T")

# How long a commit is expected to take before its first is timed: SQLite's fsync on a
# local disk (the turn loop lets the event loop run that long before it joins the commit).
FIRST_EXPECTED_SECONDS = 0.001
MAX_EXPECTED_SECONDS = 0.02  # the longest the turn loop overlaps one commit before it joins
# The longest the loop's thread waits for the writer to begin. On a quiet machine the
# writer begins within ~0.1 ms; on one whose cores are all busy it may first wait its
# turn of the CPU for several ms (7 ms a commit measured at a load of 10 on 2 cores),
# so the loop goes on after this: the writer begins when it gets the lock (at the
# latest when `finish` blocks).
START_WAIT_SECONDS = 0.001
_EWMA = 0.25  # weight of the newest commit in the expected time


class PendingCommit:
    """One batch handed to the writer. `finish()` blocks until it is durable (or
    raises what the commit raised); `expected_seconds` is how long commits took lately.

    The two hand-over points are bare locks (`_thread.allocate_lock`), held from the
    start and released once by the writer: waiting on one and releasing it run in C,
    so neither side runs Python (and wants the interpreter lock) to signal the other,
    as `threading.Event`'s condition variable did (docs/decisions.md, "The writer's
    hand-over on bare locks")."""

    __slots__ = ("_started", "_done", "_began", "_landed", "_error", "started_at", "seconds", "expected_seconds",
                 "_writer", "_on_success", "_on_landed")

    def __init__(self, writer: "SQLiteWriter", expected: float, on_success: Callable[[], None],
                 on_landed: Callable[[], None] | None = None) -> None:
        self._started = _held()  # released by the writer as it enters SQLite
        self._done = _held()  # released by the writer once the commit has ended
        self._began = False  # `_started` released (the writer's own flag)
        self._landed = False  # the commit has ended: set before `_done` is released
        self._error: BaseException | None = None
        self._writer = writer
        self.started_at = time.perf_counter()
        self.seconds = 0.0  # the writer's time in the commit, once finished
        self.expected_seconds = expected
        self._on_success = on_success
        self._on_landed = on_landed  # called on the writer once the commit has ended

    @property
    def landed(self) -> bool:
        """Whether the commit has ended (`finish` will not block)."""
        return self._landed

    def begin(self) -> None:
        """On the writer: about to enter SQLite (the loop's thread may take the lock)."""
        if not self._began:
            self._began = True
            self._started.release()

    def wait_begun(self, timeout: float) -> None:
        """On the loop's thread: until the writer has begun, at most `timeout` seconds."""
        if self._started.acquire(timeout=timeout):
            self._started.release()  # a later wait returns at once

    def finish(self) -> None:
        """Block until the commit has ended; raise its error, if any."""
        if not self._landed:
            self._done.acquire()  # released once, by the writer; `_landed` is set first
            self._done.release()
        self._writer.timed(self.seconds)
        if self._error is not None:
            raise self._error
        self._on_success()

    def _run(self, fn: Callable[["PendingCommit"], None]) -> None:
        t0 = time.perf_counter()
        try:
            fn(self)
        except BaseException as e:  # noqa: BLE001 - handed to the loop's thread by finish()
            self._error = e
        finally:
            self.seconds = time.perf_counter() - t0
            self.begin()  # a commit that failed before SQLite must not leave the loop waiting
            self._landed = True
            self._done.release()
            if self._on_landed is not None:
                self._on_landed()


def _held() -> Any:
    """A bare lock, already taken: the other thread's release is the signal."""
    lock = _thread.allocate_lock()
    lock.acquire()
    return lock


class SQLiteWriter:
    """The store's one SQLite thread: every call on the connection runs here, in order."""

    def __init__(self, name: str = "ksched-sqlite") -> None:
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)  # started by the first job
        self.expected_seconds = FIRST_EXPECTED_SECONDS

    def _put(self, job: Callable[[], None]) -> None:
        if self._thread.ident is None:  # not started yet (a stopped one is never restarted)
            self._thread.start()
        self._queue.put(job)

    def _serve(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            job()

    def start_commit(self, fn: Callable[[PendingCommit], None], on_success: Callable[[], None],
                     on_landed: Callable[[], None] | None = None) -> PendingCommit:
        """Hand `fn` (which calls `begin()` just before its SQLite call) to the writer
        and wait until it has begun (at most START_WAIT_SECONDS): the writer holds the
        lock only up to there.
        `on_success` runs on the loop's thread when `finish()` finds it durable;
        `on_landed` on the writer's, as soon as the commit has ended (it must only
        hand a wake-up to the loop: `call_soon_threadsafe`)."""
        pending = PendingCommit(self, self.expected_seconds, on_success, on_landed)
        self._put(lambda: pending._run(fn))
        if START_WAIT_SECONDS > 0:
            pending.wait_begun(START_WAIT_SECONDS)
        return pending

    def timed(self, seconds: float) -> None:
        """A commit took `seconds` on the writer: the expected time follows it."""
        self.expected_seconds = min(MAX_EXPECTED_SECONDS,
                                    (1 - _EWMA) * self.expected_seconds + _EWMA * seconds)

    def call(self, fn: Callable[[], T]) -> "asyncio.Future[T]":
        """Run `fn` on the writer; its result (or error) in a future of the running loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def settle(ok: bool, value: Any) -> None:
            if not future.done():
                (future.set_result if ok else future.set_exception)(value)

        def job() -> None:
            try:
                result: Any = fn()
                ok = True
            except BaseException as e:  # noqa: BLE001 - the caller's future carries it
                result, ok = e, False
            try:
                loop.call_soon_threadsafe(settle, ok, result)
            except RuntimeError:  # the loop closed meanwhile: nobody is waiting
                pass

        self._put(job)
        return future

    def stop(self) -> None:
        """Let the thread end after the jobs queued so far, and wait for it."""
        if self._thread.ident is not None:
            self._queue.put(None)
            self._thread.join()
