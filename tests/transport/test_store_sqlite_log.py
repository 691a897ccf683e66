"""The SQLite store's write-ahead log stays bounded under a stream of small commits: it is
checkpointed into the database file and started again, never grown with every commit
(a design tried at the eleventh wave's merge grew it by ~30 MB a second)."""
from __future__ import annotations

import asyncio
import shutil
import sqlite3

from actors.store import Store
from actors.store.sqlite import SQLiteBackend
from tests.actors.store_helpers import pod, serving


async def test_small_commits_keep_the_log_near_sqlites_checkpoint_size_and_the_database_file_holds_them(tmp_path):
    backend = SQLiteBackend(tmp_path)
    async with serving(Store(backend)) as (_, client):
        for start in range(0, 1600, 4):
            await asyncio.gather(*(client.create(pod(f"p{i}")) for i in range(start, start + 4)))
        wal_bytes = (tmp_path / "store.db-wal").stat().st_size
        alone = tmp_path / "db-without-log"
        alone.mkdir()
        shutil.copy(tmp_path / "store.db", alone / "store.db")  # the database file alone, not its log
        in_database = sqlite3.connect(alone / "store.db").execute("SELECT count(*) FROM objects").fetchone()[0]
    assert wal_bytes < 1_200 * 4_120, wal_bytes  # about SQLite's 1,000 pages and a commit's, not the history
    assert in_database > 0
    with sqlite3.connect(tmp_path / "store.db") as conn:  # the store closed: the database and its log
        assert conn.execute("SELECT count(*) FROM objects WHERE kind = 'Pod'").fetchone()[0] == 1600
