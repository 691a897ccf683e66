"""What the store holds is bounded, and reads never wait for a commit: object size,
watch history compacted by count and bytes (Expired), paged lists at one resourceVersion, committed reads while a batch commits, and
client writes taking turns with bindings."""
from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from typing import Any, Sequence

import pytest

from actors.store import Gone, Invalid, NotFound, Store, StoreClient
from actors.store.backend import Write
from actors.store.history import WatchHistory
from actors.store.limits import StoreLimits
from actors.store.memory import InMemoryBackend
from actors.base import new_reply
from actors.store.messages import Apply, Bind, TooLarge, WatchEvent

from tests.actors.store_helpers import pod, serving


class GatedBackend(InMemoryBackend):
    """An in-memory backend whose commits wait until the test opens the gate, so a
    test can look at the store while a batch is being made durable. Records the
    writes of each commit."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.gate.set()
        self.committing = asyncio.Event()
        self.batches: list[list[Write]] = []

    async def commit(self, writes: Sequence[Write]) -> None:
        self.batches.append(list(writes))
        self.committing.set()
        await self.gate.wait()
        self.committing.clear()
        await super().commit(writes)


def running(limits: StoreLimits | None = None, backend: InMemoryBackend | None = None,
            clock: Any = lambda: 0.0) -> AbstractAsyncContextManager[tuple[Store, StoreClient]]:
    return serving(Store(backend, limits=limits, clock=clock))


def names(objs: Sequence[Any]) -> list[str]:
    return [o.name if hasattr(o, "name") else o["metadata"]["name"] for o in objs]


# --- object size -------------------------------------------------------------------------------


async def test_an_object_above_the_size_limit_is_too_large_and_nothing_of_its_apply_is_stored() -> None:
    async with running(StoreLimits(max_object_bytes=4096)) as (store, c):
        big = pod("big")
        big["metadata"]["annotations"] = {"blob": "x" * 5000}
        with pytest.raises(TooLarge, match=r'objects\[1\] \(Pod default/big\): Pod "default/big": object is \d+ bytes, '
                                           r"above the limit of 4096 bytes"):
            await c.apply([pod("small"), big])
        assert store.resource_version == 0 and store.peek_all("Pod") == []
        with pytest.raises(TooLarge):
            await c.create(big)


# --- watch history ---------------------------------------------------------------------------


async def test_history_is_compacted_by_count_and_a_watch_from_before_it_is_expired() -> None:
    async with running(StoreLimits(history_events=5)) as (store, c):
        for i in range(10):
            await c.create(pod(f"p{i}"))
        assert (len(store.history), store.history.compacted_rv) == (5, 5)
        with pytest.raises(Gone, match=r"too old resource version: 4 \(5\)"):
            await c.watch(lambda ev: None, None, 4)
        seen: list[int] = []
        await c.watch(lambda ev: seen.append(ev.resource_version), None, 5)
        assert seen == [6, 7, 8, 9, 10]


async def test_history_is_compacted_by_bytes_under_churn_of_one_large_object() -> None:
    async with running(StoreLimits(history_bytes=64 * 1024)) as (store, c):
        p = pod("churn")
        for i in range(50):
            p["metadata"]["annotations"] = {"blob": str(i) * 10_000}
            await c.apply([p])
        assert store.history.bytes <= 64 * 1024
        assert len(store.history) < 10  # about 10 KB a version
        assert store.history.compacted_rv == 50 - len(store.history)


def test_history_since_returns_the_events_after_a_version_in_order() -> None:
    h = WatchHistory(max_events=3, max_bytes=1 << 20, start_rv=2)
    evs = [WatchEvent("ADDED", "Pod", None, None, rv) for rv in range(3, 8)]  # type: ignore[arg-type]
    for ev in evs:
        h.append(ev, 10)
    assert [e.resource_version for e in h.since(5)] == [6, 7]
    assert h.compacted_rv == 4
    h.check(4)
    with pytest.raises(Gone):
        h.check(3)


def test_history_compacts_by_each_events_own_weight_and_keeps_one_object_an_event() -> None:
    """Bytes compaction drops the oldest events by the weight each was appended with; the
    history holds an event with no container of its own beside it (the collector walks
    one object an event fewer than with a (event, size) pair each)."""
    import collections
    import gc
    h = WatchHistory(max_events=100, max_bytes=100, start_rv=0)
    sizes = {1: 60, 2: 30, 3: 20, 4: 45, 5: 5, 6: 90}
    for rv, size in sizes.items():
        h.append(WatchEvent("ADDED", "Pod", None, None, rv), size)  # type: ignore[arg-type]
        kept = [e.resource_version for e in h.since(h.compacted_rv)]
        assert h.bytes == sum(sizes[r] for r in kept) <= 100
        assert h.compacted_rv == (kept[0] - 1 if kept else rv)
    held = [x for d in gc.get_referents(h) if isinstance(d, collections.deque) for x in d if gc.is_tracked(x)]
    assert [e.resource_version for e in held] == [5, 6] and all(isinstance(e, WatchEvent) for e in held)


# --- pages -------------------------------------------------------------------------------------


async def test_pages_are_read_at_the_first_pages_version_whatever_changes_between_them() -> None:
    async with running() as (store, c):
        await c.apply([pod(f"p{i}") for i in range(6)])
        first, rv, token = store.reader().read_list("Pod", limit=2)
        assert names(first) == ["p0", "p1"] and token
        await c.delete("Pod", "default", "p3")  # not yet served: still in the snapshot
        await c.create(pod("p25"))  # created after the snapshot: not in it
        changed = pod("p4", labels={"v": "2"})
        await c.apply([changed])
        rest: list[Any] = []
        while token:
            page, page_rv, token = store.reader().read_list("Pod", limit=2, continue_token=token)
            assert page_rv == rv
            rest += page
        assert names(rest) == ["p2", "p3", "p4", "p5"]
        assert [o.labels for o in rest if o.name == "p4"] == [{}]
        now, _, _ = store.reader().read_list("Pod")
        assert names(now) == ["p0", "p1", "p2", "p25", "p4", "p5"]


async def test_a_page_filters_by_namespace_and_selectors_and_fills_up_to_its_limit() -> None:
    async with running() as (store, c):
        await c.apply([pod(f"p{i}", ns=ns, labels={"app": "web" if i % 2 else "db"})
                       for ns in ("a", "b") for i in range(6)])
        page, _, token = store.reader().read_list("Pod", "b", "app=web", limit=2)
        assert [(o.namespace, o.name) for o in page] == [("b", "p1"), ("b", "p3")]
        page, _, token = store.reader().read_list("Pod", "b", "app=web", limit=2, continue_token=token)
        assert [(o.namespace, o.name) for o in page] == [("b", "p5")] and token == ""


async def test_a_continue_token_older_than_the_history_is_expired_and_a_forged_one_is_invalid() -> None:
    async with running(StoreLimits(history_events=3)) as (store, c):
        await c.apply([pod(f"p{i}") for i in range(4)])
        _, _, token = store.reader().read_list("Pod", limit=1)
        for i in range(4):
            await c.apply([pod(f"p{i}", labels={"v": "1"})])
        with pytest.raises(Gone, match="too old continue token"):
            store.reader().read_list("Pod", limit=1, continue_token=token)
        with pytest.raises(Invalid, match="continue: continue key is not valid"):
            store.reader().read_list("Pod", limit=1, continue_token="not-a-token")


# --- reads while a batch commits ---------------------------------------------------------------


async def test_reads_see_the_committed_state_while_a_batch_is_being_made_durable() -> None:
    backend = GatedBackend()
    async with running(backend=backend) as (store, c):
        await c.create(pod("old", labels={"v": "1"}))
        backend.gate.clear()
        writing = asyncio.ensure_future(c.apply([pod("old", labels={"v": "2"}), pod("new")]))
        await backend.committing.wait()
        assert store.reader().read("Pod", "default", "old").labels == {"v": "1"}
        with pytest.raises(NotFound):
            store.reader().read("Pod", "default", "new")
        items, rv, _ = store.reader().read_list("Pod")
        assert (names(items), rv) == (["old"], 1)
        backend.gate.set()
        await writing
        assert store.reader().read("Pod", "default", "old").labels == {"v": "2"}
        assert names(store.reader().read_list("Pod")[0]) == ["new", "old"]


async def test_client_writes_beyond_a_turns_budget_wait_while_bindings_go_on() -> None:
    backend = GatedBackend()
    async with running(StoreLimits(client_writes_per_turn=3), backend=backend) as (store, c):
        await c.apply([pod("bind-me")])
        backend.gate.clear()
        first = asyncio.ensure_future(c.apply([pod("x0")]))
        await backend.committing.wait()  # the store is busy: what follows queues up in its inbox
        asks = [Apply(objects=[pod(f"burst{i}-{j}") for j in range(3)], reply=new_reply()) for i in range(3)]
        asks.append(Bind(namespace="default", name="bind-me", node_name="node-1", reply=new_reply()))
        for msg in asks:
            store.tell(msg)
        backend.gate.set()
        await asyncio.gather(first, *(m.reply for m in asks))
        turns = [[w.key.split("/")[1] for w in batch] for batch in backend.batches[1:]]
        assert turns == [["x0"], ["burst0-0", "burst0-1", "burst0-2", "bind-me"],
                         ["burst1-0", "burst1-1", "burst1-2"], ["burst2-0", "burst2-1", "burst2-2"]]


def test_an_object_weighs_its_fresh_msgpack_encoding_after_a_refused_value_and_in_another_thread() -> None:
    import threading

    import msgpack

    from actors.store.raw import encoded_size, exact_encoding

    pod = {"kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}
    with pytest.raises(TypeError):
        exact_encoding({"spec": {"ports": (80,)}})  # a tuple is no exact JSON value
    with pytest.raises(TypeError):
        encoded_size({"spec": {"x": object()}})
    assert encoded_size(pod) == len(msgpack.packb(pod, use_bin_type=True))
    assert exact_encoding(pod) == msgpack.packb(pod, use_bin_type=True, strict_types=True)
    seen: list[int] = []
    worker = threading.Thread(target=lambda: seen.append(encoded_size({**pod, "x": "y" * 70_000})))
    worker.start()
    worker.join()
    assert seen == [len(msgpack.packb({**pod, "x": "y" * 70_000}, use_bin_type=True))]
    assert encoded_size(pod) == len(msgpack.packb(pod, use_bin_type=True))
