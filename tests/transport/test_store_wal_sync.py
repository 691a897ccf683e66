"""Small SQLite commits are written on the loop's thread and made durable by a sync of
the write-ahead log (actors/store/wal_sync.py): the helper's, or the loop's own when the
helper has not answered (it waits for a CPU), which the helper then answers without a
sync of its own; a helper that dies is replaced without losing the commit that waited
for it, and a failed sync fails that commit and every later one.

Real SQLite files and a real helper process, held with SIGSTOP: no timing.
"""
from __future__ import annotations

import array
import asyncio
import fcntl
import os
import shutil
import signal
import sqlite3
import termios
from pathlib import Path

from actors.base import new_reply
from actors.store import Store
from actors.store.messages import Create, Unavailable
from actors.store.sqlite import SQLiteBackend
from tests.actors.store_helpers import pod, serving
from tests.transport.test_store_sqlite_overlap import committing


async def stored_names(path: Path) -> set[str]:
    reopened = SQLiteBackend(path)
    try:
        state = await reopened.load_all()
    finally:
        await reopened.close()
    return {o["metadata"]["name"] for o in state.objects}


async def answered_all(backend: SQLiteBackend) -> None:
    """Until the helper's answer to every request asked so far has been read (loop turns)."""
    while backend._sync._waiting:
        await asyncio.sleep(0)


def stop(pid: int) -> None:
    """SIGSTOP `pid` and return once it is stopped (a runnable process stops only when it
    next runs: until then it could still read its pipe)."""
    os.kill(pid, signal.SIGSTOP)
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
        os.sched_yield()


def unread_requests(backend: SQLiteBackend) -> int:
    unread = array.array("i", [0])
    fcntl.ioctl(backend._sync._proc.stdin.fileno(), termios.FIONREAD, unread)
    return unread[0]


async def test_a_commit_the_helper_has_not_answered_is_synced_by_the_loop_and_the_helper_then_skips_its_sync(tmp_path):
    backend = SQLiteBackend(tmp_path)
    async with serving(Store(backend)) as (_, client):
        await client.create(pod("p0"))  # starts the helper
        await answered_all(backend)
        helper = backend._sync.pid
        assert helper is not None and backend._sync.loop_fsyncs + backend._sync.helper_fsyncs >= 1
        before = backend._sync.loop_fsyncs
        stop(helper)  # as a helper that waits for a CPU: it cannot read its request
        try:
            created = await client.create(pod("p1"))  # answered once the loop's own fsync is done
            assert backend._sync.loop_fsyncs == before + 1
            assert unread_requests(backend) == 2  # its request and the loop's note that it is durable
        finally:
            os.kill(helper, signal.SIGCONT)
        covered = backend._sync.covered
        await answered_all(backend)
        assert backend._sync.covered == covered + 1  # answered without an fsync of its own
    assert created["metadata"]["resourceVersion"] == "2" and backend._sync.requests == 2
    assert await stored_names(tmp_path) == {"p0", "p1"}


async def test_a_helper_killed_while_a_commit_waits_for_it_is_replaced_and_the_commit_lands(tmp_path):
    backend = SQLiteBackend(tmp_path)
    async with serving(Store(backend)) as (store, client):
        await client.create(pod("p0"))
        helper = backend._sync.pid
        assert helper is not None
        os.kill(helper, signal.SIGSTOP)
        create = Create(obj=pod("p1"), reply=new_reply())
        store.tell(create)
        await committing(store, create)
        os.kill(helper, signal.SIGKILL)
        created = await create.reply  # fsynced by the loop, or by a new helper asked again
        await client.create(pod("p2"))
        assert backend._sync.pid not in (None, helper)  # a new helper serves the next commits
    assert created["metadata"]["name"] == "p1"
    assert await stored_names(tmp_path) == {"p0", "p1", "p2"}


async def test_a_failed_fsync_fails_its_commit_and_every_later_one_naming_the_log(tmp_path):
    backend = SQLiteBackend(tmp_path)
    async with serving(Store(backend)) as (_, client):
        await client.create(pod("p0"))
        backend._sync.close()
        backend._sync.wal = tmp_path / "no-such-log"  # the next helper's fsync cannot open it
        outcomes = []
        for name in ("p1", "p2"):
            outcomes += await asyncio.gather(client.create(pod(name)), return_exceptions=True)
    assert all(isinstance(o, Unavailable) for o in outcomes), outcomes
    assert "no-such-log failed" in str(outcomes[0]) and "restart the daemon" in str(outcomes[1])
    assert "p0" in await stored_names(tmp_path)


async def test_the_loops_small_commits_checkpoint_the_log_so_it_stays_bounded_and_the_database_holds_them(tmp_path):
    # SQLite's own period: a checkpoint after the commit that takes the log past 1,000
    # pages; the loop's connection is the only writer, so it completes and the log starts
    # again from its beginning instead of growing with every commit.
    backend = SQLiteBackend(tmp_path)
    async with serving(Store(backend)) as (_, client):
        for start in range(0, 1600, 4):
            await asyncio.gather(*(client.create(pod(f"p{i}")) for i in range(start, start + 4)))
        wal_bytes = (tmp_path / "store.db-wal").stat().st_size
        alone = tmp_path / "db-without-log"
        alone.mkdir()
        shutil.copy(tmp_path / "store.db", alone / "store.db")  # the database file alone, not its log
        in_database = sqlite3.connect(alone / "store.db").execute("SELECT count(*) FROM objects").fetchone()[0]
    assert wal_bytes < 1_200 * 4_120, wal_bytes  # about 1,000 pages and a commit's, never the whole history
    assert in_database > 0
    assert len(await stored_names(tmp_path)) == 1600
