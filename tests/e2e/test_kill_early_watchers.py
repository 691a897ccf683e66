"""kill -9 of a real daemon while completions churn: the scheduler hears each delete when
its commit starts, not when it is durable (actors/store/premise.py), and binds the pod
that fills the freed slot meanwhile.

Every node holds one 1-cpu pod and 1-cpu pods wait. A client deletes running pods one
after another (each delete answered only once durable) while a watch records the binds
it is shown (published only once durable), and the daemon is killed while both stream.
In the store file the killed daemon left, and in the restarted daemon: no answered
delete came back, every bind the watch showed is there on its node, and no node holds
two pods: a bind whose premise (the delete that freed its slot) was lost did not survive.
"""
from __future__ import annotations

import collections
import threading
from pathlib import Path
from typing import Any

from tests.e2e import test_kill_overlapped_commit as overlapped
from tests.e2e.conftest import daemon_factory  # noqa: F401 - the fixture is used by name

NODES = 40
QUEUED = 400
CHURN_BINDS_BEFORE_KILL = 120


def pod(name: str) -> dict[str, Any]:
    """A pod asking a whole node's cpu."""
    p = overlapped.pod(name)
    p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    return p


def node(i: int) -> dict[str, Any]:
    """A node with room for one such pod."""
    n = overlapped.node(i)
    n["status"]["allocatable"]["cpu"] = "1"
    return n


def crowded(pods: dict[str, str]) -> dict[str, int]:
    """Nodes holding more than their one pod's worth of cpu."""
    per_node = collections.Counter(n for n in pods.values() if n)
    return {n: c for n, c in per_node.items() if c > 1}


def test_no_answered_delete_nor_shown_bind_is_lost_and_no_bind_outlives_its_premise_across_kill_9(
        daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    data = tmp_path / "data"
    d = daemon_factory(data_dir=data)
    with d.client() as c:
        c.apply([node(i) for i in range(NODES)])
        c.apply([pod(f"run-{i}") for i in range(NODES)])
    bound: collections.deque[str] = collections.deque()  # bound pods, oldest first: the next to complete
    ready = threading.Condition()
    deleted: list[str] = []  # deletes answered (durable)
    sent: list[str] = []  # deletes sent (one in flight at the kill may or may not have committed)
    stop = threading.Event()

    def complete() -> None:
        try:
            with d.client() as c:
                while not stop.is_set():
                    with ready:
                        ready.wait_for(lambda: bool(bound) or stop.is_set(), timeout=60)
                        if stop.is_set():
                            return
                        victim = bound.popleft()
                    sent.append(victim)
                    c.delete("Pod", victim, "default")
                    deleted.append(victim)
        except Exception:  # noqa: BLE001 - the daemon was killed under it
            pass

    seen_bound: dict[str, str] = {}
    churner = threading.Thread(target=complete, daemon=True)
    with d.client() as c:
        for ev in c.watch(["Pod"]):
            name, at = ev.object["metadata"]["name"], ev.object["spec"].get("nodeName", "")
            if ev.type == "DELETED" or not at or name in seen_bound:
                continue
            seen_bound[name] = at
            with ready:
                bound.append(name)
                ready.notify()
            if len(seen_bound) == NODES:
                c2 = d.client()
                with c2:
                    c2.apply([pod(f"q-{i}") for i in range(QUEUED)])  # all wait: the cluster is full
                churner.start()
            if len(seen_bound) >= NODES + CHURN_BINDS_BEFORE_KILL:
                break
    told_deleted = list(deleted)
    d.kill9()
    stop.set()
    with ready:
        ready.notify_all()
    churner.join(timeout=30)
    shown = {n: at for n, at in seen_bound.items() if n not in sent}

    stored = overlapped.stored_pods(data)
    assert [n for n in told_deleted if n in stored] == []
    assert {n: stored.get(n) for n in shown} == shown
    assert crowded(stored) == {}
    again = daemon_factory(data_dir=data)
    with again.client() as c:
        items, _ = c.list("Pod")
    after = {i["metadata"]["name"]: i["spec"].get("nodeName", "") for i in items}
    assert [n for n in told_deleted if n in after] == []
    assert {n: after.get(n) for n in shown} == shown
    assert crowded(after) == {}
    print(f"kill -9 during churn: deletes answered={len(told_deleted)} binds shown={len(seen_bound)} "
          f"stored bound={sum(1 for n in stored.values() if n)} lost=0")
