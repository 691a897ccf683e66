"""A full disk under the SQLite store (issue 19): logged once per episode (and once
when it ends), writes answer Unavailable, and deletes go through.

The full disk is real SQLite refusing a write as SQLITE_FULL: emulated exactly with
PRAGMA max_page_count (portable), and, where this process may mount one, a real
tmpfs of a few MiB, where deleting needs the reserve file's room.
"""
from __future__ import annotations

import asyncio
import logging
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from actors.base import new_reply
from actors.store import Store, StoreClient
from actors.store.messages import Create, Delete, Unavailable
from actors.store.sqlite import SQLiteBackend
from tests.actors.store_helpers import pod, running

FULL = "is full"
ROOM = "has room again"


def big(name: str, kib: int = 100) -> dict[str, Any]:
    raw = pod(name)
    raw["spec"]["padding"] = "x" * (kib * 1024)  # an unknown field: kept, never read
    return raw


def store_on(backend: SQLiteBackend):  # type: ignore[no-untyped-def]
    return running(backend)


async def fill(c: StoreClient, prefix: str, kib: int = 100, most: int = 500) -> list[str]:
    """Create pods until the store answers Unavailable; the names stored."""
    made = []
    for i in range(most):
        try:
            await c.create(big(f"{prefix}-{i}", kib))
        except Unavailable as e:
            assert "database or disk is full" in str(e)
            return made
        made.append(f"{prefix}-{i}")
    raise AssertionError(f"the disk never filled after {most} pods")


def said(caplog, text: str) -> int:
    return sum(1 for r in caplog.records if text in r.getMessage())


async def same_turn(store: Store, *msgs: Any) -> list[Any]:
    """Send every message before the store runs again (one turn), and collect the
    outcome of each (its value or its error)."""
    for m in msgs:
        store.tell(m)
    return await asyncio.gather(*(m.reply for m in msgs), return_exceptions=True)


async def test_a_full_store_logs_once_per_episode_refuses_writes_and_lets_deletes_through(
        tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ksched.store")
    backend = SQLiteBackend(tmp_path / "data", max_pages=400)  # 1.6 MB of 4 KiB pages: a full disk
    async with store_on(backend) as (store, c):
        stored = await fill(c, "p")
        assert stored and said(caplog, FULL) == 1
        for i in range(3):  # more refused writes: still one line
            with pytest.raises(Unavailable):
                await c.create(big(f"again-{i}"))
        assert said(caplog, FULL) == 1
        # Writes and deletes arriving together: the deletes commit, the writes are refused.
        outcome = await same_turn(
            store,
            Create(obj=big("late-0", kib=300), reply=new_reply()),
            Delete(kind="Pod", namespace="default", name=stored[0], reply=new_reply()),
            Create(obj=big("late-1", kib=300), reply=new_reply()),  # more than the first delete frees
            Delete(kind="Pod", namespace="default", name=stored[1], reply=new_reply()),
        )
        assert isinstance(outcome[0], Unavailable) and isinstance(outcome[2], Unavailable), outcome
        assert [o["metadata"]["name"] for o in (outcome[1], outcome[3])] == stored[:2], outcome
        assert store.peek("Pod", "default", stored[0]) is None and said(caplog, ROOM) == 0
        # The pages the deletes freed take new writes: the episode ends, once.
        await c.create(big("after-0"))
        await c.create(pod("after-1"))
        assert said(caplog, ROOM) == 1 and said(caplog, FULL) == 1
        # Filling it again is a new episode.
        await fill(c, "q")
        assert said(caplog, FULL) == 2
    names = {o["metadata"]["name"] for o in (await SQLiteBackend(tmp_path / "data").load_all()).objects}
    assert stored[0] not in names and {"after-0", "after-1", stored[2]} <= names


@pytest.fixture
def small_disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A real 16 MiB tmpfs, or a skip saying why there is none."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (the max_page_count test covers the logic)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mount -t tmpfs is not permitted here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


async def test_on_a_real_full_disk_deletes_commit_with_the_reserve_and_writes_resume(small_disk, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ksched.store")
    reserve = 5 * 1024 * 1024  # above what a checkpoint needs here: 4 MiB of WAL and a 200 KiB batch
    backend = SQLiteBackend(small_disk / "data", reserve_bytes=reserve)
    async with store_on(backend) as (store, c):
        assert (small_disk / "data" / "store.reserve").stat().st_size == reserve
        stored = await fill(c, "p", kib=200)
        assert said(caplog, FULL) == 1
        for name in stored[:5]:
            await c.delete("Pod", "default", name)
        assert said(caplog, "released the") == 1
        await c.create(big("after", kib=100))
        assert said(caplog, ROOM) == 1
    names = {o["metadata"]["name"] for o in (await SQLiteBackend(small_disk / "data").load_all()).objects}
    assert "after" in names and not set(stored[:5]) & names
