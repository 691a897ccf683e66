"""What the HTTP port lets its clients hold: a connection cap and an idle timeout.

ConnectionGate is the protocol factory the HTTP listener is created with; it hands
each admitted connection to aiohttp's own request handler and keeps, per connection,
whether a request is being handled (track_requests, the app's outermost middleware,
marks it; a WebSocket is a request for as long as it is open).

- A connection is idle from the moment it is accepted, and again once its last
  response is written, until its next request's headers are complete. One idle for
  `idle_timeout` seconds is closed: that bounds keep-alive connections, silent
  sockets and request headers that never complete (slowloris) alike.
- At `max_connections` a new connection closes the connection idle the longest
  (as nginx reuses idle keep-alive connections when it runs out), so silent sockets
  cannot keep a health check out; when none is idle, the new connection is answered
  `503 Service Unavailable` (Retry-After: 1) and closed.
Each refusal, eviction and timeout is counted by on_reject (http_connections,
http_idle_evicted, http_idle_timeout in ksched_server_rejections_total), and
refusals are logged at most once a second.
"""
from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from aiohttp import web

from transport.server.auth_throttle import RateLimitedLog

log = logging.getLogger("ksched.http")


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpLimits:
    """Defaults follow kube-apiserver's HTTP server where it has one (its
    ReadHeaderTimeout is 32 s); it sets no connection cap, we must (descriptors)."""

    max_connections: int = 1000
    idle_timeout: float = 32.0  # seconds to send a request's headers, from connect or the last response
    max_websockets: int = 100  # the cluster page's streams (never idle, so never evicted): a few per viewer

    @property
    def websocket_limit(self) -> int:
        """Streams allowed at once: never more than half the connections, so that
        streams (busy for their whole life) always leave room for other requests."""
        return max(1, min(self.max_websockets, self.max_connections // 2))


_REFUSAL = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
            b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s")


class ConnectionGate:
    """The listener's protocol factory (see the module doc)."""

    def __init__(self, limits: HttpLimits, on_reject: Callable[[str], None] | None = None) -> None:
        self.limits = limits
        self.on_reject = on_reject
        self.factory: Callable[[], Any] | None = None  # aiohttp's handler factory (runner.server), set once set up
        self.open: set[GatedConnection] = set()
        self.idle: OrderedDict[GatedConnection, None] = OrderedDict()  # oldest idle first
        self._by_handler: dict[Any, GatedConnection] = {}
        self._refused_log = RateLimitedLog(log)

    def __call__(self) -> asyncio.Protocol:
        return GatedConnection(self)

    def reject(self, limit: str) -> None:
        if self.on_reject is not None:
            self.on_reject(limit)

    def admit(self, conn: GatedConnection) -> bool:
        if len(self.open) >= self.limits.max_connections:
            if not self.idle:
                self.reject("http_connections")
                self._refused_log.event("HTTP connection limit reached (%d connections, none idle): refused %s",
                                        self.limits.max_connections, conn.peer)
                return False
            oldest = next((c for c in self.idle if not c.writing()), None)
            if oldest is None:
                self.reject("http_connections")
                self._refused_log.event("HTTP connection limit reached (%d connections, none idle): refused %s",
                                        self.limits.max_connections, conn.peer)
                return False
            self.reject("http_idle_evicted")
            oldest.close()
        self.open.add(conn)
        self.idle[conn] = None
        return True

    def release(self, conn: GatedConnection) -> None:
        self.open.discard(conn)
        self.idle.pop(conn, None)
        if conn.handler is not None:
            self._by_handler.pop(conn.handler, None)

    def connection_of(self, handler: Any) -> GatedConnection | None:
        return self._by_handler.get(handler)


class GatedConnection(asyncio.Protocol):
    """One HTTP connection: aiohttp's handler behind the gate's bookkeeping."""

    def __init__(self, gate: ConnectionGate) -> None:
        self.gate = gate
        self.handler: Any = None
        self.transport: asyncio.Transport | None = None
        self.peer: object = None
        self.requests = 0  # being handled now
        self.closed = False
        self._timer: asyncio.TimerHandle | None = None

    # --- asyncio.Protocol -------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.peer = transport.get_extra_info("peername")
        if not self.gate.admit(self):
            body = f"too many HTTP connections (limit {self.gate.limits.max_connections}); retry\n".encode()
            transport.write(_REFUSAL % (len(body), body))  # type: ignore[attr-defined]
            self.closed = True
            transport.close()
            return
        assert self.gate.factory is not None
        self._arm()  # before aiohttp arms its own keep-alive timer: ours fires first and is counted
        self.handler = self.gate.factory()
        self.gate._by_handler[self.handler] = self
        self.handler.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._disarm()
        self.gate.release(self)
        if self.handler is not None:
            self.handler.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.handler is not None:
            self.handler.data_received(data)

    def eof_received(self) -> bool | None:
        return self.handler.eof_received() if self.handler is not None else None

    def pause_writing(self) -> None:
        if self.handler is not None:
            self.handler.pause_writing()

    def resume_writing(self) -> None:
        if self.handler is not None:
            self.handler.resume_writing()

    # --- requests and idleness ---------------------------------------------------------

    def writing(self) -> bool:
        """Its last response is still on its way out."""
        return self.transport is not None and bool(self.transport.get_write_buffer_size())

    def request_started(self) -> None:
        self.requests += 1
        self.gate.idle.pop(self, None)
        self._disarm()

    def request_done(self) -> None:
        self.requests -= 1
        if self.requests == 0 and not self.closed:
            self.gate.idle[self] = None
            self._arm()

    def close(self) -> None:
        """Close now (idle timeout or eviction); the gate forgets it at once."""
        self.closed = True
        self._disarm()
        self.gate.release(self)
        if self.transport is not None:
            self.transport.close()

    def _arm(self) -> None:
        self._disarm()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.gate.limits.idle_timeout, self._expire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        if self.closed or self.requests:
            return
        if self.writing():
            self._arm()  # the last response is still being written
            return
        self.gate.reject("http_idle_timeout")
        self.close()


GATE = web.AppKey("connection_gate", ConnectionGate)


@web.middleware
async def track_requests(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                         ) -> web.StreamResponse:
    """Marks the connection busy while a request (or a WebSocket) is handled."""
    gate = request.app.get(GATE)
    conn = gate.connection_of(request.protocol) if gate is not None else None
    if conn is None:
        return await handler(request)
    conn.request_started()
    try:
        return await handler(request)
    finally:
        conn.request_done()
