"""Failed authentication is throttled per address, with one budget shared by the
msgpack port, HTTP and the page's WebSocket (transport.server.auth_throttle), over
real loopback sockets; a client from another address (127.0.0.2) is unaffected."""
from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator

import aiohttp
import pytest

from actors.store import Store
from actors.store.memory import InMemoryBackend
from transport.http.app import make_http_app, HttpDeps, start_http
from transport.http.metrics import SchedulerMetrics
from transport.protocol.framing import FrameDecoder, encode_frame
from transport.server.auth_throttle import AuthThrottle, AuthThrottleLimits, address_key
from transport.server.service import StoreService
from transport.server.tcp import Server, ServerLimits
from transport.web import WebDeps
from transport.web.stream import CLOSE_THROTTLED

TOKEN = "the-right-token-0123"
GUARD = 20  # seconds: a hang guard, never a speed threshold
ELSEWHERE = "127.0.0.2"  # another client address on the loopback


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_address_gets_its_burst_then_its_rate_and_others_keep_theirs() -> None:
    clock = FakeClock()
    t = AuthThrottle(AuthThrottleLimits(burst=3, per_second=0.5), clock=clock)
    for _ in range(3):
        assert t.retry_after("10.0.0.1") == 0
        t.failed("10.0.0.1")
    assert t.retry_after("10.0.0.1") == pytest.approx(2.0)  # one failure back every 2 s
    assert t.retry_after("10.0.0.2") == 0
    clock.now += 2.0
    assert t.retry_after("10.0.0.1") == 0
    t.failed("10.0.0.1")
    assert t.retry_after("10.0.0.1") == pytest.approx(2.0)
    clock.now += 6.0  # fully refilled: forgotten
    assert t.retry_after("10.0.0.1") == 0 and len(t) == 0


def test_the_table_is_bounded_and_ipv6_counts_by_64() -> None:
    t = AuthThrottle(AuthThrottleLimits(burst=1, per_second=0.001, max_addresses=2), clock=FakeClock())
    for peer in ("10.0.0.1", "10.0.0.2", "10.0.0.3"):
        t.failed(peer)
    assert len(t) == 2 and t.retry_after("10.0.0.1") == 0 and t.retry_after("10.0.0.3") > 0
    assert address_key(("2001:db8::1", 5, 0, 0)) == address_key("2001:db8::ffff") == "2001:db8::/64"
    assert address_key("::ffff:10.1.2.3") == "10.1.2.3"


@dataclass
class Ports:
    msgpack: tuple[str, int]
    http: str
    metrics: SchedulerMetrics

    def rejections(self, limit: str) -> float:
        return self.metrics.sample("ksched_server_rejections_total", {"limit": limit}) or 0.0


@asynccontextmanager
async def three_ports(burst: int) -> AsyncIterator[Ports]:
    store = Store(InMemoryBackend())
    await store.load()
    store_task = asyncio.get_running_loop().create_task(store.run())
    service = StoreService(store)
    metrics = SchedulerMetrics()
    throttle = AuthThrottle(AuthThrottleLimits(burst=burst, per_second=0.001))  # no refill within a test
    server = Server(service, token=TOKEN, limits=ServerLimits(auth_failure_delay=0.0),
                    on_reject=metrics.server_rejection, auth_throttle=throttle)
    mhost, mport = await server.start("127.0.0.1", 0)
    web = WebDeps(service=service, registry=metrics.registry, token=TOKEN, sample_seconds=3600.0,
                  auth_throttle=throttle, on_reject=metrics.server_rejection)
    app = make_http_app(HttpDeps(ready=lambda: True, metrics=metrics, token=TOKEN, on_reject=metrics.server_rejection,
                                 auth_throttle=throttle, web=web))
    http, (hhost, hport) = await start_http(app, "127.0.0.1", 0)
    try:
        yield Ports((mhost, mport), f"http://{hhost}:{hport}", metrics)
    finally:
        await http.cleanup()
        await server.close()
        store.inbox.close()
        await store_task


async def msgpack_hello(ports: Ports, token: str, local: str = "127.0.0.1") -> dict[str, Any]:
    reader, writer = await asyncio.open_connection(*ports.msgpack, local_addr=(local, 0))
    try:
        writer.write(encode_frame({"id": 1, "op": "hello", "token": token}))
        decoder = FrameDecoder(1 << 20)
        async with asyncio.timeout(GUARD):
            while True:
                frames = decoder.feed(await reader.read(65536))
                if frames:
                    return frames[0]
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass


def session(local: str = "127.0.0.1") -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(local, 0), force_close=True))


async def bearer(s: aiohttp.ClientSession, base: str, token: str) -> tuple[int, str | None]:
    async with asyncio.timeout(GUARD), s.get(base + "/metrics", headers={"Authorization": f"Bearer {token}"}) as r:
        return r.status, r.headers.get("Retry-After")


async def page_hello(s: aiohttp.ClientSession, base: str, token: str) -> tuple[dict[str, Any], Any]:
    async with asyncio.timeout(GUARD):
        ws = await s.ws_connect(base.replace("http", "ws") + "/stream")
        await ws.send_json({"token": token, "resourceVersion": 0})
        first = await ws.receive_json()
        closing = await ws.receive() if first["type"] == "error" else None
        await ws.close()
    return first, closing


async def test_http_guesses_use_up_the_address_budget_on_every_port(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="ksched.auth")
    async with three_ports(burst=3) as p:
        async with session() as s:
            assert [(await bearer(s, p.http, "guess"))[0] for _ in range(3)] == [401, 401, 401]
            # out of budget: even the right token is refused, before it is looked at
            status, retry_after = await bearer(s, p.http, TOKEN)
            assert status == 429 and retry_after is not None and int(retry_after) > 0
            first, closing = await page_hello(s, p.http, TOKEN)
            assert first["reason"] == "TooManyRequests" and closing.data == CLOSE_THROTTLED
        refused = await msgpack_hello(p, TOKEN)
        assert refused["ok"] is False and refused["error"]["reason"] == "TooManyRequests"

        # another address: its own budget, untouched
        async with session(ELSEWHERE) as s:
            assert await bearer(s, p.http, TOKEN) == (200, None)
            first, _ = await page_hello(s, p.http, TOKEN)
            assert first["type"] == "hello"
        assert (await msgpack_hello(p, TOKEN, local=ELSEWHERE))["ok"] is True

        assert (p.rejections("http_auth_failed"), p.rejections("http_auth_throttled"),
                p.rejections("ws_auth_throttled"), p.rejections("auth_throttled")) == (3, 1, 1, 1)
        messages = [r.getMessage() for r in caplog.records]
        assert any(m.startswith("authentication failed from 127.0.0.1 over HTTP") for m in messages)
        assert any(m.startswith("authentication from 127.0.0.1 over HTTP refused") for m in messages)
        assert sum("authentication failed" in m for m in messages) == 1  # three failures within a second: one line


async def test_websocket_and_msgpack_guesses_count_against_the_same_budget() -> None:
    async with three_ports(burst=2) as p:
        async with session() as s:
            first, _ = await page_hello(s, p.http, "guess")
            assert first["reason"] == "Unauthorized"
            assert (await msgpack_hello(p, "guess"))["error"]["reason"] == "Unauthorized"
            assert (await msgpack_hello(p, TOKEN))["error"]["reason"] == "TooManyRequests"
            first, _ = await page_hello(s, p.http, TOKEN)
            assert first["reason"] == "TooManyRequests"
            assert (await bearer(s, p.http, TOKEN))[0] == 429
        assert (p.rejections("ws_auth_failed"), p.rejections("auth_failed")) == (1, 1)
