"""The HTTP port's connection cap and idle timeout (transport.http.limits), over
real loopback sockets to a real aiohttp server with small limits."""
from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from typing import AsyncIterator

import aiohttp
from aiohttp import web

from actors.store import Store
from actors.store.memory import InMemoryBackend
from transport.http.app import HttpDeps, make_http_app, start_http
from transport.http.limits import HttpLimits
from transport.http.metrics import SchedulerMetrics
from transport.server.service import StoreService
from transport.web import WebDeps

GUARD = 20  # seconds: a hang guard for awaited events, never a speed threshold


class Served:
    def __init__(self, host: str, port: int, metrics: SchedulerMetrics, release: asyncio.Event,
                 holding: asyncio.Queue[None]) -> None:
        self.host, self.port, self.metrics, self.release, self.holding = host, port, metrics, release, holding
        self.base = f"http://{host}:{port}"

    def rejections(self, limit: str) -> float:
        return self.metrics.sample("ksched_server_rejections_total", {"limit": limit}) or 0.0

    async def silent_socket(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(self.host, self.port)


@asynccontextmanager
async def serving(limits: HttpLimits) -> AsyncIterator[Served]:
    metrics = SchedulerMetrics()
    release = asyncio.Event()
    holding: asyncio.Queue[None] = asyncio.Queue()

    async def hold(request: web.Request) -> web.Response:  # a request that lasts until the test says so
        holding.put_nowait(None)
        await release.wait()
        return web.Response(text="released")

    app = make_http_app(HttpDeps(ready=lambda: True, metrics=metrics, on_reject=metrics.server_rejection))
    app.router.add_get("/hold", hold)
    server, (host, port) = await start_http(app, "127.0.0.1", 0, limits=limits, on_reject=metrics.server_rejection)
    try:
        yield Served(host, port, metrics, release, holding)
    finally:
        release.set()
        await server.cleanup()


async def closed_by_server(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sent until it closed the connection."""
    async with asyncio.timeout(GUARD):
        try:
            return await reader.read()
        except ConnectionResetError:
            return b""


async def close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    try:
        await writer.wait_closed()
    except OSError:
        pass


async def test_silent_sockets_at_the_cap_cannot_keep_out_a_health_check() -> None:
    async with serving(HttpLimits(max_connections=3, idle_timeout=3600)) as s:
        socks = [await s.silent_socket() for _ in range(3)]
        async with aiohttp.ClientSession() as session:
            async with asyncio.timeout(GUARD), session.get(s.base + "/healthz") as r:
                assert (r.status, await r.text()) == (200, "ok")
        # the longest-idle socket made room, and nothing else was closed
        assert await closed_by_server(socks[0][0]) == b""
        assert s.rejections("http_idle_evicted") == 1 and s.rejections("http_connections") == 0
        for _, w in socks:
            await close(w)


async def test_at_the_cap_with_every_connection_busy_a_new_one_gets_503_logged_once_and_counted(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="ksched.http")
    async with serving(HttpLimits(max_connections=2, idle_timeout=3600)) as s:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session:
            held = [asyncio.create_task(session.get(s.base + "/hold")) for _ in range(2)]
            for _ in held:
                async with asyncio.timeout(GUARD):
                    await s.holding.get()
            statuses = []
            for _ in range(3):
                reader, writer = await s.silent_socket()
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                statuses.append((await closed_by_server(reader)).split(b"\r\n", 1)[0])
                await close(writer)
            assert statuses == [b"HTTP/1.1 503 Service Unavailable"] * 3
            assert s.rejections("http_connections") == 3
            refusals = [r for r in caplog.records if "HTTP connection limit reached" in r.getMessage()]
            assert len(refusals) == 1  # three refusals within a second: one line
            s.release.set()
            for task in held:
                async with asyncio.timeout(GUARD):
                    resp = await task
                assert resp.status == 200
                resp.release()
            async with asyncio.timeout(GUARD), session.get(s.base + "/healthz") as r:
                assert r.status == 200


async def test_a_silent_socket_and_headers_that_never_complete_are_closed_after_the_idle_timeout() -> None:
    async with serving(HttpLimits(max_connections=10, idle_timeout=0.2)) as s:
        silent = await s.silent_socket()
        slow = await s.silent_socket()
        slow[1].write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # the blank line never comes
        assert await closed_by_server(silent[0]) == b""
        assert await closed_by_server(slow[0]) == b""
        assert s.rejections("http_idle_timeout") == 2
        await close(silent[1])
        await close(slow[1])


async def test_a_keep_alive_connection_is_closed_once_idle_after_its_response_not_during_a_long_request() -> None:
    async with serving(HttpLimits(max_connections=10, idle_timeout=0.2)) as s:
        reader, writer = await s.silent_socket()
        writer.write(b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        async with asyncio.timeout(GUARD):
            await s.holding.get()
        # a socket opened after the request started is closed as idle: the request has
        # outlived the idle timeout, and is still being handled
        later_reader, later_writer = await s.silent_socket()
        assert await closed_by_server(later_reader) == b""
        assert s.rejections("http_idle_timeout") == 1
        s.release.set()
        data = await closed_by_server(reader)  # then, idle after its response, it is closed too
        assert data.startswith(b"HTTP/1.1 200 OK") and data.endswith(b"released")
        assert s.rejections("http_idle_timeout") == 2
        await close(writer)
        await close(later_writer)


async def test_page_streams_waiting_for_their_token_cannot_take_every_connection() -> None:
    store = Store(InMemoryBackend())
    await store.load()
    store_task = asyncio.get_running_loop().create_task(store.run())
    metrics = SchedulerMetrics()
    web_deps = WebDeps(service=StoreService(store), registry=metrics.registry, token="a-token-of-16-bytes",
                       sample_seconds=3600.0, max_streams=2, on_reject=metrics.server_rejection)
    app = make_http_app(HttpDeps(ready=lambda: True, metrics=metrics, web=web_deps))
    server, (host, port) = await start_http(app, "127.0.0.1", 0, limits=HttpLimits(max_connections=4, idle_timeout=3600),
                                            on_reject=metrics.server_rejection)
    url = f"http://{host}:{port}"
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as session:
            async with asyncio.timeout(GUARD):
                silent = [await session.ws_connect(url.replace("http", "ws") + "/stream") for _ in range(2)]
                try:
                    await session.ws_connect(url.replace("http", "ws") + "/stream")
                    raise AssertionError("a third stream was accepted")
                except aiohttp.WSServerHandshakeError as err:
                    assert err.status == 503
                async with session.get(url + "/healthz") as r:
                    assert r.status == 200
                for ws in silent:
                    await ws.close()
        assert metrics.sample("ksched_server_rejections_total", {"limit": "ws_streams"}) == 1
    finally:
        await server.cleanup()
        store.inbox.close()
        await store_task


def test_streams_are_never_more_than_half_the_connections() -> None:
    assert HttpLimits().websocket_limit == 100
    assert HttpLimits(max_connections=50).websocket_limit == 25
    assert HttpLimits(max_connections=1, max_websockets=5).websocket_limit == 1
