"""Early watchers (actors/store/premise.py): the in-process scheduler hears of a turn when
it is handed to the disk, every other watcher and caller once it is durable; when such
a turn's commit fails, the early watcher hears it undone and a bind decided on a view
that held it is refused.

Real SQLite files and the real writer thread; a commit is held inside SQLite's turn
until the store has done what the test waits for (tests/transport/test_store_sqlite_overlap.py).
"""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from actors.base import new_reply
from actors.store import Store
from actors.store.messages import Bind, BindWithUpdates, Conflict, Create, Delete, Unavailable, WatchEvent
from actors.store.premise import DERIVED_FROM, deriving_from
from actors.store.sqlite import SQLiteBackend
from tests.actors.store_helpers import pod, serving
from tests.transport.test_store_sqlite_overlap import HeldBackend, Observed


def big_node(name: str) -> dict[str, Any]:
    """A node whose annotation takes more pages than a capped database has left."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"pad": "x" * 200_000}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


async def stored(path: Path) -> dict[str, str]:
    """Object key -> nodeName ("" for a pod not bound, "-" for a non-pod) in the file."""
    reopened = SQLiteBackend(path)
    try:
        state = await reopened.load_all()
    finally:
        await reopened.close()
    return {f'{o["kind"]}/{o["metadata"]["name"]}': o.get("spec", {}).get("nodeName", "") if o["kind"] == "Pod" else "-"
            for o in state.objects}


async def test_an_early_watcher_hears_a_delete_while_it_commits_and_a_client_watcher_only_once_it_is_durable(tmp_path):
    backend = HeldBackend(tmp_path, hold=3)
    store = Observed(backend, until=lambda m: False)
    told: list[tuple[str, str, bool, bool]] = []  # (watcher, event, delete answered, client watcher heard it)
    client_heard: list[str] = []
    async with serving(store) as (_, client):
        await client.create(pod("p0"))  # commit 1
        await client.create(pod("p1"))  # commit 2
        delete = Delete(kind="Pod", namespace="default", name="p0", reply=new_reply())

        def early(ev: WatchEvent) -> None:
            told.append(("early", f"{ev.type} {ev.obj.name}", delete.reply.done(), bool(client_heard)))
            if ev.type == "DELETED":
                backend.release.set()  # the commit goes on only once the early watcher has it

        def durable(ev: WatchEvent) -> None:
            client_heard.append(f"{ev.type} {ev.obj.name}")
            told.append(("client", f"{ev.type} {ev.obj.name}", delete.reply.done(), True))

        await client.watch(early, kinds=frozenset({"Pod"}), from_rv=2, early=True)
        await client.watch(durable, kinds=frozenset({"Pod"}), from_rv=2)
        store.tell(delete)  # commit 3, held in SQLite until the early watcher heard it
        await delete.reply

    assert told == [("early", "DELETED p0", False, False),  # before durable: nobody else knows
                    ("client", "DELETED p0", True, True)]  # once durable, after the answer, once each
    assert await stored(tmp_path) == {"Pod/p1": ""}


async def test_a_bind_decided_on_a_view_the_failed_commit_held_is_refused_and_the_early_watcher_hears_it_undone(
        tmp_path):
    backend = HeldBackend(tmp_path, hold=2)
    store = Observed(backend, until=lambda m: isinstance(m, Bind))
    early_told: list[tuple[str, str, int]] = []
    client_told: list[str] = []
    binds: list[Bind] = []
    async with serving(store) as (_, client):
        await client.create(pod("p0"))  # commit 1
        pages = await backend._run(lambda: backend._conn.execute("PRAGMA page_count").fetchone()[0])
        await backend._run(lambda: backend._conn.execute(f"PRAGMA max_page_count={pages + 2}"))

        def early(ev: WatchEvent) -> None:  # the scheduler: binds p0 to the node it was just told of
            early_told.append((ev.type, ev.obj.name, ev.resource_version))
            if ev.type == "ADDED" and ev.obj.name == "n-big":
                bind = Bind(namespace="default", name="p0", node_name="n-big",
                            derived_from=ev.resource_version, reply=new_reply())
                binds.append(bind)
                store.tell(bind)

        await client.watch(early, kinds=frozenset({"Node"}), from_rv=1, early=True)
        await client.watch(lambda ev: client_told.append(ev.obj.name), kinds=frozenset({"Node", "Pod"}), from_rv=1)
        node = Create(obj=big_node("n-big"), reply=new_reply())
        store.tell(node)  # commit 2: the bind is applied on top of it, then SQLite refuses it as full
        outcome = await asyncio.gather(node.reply, return_exceptions=True)
        assert len(binds) == 1  # the early watcher heard of the node before its commit ended
        outcome += await asyncio.gather(binds[0].reply, return_exceptions=True)
        late = Bind(namespace="default", name="p0", node_name="n-big", derived_from=2, reply=new_reply())
        store.tell(late)  # decided on the lost view, arriving after the failure
        late_outcome = (await asyncio.gather(late.reply, return_exceptions=True))[0]
        late_with_claims = BindWithUpdates(updates=(), namespace="default", name="p0", node_name="n-big",
                                           derived_from=2, reply=new_reply())  # DRA's claim status with the bind
        store.tell(late_with_claims)
        late_with_claims_outcome = (await asyncio.gather(late_with_claims.reply, return_exceptions=True))[0]
        with_repair = store.resource_version  # the undoing's version: a view that heard it is whole
        token = DERIVED_FROM.set(with_repair)
        try:
            await client.create(pod("n0-holder"))
            bound = await client.bind("default", "p0", "n0")
        finally:
            DERIVED_FROM.reset(token)

    assert isinstance(outcome[0], Unavailable) and "database or disk is full" in str(outcome[0])
    assert isinstance(outcome[1], Conflict) and "failed to commit" in str(outcome[1])
    assert isinstance(late_outcome, Conflict)
    assert isinstance(late_with_claims_outcome, Conflict)
    assert early_told == [("ADDED", "n-big", 2), ("DELETED", "n-big", 3)]  # undone at a version never reused
    assert with_repair == 3 and bound["metadata"]["resourceVersion"] == "5"
    assert "n-big" not in client_told  # a client never heard of the lost node
    assert await stored(tmp_path) == {"Pod/p0": "n0", "Pod/n0-holder": ""}


@pytest.mark.parametrize("rv, refused", [(0, False), (1, False), (2, True), (3, False)])
def test_a_lost_view_covers_the_failed_turn_and_its_undoing_but_the_last(rv: int, refused: bool) -> None:
    from actors.store.premise import LostViews
    lost = LostViews()
    lost.add(2, 2)  # a one-write turn at 2, undone at 3
    assert lost.holds(rv) is refused


async def test_a_task_made_in_a_deriving_context_stamps_its_binds_and_a_client_bind_carries_none(tmp_path):
    seen: list[int] = []

    class Recording(Store):
        def _apply(self, msg, batch):  # noqa: ANN001, ANN202
            if isinstance(msg, Bind):
                seen.append(msg.derived_from)
            return super()._apply(msg, batch)

    async with serving(Recording(SQLiteBackend(tmp_path))) as (_, client):
        await client.create(pod("a"))
        await client.create(pod("b"))
        await client.bind("default", "a", "n1")
        await asyncio.get_running_loop().create_task(client.bind("default", "b", "n1"), context=deriving_from(7))
    assert seen == [0, 7]


async def test_a_commit_is_joined_when_it_lands_not_when_the_writers_average_says(tmp_path):
    backend = SQLiteBackend(tmp_path)
    async with serving(Store(backend)) as (store, client):
        await client.create(pod("p0"))
        backend._writer.expected_seconds = 3600.0  # as if commits had lately taken an hour
        created = await asyncio.wait_for(client.create(pod("p1")), timeout=60)
        assert store._commit.overlap() is None  # joined and answered: nothing in flight
    assert created["metadata"]["resourceVersion"] == "2"


async def test_the_daemons_scheduler_hears_a_pod_before_its_commit_ends_and_binds_it_on_that_view(tmp_path):
    from actors.clock import FakeClock
    from actors.pipeline import Pipeline

    binds: list[tuple[str, int]] = []
    heard: list[tuple[str, bool]] = []  # (pod, the store's commit of it still in flight)

    class Recording(Store):
        def _apply(self, msg, batch):  # noqa: ANN001, ANN202
            if isinstance(msg, Bind):
                binds.append((msg.name, msg.derived_from))
            return super()._apply(msg, batch)

    async with Pipeline(None, clock=FakeClock(), backend=SQLiteBackend(tmp_path), store_class=Recording) as p:
        store_changed = p.scheduler.store_changed

        def told(ev: WatchEvent) -> None:  # what the scheduler's watch sink hands it
            if ev.kind == "Pod" and ev.type == "ADDED":
                heard.append((ev.obj.name, p.store.in_commit))
            store_changed(ev)
        p.scheduler.store_changed = told  # type: ignore[method-assign]
        await p.client.apply([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                               "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}])
        created = await p.client.create(pod("p0"))
        await p.settle()
        stored = p.store.peek("Pod", "default", "p0")

    assert heard == [("p0", True)]
    assert stored is not None and stored.node_name == "n1"
    assert binds == [("p0", binds[0][1])] and binds[0][1] >= int(created["metadata"]["resourceVersion"])
