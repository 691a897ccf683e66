"""kill -9 of a real daemon whose small commits are written on its loop's thread and made
durable by its fsync helper process (actors/store/wal_sync.py).

A client creates pods one at a time (each answered only once the helper has fsynced
the write-ahead log) and the daemon is killed while it does. Every answered pod must be
in the store file the killed daemon left and in the daemon restarted on it; the helper
ends with the daemon (its stdin closes), so nothing writes to the file afterwards.
"""
from __future__ import annotations

import os
import select
import threading
from pathlib import Path

from tests.e2e import test_kill_overlapped_commit as overlapped
from tests.e2e.conftest import daemon_factory  # noqa: F401 - the fixture is used by name

ANSWERED_BEFORE_KILL = 60


def children(pid: int) -> list[int]:
    kids: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            kids += [int(k) for k in f.read().split()]
    return kids


def test_pods_answered_one_at_a_time_survive_kill_9_and_the_fsync_helper_ends_with_the_daemon(
        daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    data = tmp_path / "data"
    d = daemon_factory(data_dir=data)
    answered: list[str] = []
    enough = threading.Event()

    def create_one_at_a_time() -> None:
        try:
            with d.client() as c:
                for i in range(100_000):
                    c.apply([overlapped.pod(f"p{i}")])
                    answered.append(f"p{i}")
                    if len(answered) == ANSWERED_BEFORE_KILL:
                        enough.set()
        except Exception:  # noqa: BLE001 - the daemon was killed under it
            enough.set()

    writer = threading.Thread(target=create_one_at_a_time, daemon=True)
    writer.start()
    assert enough.wait(timeout=120), "the daemon never answered a create"
    assert d.proc is not None
    helpers = [os.pidfd_open(pid) for pid in children(d.proc.pid)]
    assert helpers, "no fsync helper runs beside the daemon"
    told = list(answered)
    d.kill9()
    writer.join(timeout=30)
    ended, _, _ = select.select(helpers, [], [], 30)  # readable once the process has ended
    assert len(ended) == len(helpers), "the fsync helper outlived the daemon"
    for fd in helpers:
        os.close(fd)

    stored = overlapped.stored_pods(data)
    assert set(told) <= set(stored), sorted(set(told) - set(stored))[:5]
    again = daemon_factory(data_dir=data)
    with again.client() as c:
        names = {p["metadata"]["name"] for p in c.list("Pod")[0]}
    assert set(told) <= names
