"""SQLiteBackend: group commit, restart, all-or-nothing batches, one owner per data dir."""
from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from actors.store.backend import Write
from actors.store.sqlite import DataDirLocked, SQLiteBackend, StoreUnreadable


def node(name: str, rv: int) -> dict:
    return {"kind": "Node", "metadata": {"name": name, "resourceVersion": str(rv)},
            "status": {"allocatable": {"cpu": "4"}}}


def pod(name: str, rv: int, node_name: str = "") -> dict:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "resourceVersion": str(rv)},
            "spec": {"nodeName": node_name, "containers": [{"name": "c"}]}}


async def reopen(path: Path) -> tuple[list[dict], int]:
    backend = SQLiteBackend(path)
    try:
        state = await backend.load_all()
    finally:
        await backend.close()
    return state.objects, state.resource_version


async def test_an_empty_data_dir_loads_no_objects_and_version_zero(tmp_path):
    assert await reopen(tmp_path / "d") == ([], 0)


async def test_committed_objects_and_bindings_come_back_after_reopen(tmp_path):
    b = SQLiteBackend(tmp_path)
    await b.load_all()
    await b.commit([Write(kind="Node", key="n1", raw=node("n1", 1), resource_version=1),
                    Write(kind="Pod", key="default/p1", raw=pod("p1", 2), resource_version=2)])
    await b.commit([Write(kind="Pod", key="default/p1", raw=pod("p1", 3, "n1"), resource_version=3)])
    await b.close()

    objects, rv = await reopen(tmp_path)
    assert rv == 3
    assert [(o["kind"], o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in objects] == [
        ("Node", "n1", "1"), ("Pod", "p1", "3")]
    assert objects[1]["spec"]["nodeName"] == "n1"


async def test_a_delete_removes_the_object_but_the_version_never_goes_back(tmp_path):
    b = SQLiteBackend(tmp_path)
    await b.load_all()
    await b.commit([Write(kind="Node", key="n1", raw=node("n1", 1), resource_version=1)])
    await b.commit([Write(kind="Node", key="n1", raw=None, resource_version=2)])
    await b.close()
    assert await reopen(tmp_path) == ([], 2)


async def test_a_batch_that_fails_midway_leaves_nothing_of_itself(tmp_path):
    b = SQLiteBackend(tmp_path)
    await b.load_all()
    await b.commit([Write(kind="Node", key="n1", raw=node("n1", 1), resource_version=1)])
    bad = Write(kind=None, key="x", raw=node("x", 3), resource_version=3)  # type: ignore[arg-type]  # NOT NULL violation
    with pytest.raises(Exception):
        await b.commit([Write(kind="Node", key="n2", raw=node("n2", 2), resource_version=2), bad])
    assert b.commits == 1
    await b.close()
    objects, rv = await reopen(tmp_path)
    assert [o["metadata"]["name"] for o in objects] == ["n1"] and rv == 1


async def test_a_second_backend_on_the_same_data_dir_is_refused(tmp_path):
    first = SQLiteBackend(tmp_path)
    await first.load_all()
    second = SQLiteBackend(tmp_path)
    with pytest.raises(DataDirLocked, match="in use"):
        await second.load_all()
    await second.close()
    await first.close()
    assert await reopen(tmp_path) == ([], 0)  # the lock goes with the owner


async def test_a_commit_survives_kill_9_right_after_it_returns(tmp_path):
    script = textwrap.dedent(f"""
        import asyncio, os, signal
        from actors.store.backend import Write
        from actors.store.sqlite import SQLiteBackend
        async def main():
            b = SQLiteBackend({str(tmp_path)!r})
            await b.load_all()
            for i in range(1, 4):
                raw = {{"kind": "Node", "metadata": {{"name": f"n{{i}}"}}}}
                await b.commit([Write(kind="Node", key=f"n{{i}}", raw=raw, resource_version=i)])
            os.kill(os.getpid(), signal.SIGKILL)
        asyncio.run(main())
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2], timeout=30)
    assert proc.returncode == -signal.SIGKILL
    objects, rv = await reopen(tmp_path)
    assert [o["metadata"]["name"] for o in objects] == ["n1", "n2", "n3"] and rv == 3


def test_an_unknown_synchronous_mode_is_rejected_naming_the_choices(tmp_path):
    with pytest.raises(ValueError, match="FULL"):
        SQLiteBackend(tmp_path, synchronous="SOMETIMES")


async def test_a_file_that_is_not_a_database_is_reported_with_its_path(tmp_path):
    (tmp_path / "store.db").write_bytes(b"this is not sqlite" * 100)
    b = SQLiteBackend(tmp_path)
    with pytest.raises(StoreUnreadable, match="store.db"):
        await b.load_all()
    await b.close()


async def test_the_lock_holds_in_another_process_even_with_every_file_of_the_data_dir_deleted(tmp_path):
    first = SQLiteBackend(tmp_path / "data")
    await first.load_all()
    await first.commit([Write(kind="Node", key="n1", raw=node("n1", 1), resource_version=1)])
    for f in (tmp_path / "data").iterdir():
        f.unlink()
    script = textwrap.dedent(f"""
        import asyncio
        from actors.store.sqlite import DataDirLocked, SQLiteBackend
        async def main():
            b = SQLiteBackend({str(tmp_path / "data")!r})
            try:
                await b.load_all()
                print("opened")
            except DataDirLocked as e:
                print(e)
            await b.close()
        asyncio.run(main())
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2],
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip().endswith("is in use by another ksched process"), out.stderr
    await first.close()


async def test_the_data_dir_is_the_owners_alone(tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    for d in (tmp_path / "fresh", loose):
        b = SQLiteBackend(d)
        await b.load_all()
        await b.commit([Write(kind="Node", key="n1", raw=node("n1", 1), resource_version=1)])
        modes = {p.name: oct(p.stat().st_mode & 0o777) for p in d.iterdir()}
        await b.close()
        assert oct(d.stat().st_mode & 0o777) == "0o700"
        assert modes == {"store.db": "0o600", "store.db-wal": "0o600", "store.db-shm": "0o600", "store.reserve": "0o600"}


async def test_a_full_disk_is_unavailable_with_sqlites_reason_and_the_store_recovers_when_space_returns(tmp_path):
    from actors.store import Store, StoreClient
    from actors.store.messages import Unavailable

    backend = SQLiteBackend(tmp_path)
    store = Store(backend)
    await store.load()
    client = StoreClient(store)
    run = asyncio.get_running_loop().create_task(store.run())
    try:
        await client.create(node("small", 0) | {"metadata": {"name": "small"}})
        pages = await backend._run(lambda: backend._conn.execute("PRAGMA page_count").fetchone()[0])
        await backend._run(lambda: backend._conn.execute(f"PRAGMA max_page_count={pages + 2}"))
        big = {"kind": "Node", "metadata": {"name": "big", "annotations": {"a": "x" * 200_000}}}
        with pytest.raises(Unavailable, match="^store commit failed: database or disk is full$"):
            await client.create(big)
        assert store.peek("Node", "", "big") is None and store.resource_version == 1
        await backend._run(lambda: backend._conn.execute("PRAGMA max_page_count=1073741823"))
        assert (await client.create(big))["metadata"]["resourceVersion"] == "2"
    finally:
        store.inbox.close()
        await run
        await store.close()
    objects, rv = await reopen(tmp_path)
    assert sorted(o["metadata"]["name"] for o in objects) == ["big", "small"] and rv == 2


async def test_a_batch_writing_and_deleting_one_key_keeps_its_last_write_in_batch_order(tmp_path):
    odd = {**node("n3", 7), "metadata": {"name": "n3", "resourceVersion": "7", "annotations": {"note": "\u00e9 \"q\" \\"}}}
    b = SQLiteBackend(tmp_path)
    await b.load_all()
    await b.commit([Write(kind="Node", key="n1", raw=node("n1", 1), resource_version=1),
                    Write(kind="Node", key="n2", raw=node("n2", 2), resource_version=2)])
    await b.commit([Write(kind="Node", key="n1", raw=None, resource_version=3),
                    Write(kind="Node", key="n1", raw=node("n1", 4), resource_version=4),
                    Write(kind="Node", key="n2", raw=node("n2", 5), resource_version=5),
                    Write(kind="Node", key="n2", raw=None, resource_version=6),
                    Write(kind="Node", key="n3", raw=odd, resource_version=7)])
    await b.close()

    objects, rv = await reopen(tmp_path)
    assert rv == 7
    assert [(o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in objects] == [
        ("n1", "4"), ("n3", "7")]
    assert objects[1] == odd


async def test_a_batch_of_two_thousand_objects_is_written_in_a_few_statements_not_one_per_row(tmp_path):
    # Each statement hands the interpreter lock back to the event loop's thread and
    # waits to take it again; a bulk apply's commit must not do that once per object.
    b = SQLiteBackend(tmp_path)
    await b.load_all()
    statements: list[str] = []
    await b._run(lambda: b._conn.set_trace_callback(statements.append))
    await b.commit([Write(kind="Pod", key=f"default/p{i}", raw=pod(f"p{i}", i + 1), resource_version=i + 1)
                    for i in range(2000)])
    await b.close()

    assert len(statements) <= 5
    objects, rv = await reopen(tmp_path)
    assert rv == 2000 and len(objects) == 2000


async def test_small_batches_bound_a_row_at_a_time_store_what_the_json_array_statement_stores(tmp_path, monkeypatch):
    import random

    import actors.store.sqlite as sqlite_backend
    from tests.transport.sqlite_files import objects_and_meta

    rng = random.Random(26)
    batches: list[list[Write]] = []
    rv = 0
    for _ in range(60):  # up to 16 keys each, a key written, rewritten or deleted
        batch = []
        for _ in range(rng.randint(1, 12)):
            rv += 1
            name = f"p{rng.randint(0, 9)}"
            raw = None if rng.random() < 0.3 else pod(name, rv, node_name=rng.choice(["", "n1", "n\u00e9 \"2\""]))
            batch.append(Write(kind="Pod", key=f"default/{name}", raw=raw, resource_version=rv))
        batches.append(batch)

    async def stored(path: Path) -> tuple[list[tuple], int]:
        b = SQLiteBackend(path)
        await b.load_all()
        for batch in batches:
            await b.commit(batch)
        await b.close()
        rows, top = objects_and_meta(path)
        return rows, top[0], (await reopen(path))[1]

    by_row = await stored(tmp_path / "rows")
    monkeypatch.setattr(sqlite_backend, "ROWS_MAX", 0)  # every batch as JSON arrays
    by_array = await stored(tmp_path / "arrays")
    assert by_row == by_array and by_row[2] == rv and by_row[0]  # the same rows and meta row; versions go on from rv


async def test_a_batch_without_deletes_leaves_the_meta_row_alone_and_the_version_still_comes_back(tmp_path):
    # Each commit wrote the meta row's page as well as its rows' (one WAL frame of ~4 a
    # Churn commit); an upsert's version is in its own row until a delete of it, whose
    # higher version the meta row then keeps.
    import sqlite3

    b = SQLiteBackend(tmp_path)
    await b.load_all()
    await b.commit([Write(kind="Node", key="n1", raw=node("n1", 1), resource_version=1),
                    Write(kind="Node", key="n2", raw=node("n2", 2), resource_version=2)])
    await b.commit([Write(kind="Node", key="n2", raw=None, resource_version=3)])
    await b.commit([Write(kind="Node", key="n1", raw=node("n1", 4), resource_version=4)])
    await b.close()
    with sqlite3.connect(tmp_path / "store.db") as db:
        assert db.execute("SELECT value FROM meta WHERE name = 'resource_version'").fetchone() == (3,)
    assert await reopen(tmp_path) == ([node("n1", 4)], 4)
    b = SQLiteBackend(tmp_path)
    await b.load_all()
    await b.commit([Write(kind="Node", key="n1", raw=None, resource_version=5)])
    await b.close()
    assert await reopen(tmp_path) == ([], 5)


async def test_once_the_disk_reserve_is_made_commits_do_not_look_for_it_again(tmp_path):
    # A stat and pathlib's Python after every commit ran on the writer thread under the
    # interpreter lock; the reserve exists from its making until this store releases it.
    import pathlib

    looked: list[str] = []

    class Watched(type(tmp_path)):  # type: ignore[misc]
        def exists(self, *args, **kwargs) -> bool:
            looked.append(self.name)
            return pathlib.Path.exists(self, *args, **kwargs)

    b = SQLiteBackend(tmp_path)
    b.space.reserve_path = Watched(b.space.reserve_path)
    await b.load_all()
    for i in range(5):
        await b.commit([Write(kind="Node", key=f"n{i}", raw=node(f"n{i}", i + 1), resource_version=i + 1)])
    await b.close()
    assert b.space.reserve_path.stat().st_size == b.space.reserve_bytes
    assert looked == ["store.reserve"]  # at the open, before it was made
