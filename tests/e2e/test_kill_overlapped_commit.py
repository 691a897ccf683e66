"""kill -9 of a real daemon while bulk applies and binds commit overlapped (the SQLite
store commits turn N while it prepares turn N+1: actors/store/local_commit.py).

A client applies 2,000 pods; once a watch has seen some of them bound it applies
2,000 more, and the daemon is killed while that apply is unanswered and the first
pods' binds are still streaming. Every pod a watch
showed bound (published only after its commit: what a client was told) and every pod
of an answered apply must be in the store file the restarted daemon reads, bound
where the watch said."""
from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from tests.e2e.conftest import daemon_factory  # noqa: F401 - the fixture is used by name

CHUNK = 2000
BOUND_BEFORE_KILL = 300


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "10m"}}}]}}


def node(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
            "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "110"}}}


def stored_pods(data: Path) -> dict[str, str]:
    """Pod name -> nodeName in the store file a killed daemon left."""
    db = sqlite3.connect(f"file:{data / 'store.db'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT body FROM objects WHERE kind = 'Pod'").fetchall()
    finally:
        db.close()
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in (json.loads(b) for (b,) in rows)}


def test_what_a_client_was_told_during_overlapped_commits_survives_kill_9(daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    data = tmp_path / "data"
    d = daemon_factory(data_dir=data)
    with d.client() as c:
        c.apply([node(i) for i in range(100)])
    answered: list[str] = []
    binding = threading.Event()  # the watch has seen BOUND_BEFORE_KILL binds
    second_sent = threading.Event()

    def apply_chunks() -> None:
        try:
            with d.client() as c:
                for k in range(2):
                    if k:
                        binding.wait(timeout=60)
                        second_sent.set()
                    names = [f"p{k}-{i}" for i in range(CHUNK)]
                    c.apply([pod(n) for n in names])
                    answered.extend(names)
        except Exception:  # noqa: BLE001 - the daemon was killed under it
            pass

    writer = threading.Thread(target=apply_chunks, daemon=True)
    writer.start()
    seen_bound: dict[str, str] = {}
    with d.client() as c:
        for ev in c.watch(["Pod"]):
            if ev.object["spec"].get("nodeName"):
                seen_bound[ev.object["metadata"]["name"]] = ev.object["spec"]["nodeName"]
            if len(seen_bound) >= BOUND_BEFORE_KILL:
                binding.set()
                if second_sent.is_set():
                    break
    told = list(answered)
    d.kill9()
    writer.join(timeout=30)

    stored = stored_pods(data)
    assert [n for n in told if n not in stored] == []
    assert {n: stored.get(n) for n in seen_bound} == seen_bound
    again = daemon_factory(data_dir=data)
    with again.client() as c:
        items, _ = c.list("Pod")
    after = {i["metadata"]["name"]: i["spec"].get("nodeName", "") for i in items}
    assert {n: after.get(n) for n in seen_bound} == seen_bound
    print(f"kill -9 during overlapped commits: answered pods={len(told)} watched bound={len(seen_bound)} "
          f"stored={len(stored)} lost=0")
