"""What one client can make the daemon do to every other one, over real loopback
sockets against a real Store: a big request is handled in slices (others' gets
answered meanwhile), a watch its client does not read is bounded in bytes, list
pages end before the frame limit whatever the objects' sizes, and sockets that
never say hello cannot take the places of clients that do."""
from __future__ import annotations

import asyncio
import socket
from typing import Any

import msgpack

from actors.pacing import Pacer, run_now
from actors.store.limits import StoreLimits
from transport.client.tcp import Client
from transport.protocol.framing import decode_body, decode_body_steps
from transport.server.tcp import ServerLimits
from transport.protocol.wire import ApiError, Reason, decode_request, request_steps

from tests.transport.conftest import RawConn, pod
from tests.transport.test_server_limits import TOKEN, serving

GUARD = 30.0  # seconds: a bound on waiting for something that must happen, never a delay


def fat_pod(name: str, kib: int) -> dict[str, Any]:
    """A pod of about `kib` KiB (container args: annotations stop at 256 KiB)."""
    p = pod(name)
    p["spec"]["containers"][0]["args"] = ["x" * 1000] * kib
    return p


# --- liveness: a big request in slices ------------------------------------------------------------------


async def test_while_a_big_apply_is_stored_another_clients_gets_are_answered() -> None:
    """Before: the store validated and wrote every object of an apply in one step of
    the event loop, so no get could be answered while it was part-way written."""
    n = 3000
    async with serving(token=None) as d:
        async with await Client.connect(d.address) as writer, await Client.connect(d.address) as reader:
            await writer.apply([pod("probe")])
            start = d.store.resource_version
            seen_part_way: list[int] = []
            done = asyncio.Event()

            async def probe() -> None:
                while not done.is_set():
                    await reader.get("Pod", "probe")
                    if start < d.store.resource_version < start + n:
                        seen_part_way.append(d.store.resource_version)

            task = asyncio.ensure_future(probe())
            await writer.apply([pod(f"p{i}") for i in range(n)])
            done.set()
            await task
            assert d.store.resource_version == start + n
            assert seen_part_way, "no get was answered while the apply was being stored"
            assert (await reader.list("Pod"))[0].__len__() == n + 1


async def test_a_big_frame_is_decoded_and_checked_in_steps_with_the_same_result() -> None:
    objects = [pod(f"p{i}", labels={"i": str(i)}) for i in range(2000)]
    body = msgpack.packb({"id": 9, "op": "apply", "objects": objects}, use_bin_type=True)
    steps = decode_body_steps(body)
    pacer = Pacer(slice_seconds=1e9, max_steps=64)
    frame = await pacer.drive(steps)
    assert frame == decode_body(body) and pacer.pauses > 10
    await pacer.drive(request_steps(frame))
    assert decode_request(frame, checked=True) == decode_request(frame)
    bad = dict(frame, objects=objects[:5] + [{"kind": "Pod", "metadata": {"labels": {"a": b"bytes"}}}])
    try:
        run_now(request_steps(bad))
    except ApiError as err:
        assert (err.reason, err.request_id) == (Reason.INVALID, 9)
        assert err.message.startswith("objects[5].metadata.labels.a: must be JSON")
    else:
        raise AssertionError("bytes in an object were accepted")


# --- memory: a watch's unread events are bounded in bytes ---------------------------------------------------


async def test_a_watcher_that_never_reads_is_cut_off_with_an_error_and_a_reading_one_is_not() -> None:
    """Before: only the number of queued frames was bounded (10,000 by default), so
    a watcher that never read held every event of 100 KiB objects."""
    limit = 1 << 20
    cut = asyncio.Event()
    limits = ServerLimits(auth_failure_delay=0.0, max_watch_backlog_bytes=limit)
    async with serving(limits, token=None) as d:
        on_reject = d.server._on_reject
        d.server._on_reject = lambda name: (cut.set() if name == "watch_backlog_bytes" else None)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)  # the kernel holds little of it
        sock.connect((d.host, d.port))
        stalled = RawConn(*await asyncio.open_connection(sock=sock))
        await stalled.send({"id": 1, "op": "watch", "kinds": ["Pod"]})
        reading = await RawConn.open(d)
        await reading.send({"id": 1, "op": "watch", "kinds": ["Pod"]})
        assert (await reading.recv())["ok"] is True
        got: list[dict[str, Any]] = []
        updates = 120

        async def read_all() -> None:
            while len(got) < updates:
                frame = await reading.recv()
                assert frame is not None and "event" in frame, frame
                got.append(frame)

        readers = asyncio.ensure_future(read_all())
        async with await Client.connect(d.address) as c:
            for i in range(updates):
                p = fat_pod(f"big-{i % 4}", 200)
                p["metadata"]["labels"] = {"v": str(i)}
                await c.apply([p])
            async with asyncio.timeout(GUARD):
                await cut.wait()
                await readers
        assert [f["event"]["object"]["metadata"]["labels"]["v"] for f in got] == [str(i) for i in range(updates)]
        async with asyncio.timeout(GUARD):
            while True:  # the stalled watcher's socket: what was sent before the cut, then the error
                frame = await stalled.recv()
                assert frame is not None, "the connection closed without the error frame"
                if frame.get("ok") is False:
                    break
        assert frame["id"] == 1 and frame["error"]["reason"] == "Unavailable"
        assert f"(limit {limit})" in frame["error"]["message"] and "resume" in frame["error"]["message"]
        assert d.server.rejections.get("watch_backlog_bytes") == 1
        d.server._on_reject = on_reject
        await stalled.close()
        await reading.close()


# --- list pages by bytes ---------------------------------------------------------------------------------------


async def test_a_list_of_objects_larger_together_than_a_frame_comes_in_pages_that_fit() -> None:
    """Before: a page was cut by count only, so 8 pods of 300 KiB under a 1 MiB frame
    limit made the first page TooLarge."""
    limit = 1 << 20
    async with serving(ServerLimits(max_frame_bytes=limit), token=None) as d:
        async with await Client.connect(d.address) as c:
            for i in range(8):
                await c.apply([fat_pod(f"fat-{i}", 300)])
            sizes = []
            async for items, _ in c.list_pages("Pod"):
                sizes.append(len(items))
                assert len(msgpack.packb(items, use_bin_type=True)) < limit
            assert sum(sizes) == 8 and len(sizes) >= 3 and min(sizes) >= 1
            names = sorted(o["metadata"]["name"] for o in (await c.list("Pod"))[0])
            assert names == [f"fat-{i}" for i in range(8)]
            raw = await c.request("list", kind="Pod", limit=0)  # "all": still one frame at most
            assert raw["continue"] and 1 <= len(raw["items"]) < 8


async def test_one_object_above_a_page_budget_still_makes_a_page() -> None:
    async with serving(ServerLimits(max_frame_bytes=300 * 1024), token=None,
                       store_limits=StoreLimits(max_object_bytes=290 * 1024)) as d:
        async with await Client.connect(d.address) as c:
            await c.apply([fat_pod("a", 280)])
            await c.apply([fat_pod("b", 280)])
            assert [o["metadata"]["name"] for o in (await c.list("Pod"))[0]] == ["a", "b"]


# --- connections: strangers cannot lock clients out --------------------------------------------------------------


async def test_with_a_token_silent_sockets_at_their_cap_cannot_keep_a_client_out() -> None:
    """Before: `max_unauthenticated` silent sockets made every new client TooManyRequests
    until their handshake timed out."""
    limits = ServerLimits(auth_failure_delay=0.0, max_unauthenticated=3, handshake_timeout=GUARD)
    async with serving(limits) as d:
        silent = [await RawConn.open(d) for _ in range(3)]
        async with await Client.connect(d.address, token=TOKEN) as c:
            assert (await c.list("Pod"))[0] == []
        assert d.server.rejections.get("unauthenticated_evicted") == 1
        async with asyncio.timeout(GUARD):
            assert await silent[0].recv() is None  # the oldest stranger made room
        for s in silent:
            await s.close()


async def test_without_a_token_idle_sockets_never_take_the_places_of_clients() -> None:
    """Before: without a token every socket counted as a client at once, so
    `max_connections` idle sockets locked everyone out until their idle timeout."""
    limits = ServerLimits(max_connections=2, max_unauthenticated=2, handshake_timeout=GUARD)
    async with serving(limits, token=None) as d:
        idle = [await RawConn.open(d) for _ in range(5)]
        async with await Client.connect(d.address) as a, await Client.connect(d.address) as b:
            assert (await a.list("Pod"))[0] == [] and (await b.stats())["connections"] >= 2
            third = await RawConn.open(d)  # the authenticated places are taken: told so on its first request
            await third.send({"id": 1, "op": "stats"})
            reply = await third.recv()
            assert reply["error"]["reason"] == "TooManyRequests" and await third.recv() is None
        for s in idle:
            await s.close()


async def test_a_socket_that_sends_nothing_is_closed_at_the_handshake_deadline_with_or_without_a_token() -> None:
    for token in (TOKEN, None):
        async with serving(ServerLimits(auth_failure_delay=0.0, handshake_timeout=0.05), token=token) as d:
            conn = await RawConn.open(d)
            async with asyncio.timeout(GUARD):
                assert await conn.recv() is None
            assert d.server.rejections["handshake_timeout"] == 1
            async with await Client.connect(d.address, token=token) as c:  # a client that speaks stays
                assert (await c.list("Pod"))[0] == []
            await conn.close()

