"""The SQLite store commits turn N while it prepares turn N+1 (actors/store/local_commit.py):
a write that arrives during a commit is applied before that commit ends, yet nothing is
answered before the commit that made it durable; a turn prepared on top of a commit
that fails is applied again without it.

The commit is held, inside SQLite's turn on the writer thread, until the store has
applied the message the test waits for: real SQLite files, real threads, no timing.
"""
from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, Callable

from actors.base import new_reply
from actors.store import Store
from actors.store.messages import Bind, Create, StoreMsg, Unavailable
from actors.store.sqlite import SQLiteBackend
from actors.store import local_commit
from actors.store.turns import TurnRecord
from tests.actors.store_helpers import pod, serving


class HeldBackend(SQLiteBackend):
    """A real SQLite backend whose commit number `hold` waits, once SQLite has it,
    until `release` is set (by the store, when it applies the awaited message)."""

    def __init__(self, path: Path, hold: int) -> None:
        super().__init__(path)
        self.hold = hold
        self.release = threading.Event()
        self.started = 0

    def _commit_sync(self, batch: Any, pending: Any) -> None:
        self.started += 1
        if self.started == self.hold:
            pending.begin()  # the loop's thread goes on, as it does while SQLite works
            if not self.release.wait(timeout=30):
                raise AssertionError("the store never applied the next turn while this commit was held")
        super()._commit_sync(batch, pending)


class Observed(Store):
    """Records each message it applies with whether a commit was in flight; applying
    a message `until` accepts releases the held commit."""

    def __init__(self, backend: HeldBackend, until: Callable[[StoreMsg], bool]) -> None:
        super().__init__(backend)
        self.held = backend
        self.until = until
        self.seen: list[tuple[str, bool]] = []

    def _apply(self, msg: StoreMsg, batch: TurnRecord) -> Any:
        in_flight = self.in_commit
        try:
            return super()._apply(msg, batch)
        finally:
            self.seen.append((type(msg).__name__, in_flight))
            if self.until(msg):
                self.held.release.set()


async def committing(store: Store, msg: Create) -> None:
    """Until the store has handed `msg`'s commit to the writer (loop turns, not time);
    an answer before that means the loop was never given back during the commit."""
    while not store.in_commit:
        assert not msg.reply.done(), "the write was answered before the test could send anything during its commit"
        await asyncio.sleep(0)


async def test_a_bind_sent_while_a_create_commits_is_applied_then_and_answered_only_after_both_commits(tmp_path):
    backend = HeldBackend(tmp_path, hold=2)
    store = Observed(backend, until=lambda m: isinstance(m, Bind))
    answered: list[tuple[str, int]] = []
    async with serving(store) as (_, client):
        await client.create(pod("p0"))  # commit 1
        create = Create(obj=pod("p1"), reply=new_reply())
        store.tell(create)  # commit 2, held until the bind below is applied
        await committing(store, create)
        bind = Bind(namespace="default", name="p0", node_name="n1", reply=new_reply())
        store.tell(bind)
        create.reply.add_done_callback(lambda _: answered.append(("create", backend.commits)))
        bind.reply.add_done_callback(lambda _: answered.append(("bind", backend.commits)))
        bound = await bind.reply
        await create.reply

    assert store.seen[-1] == ("Bind", True)  # applied while the create's commit was in flight
    # Each answered once its own commit was durable. A done callback runs a loop step after
    # its future is resolved, so the create's may already see the bind's commit too.
    assert [name for name, _ in answered] == ["create", "bind"]
    assert answered[0][1] >= 2 and answered[1][1] == 3
    assert bound["spec"]["nodeName"] == "n1"
    reopened = SQLiteBackend(tmp_path)
    try:
        state = await reopened.load_all()
    finally:
        await reopened.close()
    names = {o["metadata"]["name"]: o["spec"].get("nodeName", "") for o in state.objects}
    assert names == {"p0": "n1", "p1": ""} and state.resource_version == 3


async def test_a_create_prepared_on_a_commit_the_full_disk_refuses_is_applied_again_without_it(tmp_path):
    backend = HeldBackend(tmp_path, hold=2)
    store = Observed(backend, until=lambda m: isinstance(m, Create) and m.obj["metadata"]["name"] == "p1")
    async with serving(store) as (_, client):
        await client.create(pod("p0"))  # commit 1
        pages = await backend._run(lambda: backend._conn.execute("PRAGMA page_count").fetchone()[0])
        await backend._run(lambda: backend._conn.execute(f"PRAGMA max_page_count={pages + 2}"))
        big = pod("big")
        big["spec"]["padding"] = "x" * 200_000  # more than two pages: SQLite refuses it as full
        refused = Create(obj=big, reply=new_reply())
        store.tell(refused)  # commit 2, held until the create below is applied on top of it
        await committing(store, refused)
        store.seen.clear()
        small = Create(obj=pod("p1"), reply=new_reply())
        store.tell(small)
        created = await small.reply
        outcome = await asyncio.gather(refused.reply, return_exceptions=True)

    assert isinstance(outcome[0], Unavailable) and "database or disk is full" in str(outcome[0])
    assert store.seen == [("Create", True), ("Create", False)]  # on top of the failed commit, then again
    assert created["metadata"]["resourceVersion"] == "2"  # big's version was given back
    reopened = SQLiteBackend(tmp_path)
    try:
        state = await reopened.load_all()
    finally:
        await reopened.close()
    assert sorted(o["metadata"]["name"] for o in state.objects) == ["p0", "p1"] and state.resource_version == 2


async def test_a_bind_in_a_burst_is_answered_when_its_commit_lands_before_the_burst_window_ends(tmp_path, monkeypatch):
    # The burst's grouping window is made an hour long: the bind committed in it must be
    # answered (and told to the watchers) by its commit's landing, not at the window's end.
    monkeypatch.setattr(local_commit, "SCHEDULER_GROUP_SECONDS", 3600.0)
    backend = HeldBackend(tmp_path, hold=2)
    store = Observed(backend, until=lambda m: isinstance(m, Bind) and m.name == "p1")
    seen: list[tuple[str, str]] = []
    async with serving(store) as (_, client):
        await client.apply([pod("p0"), pod("p1")])  # commit 1
        await client.watch(lambda ev: seen.append((ev.obj.name, ev.obj.node_name)), kinds=frozenset({"Pod"}))
        first = Bind(namespace="default", name="p0", node_name="n1", reply=new_reply())
        store.tell(first)  # commit 2, held until the bind below is applied on top of it
        await committing_bind(store, first)
        second = Bind(namespace="default", name="p1", node_name="n2", reply=new_reply())
        store.tell(second)  # commit 3: the burst's, with an hour's grouping window
        await first.reply
        bound = await asyncio.wait_for(second.reply, timeout=30)  # a guard: the window is an hour
        window_left = store._commit.overlap()

    assert bound["spec"]["nodeName"] == "n2" and backend.commits == 3
    assert window_left is not None and window_left > 60  # answered inside the burst's window
    assert seen[-2:] == [("p0", "n1"), ("p1", "n2")]  # both told in order, the second at its landing
    reopened = SQLiteBackend(tmp_path)
    try:
        state = await reopened.load_all()
    finally:
        await reopened.close()
    assert {o["metadata"]["name"]: o["spec"]["nodeName"] for o in state.objects} == {"p0": "n1", "p1": "n2"}


async def committing_bind(store: Store, msg: Bind) -> None:
    """Until the store has handed `msg`'s commit to the writer (loop turns, not time)."""
    while not store.in_commit:
        assert not msg.reply.done()
        await asyncio.sleep(0)
