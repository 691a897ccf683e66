"""The server's limits over real loopback sockets: what a client without the token
can make it do, connection and watch limits, timeouts, compact apply replies,
pages and Expired through the client library."""
from __future__ import annotations

import asyncio
import struct
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import pytest

from actors.store import Store
from actors.store.limits import StoreLimits
from actors.store.memory import InMemoryBackend
from transport.client.tcp import Client
from transport.server.tcp import Server, ServerLimits
from transport.server.service import StoreService
from transport.protocol.wire import ApiError, Reason

from tests.transport.conftest import Daemon, RawConn, pod

TOKEN = "s3cret"
FAST = ServerLimits(auth_failure_delay=0.0)


@asynccontextmanager
async def serving(limits: ServerLimits = FAST, token: str | None = TOKEN,
                  store_limits: StoreLimits | None = None) -> AsyncIterator[Daemon]:
    store = Store(InMemoryBackend(), limits=store_limits)
    await store.load()
    task = asyncio.get_running_loop().create_task(store.run())
    server = Server(StoreService(store), token=token, limits=limits)
    host, port = await server.start("127.0.0.1", 0)
    try:
        yield Daemon(store, server, f"{host}:{port}", host, port)
    finally:
        await server.close()
        store.inbox.close()
        await task


async def hello(d: Daemon, token: str = TOKEN) -> RawConn:
    conn = await RawConn.open(d)
    await conn.send({"id": 0, "op": "hello", "token": token})
    assert (await conn.recv())["ok"] is True
    return conn


# --- before the token ----------------------------------------------------------------------------


@pytest.mark.parametrize("first", [
    pytest.param(struct.pack(">I", 16 * 1024 * 1024), id="a 16 MiB header"),
    pytest.param(struct.pack(">I", 5000) + b"\xc0" * 5000, id="a 5000-byte frame of nils"),
    pytest.param(struct.pack(">I", 4) + b"\xc1\x00\xff\xc1", id="garbage"),
    pytest.param(struct.pack(">I", 1) + b"\x01", id="not a map"),
])
async def test_before_hello_anything_but_a_small_hello_closes_the_connection_unanswered(first: bytes) -> None:
    async with serving() as d:
        conn = await RawConn.open(d)
        await conn.send_bytes(first)
        assert await conn.recv() is None
        assert d.server.unauthenticated == 0 or len(d.server.connections) <= 1
        reason = "hello_size" if len(first) == 4 or len(first) > 4096 else "not_hello"
        assert d.server.rejections.get(reason) == 1


async def test_a_request_before_hello_is_unauthorized_and_a_wrong_token_is_refused_and_counted() -> None:
    async with serving() as d:
        conn = await RawConn.open(d)
        await conn.send({"id": 7, "op": "list", "kind": "Pod"})
        assert ((await conn.recv())["error"]["reason"], await conn.recv()) == ("Unauthorized", None)
        with pytest.raises(ApiError) as err:
            await Client.connect(d.address, token="guess")
        assert err.value.reason == Reason.UNAUTHORIZED
        assert (d.server.rejections["auth_failed"], d.server.auth_log.failures) == (1, 1)
        async with await Client.connect(d.address, token=TOKEN) as c:
            assert (await c.list("Pod"))[0] == []


async def test_a_connection_that_does_not_say_hello_in_time_is_closed() -> None:
    async with serving(ServerLimits(handshake_timeout=0.05)) as d:
        conn = await RawConn.open(d)
        await conn.send_bytes(b"\x00\x00")  # half a header, then nothing
        assert await conn.recv() is None
        assert d.server.rejections == {"handshake_timeout": 1}


async def test_a_stranger_above_its_cap_closes_the_oldest_and_a_client_above_the_limit_is_told_so() -> None:
    limits = ServerLimits(max_connections=2, max_unauthenticated=2, auth_failure_delay=0, handshake_timeout=30)
    async with serving(limits) as d:
        idle = [await RawConn.open(d), await RawConn.open(d)]
        extra = await RawConn.open(d)
        assert await idle[0].recv() is None  # the oldest stranger made room, unanswered
        await extra.send({"id": 0, "op": "hello", "token": TOKEN})
        assert (await extra.recv())["ok"]
        second = await hello(d)
        third = await RawConn.open(d)
        await third.send({"id": 5, "op": "hello", "token": TOKEN})
        assert (await third.recv())["error"] == {
            "reason": "TooManyRequests", "message": "too many connections (connections: limit 2); try again later"}
        assert await third.recv() is None
        assert d.server.rejections == {"unauthenticated_evicted": 1, "connections": 1}
        for c in (*idle, extra, second, third):
            await c.close()


async def test_an_idle_connection_is_closed_but_one_with_a_watch_stays() -> None:
    async with serving(ServerLimits(idle_timeout=0.05), token=None) as d:
        watching = await RawConn.open(d)
        await watching.send({"id": 1, "op": "watch", "kinds": ["Pod"]})
        assert (await watching.recv())["ok"]
        idle = await RawConn.open(d)
        await idle.send({"id": 1, "op": "stats"})  # a client now (without a token: its first request)
        assert (await idle.recv())["ok"]
        assert await idle.recv() is None
        await watching.send({"id": 2, "op": "stats"})
        assert (await watching.recv())["ok"]
        assert d.server.rejections["idle_timeout"] >= 1
        await watching.close()


async def test_one_watch_above_the_per_connection_limit_is_too_many_requests() -> None:
    async with serving(ServerLimits(max_watches=2), token=None) as d:
        conn = await RawConn.open(d)
        for rid in (1, 2, 3):
            await conn.send({"id": rid, "op": "watch", "kinds": ["Pod"]})
        replies = sorted([await conn.recv() for _ in range(3)], key=lambda r: r["id"])
        assert [r["ok"] for r in replies] == [True, True, False]
        assert replies[2]["error"] == {"reason": "TooManyRequests",
                                       "message": "watch: 2 watches are open on this connection (limit 2)"}
        await conn.close()


# --- replies that never contradict commits ----------------------------------------------------------


async def test_an_apply_whose_reply_would_be_too_large_answers_compactly_and_a_retry_changes_nothing(summary) -> None:
    limit = 64 * 1024
    async with serving(ServerLimits(max_frame_bytes=limit), token=None) as d:
        pods = [pod(f"web-{i}") for i in range(220)]
        async with await Client.connect(d.address) as c:
            result = await c.request("apply", objects=pods)
            assert result["compact"] is True and result["counts"] == {"created": 220}
            assert result["names"][:2] == ["default/web-0", "default/web-1"]
            stored, _ = await c.list("Pod", page_size=100)  # 220 pods do not fit one 64 KiB frame
            assert len(stored) == 220
            again = await c.request("apply", objects=pods)
            assert again["counts"] == {"unchanged": 220}
            assert len((await c.list("Pod", page_size=100))[0]) == 220 and d.store.resource_version == 220
            items = await c.apply(pods)
            assert items[0] == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "default"}}
    summary(f"oversize apply: 220 pods, frame limit {limit} B -> compact reply (counts+names), "
            f"store holds 220, retry 220 unchanged")


# --- pages and Expired through the client library ------------------------------------------------------


async def test_the_client_lists_page_by_page_at_one_version() -> None:
    async with serving(token=None) as d:
        async with await Client.connect(d.address) as c:
            await c.apply([pod(f"p{i:02}") for i in range(25)])
            pages = []
            async for items, rv in c.list_pages("Pod", page_size=10):
                pages.append(([o["metadata"]["name"] for o in items], rv))
                if len(pages) == 1:
                    await c.delete("Pod", "p24")  # after the snapshot: the last page still has it
            assert [len(p) for p, _ in pages] == [10, 10, 5] and {rv for _, rv in pages} == {25}
            assert pages[2][0][-1] == "p24"
            items, rv = await c.list("Pod", page_size=7)
            assert (len(items), rv) == (24, 26)


async def test_a_watch_resumed_from_a_compacted_version_is_expired_and_the_client_lists_again() -> None:
    async with serving(token=None, store_limits=StoreLimits(history_events=3)) as d:
        async with await Client.connect(d.address) as c:
            await c.apply([pod("a"), pod("b")])
            for i in range(5):
                await c.apply([pod("a", labels={"v": str(i)})])
            with pytest.raises(ApiError) as err:
                await c.request("watch", kinds=["Pod"], resourceVersion=1)
            assert err.value.reason == Reason.EXPIRED
            assert err.value.message == "too old resource version: 1 (4)"
            stream = c.watch(["Pod"], resource_version=1)
            got = [await anext(stream), await anext(stream)]
            await stream.aclose()
            assert sorted((e.type, e.object["metadata"]["name"]) for e in got) == [("ADDED", "a"), ("ADDED", "b")]
            assert {e.object["metadata"]["name"]: e.object["metadata"]["labels"] for e in got}["a"] == {"v": "4"}
