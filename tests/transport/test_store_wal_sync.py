"""Small SQLite commits are written on the loop's thread and made durable by the fsync
helper process (actors/store/wal_sync.py): nothing is answered before the helper has
fsynced the write-ahead log, a helper that dies is replaced without losing the commit
that waited for it, and a failed fsync fails that commit and every later one.

Real SQLite files and a real helper process, held with SIGSTOP: no timing.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sqlite3
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


async def loop_turns(n: int = 50) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_a_small_commit_is_answered_only_once_the_helper_has_fsynced_the_log(tmp_path):
    backend = SQLiteBackend(tmp_path)
    async with serving(Store(backend)) as (store, client):
        await client.create(pod("p0"))  # starts the helper
        helper = backend._sync.pid
        assert helper is not None and backend._sync.requests == 1
        os.kill(helper, signal.SIGSTOP)
        try:
            create = Create(obj=pod("p1"), reply=new_reply())
            store.tell(create)
            await committing(store, create)
            await loop_turns()
            assert not create.reply.done()  # written to the log, not known durable: not answered
        finally:
            os.kill(helper, signal.SIGCONT)
        created = await create.reply
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
        created = await create.reply
        assert backend._sync.pid not in (None, helper)  # a new helper fsynced it
        await client.create(pod("p2"))
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


async def test_the_writer_thread_checkpoints_the_log_the_loops_small_commits_wrote(tmp_path):
    backend = SQLiteBackend(tmp_path)
    backend.checkpoint_every = 4
    async with serving(Store(backend)) as (_, client):
        for i in range(4):
            await client.create(pod(f"p{i}"))
        await backend._run(lambda: None)  # the writer's queue is in order: the checkpoint ran before this
        alone = tmp_path / "db-without-log"
        alone.mkdir()
        shutil.copy(tmp_path / "store.db", alone / "store.db")  # the database file alone, not its log
        in_database = sqlite3.connect(alone / "store.db").execute("SELECT count(*) FROM objects").fetchone()[0]
    assert in_database == 4
