"""Health and metrics over HTTP (aiohttp), built by make_http_app(deps).

    /healthz, /livez   200 "ok" while the process serves HTTP at all
    /readyz            200 once the store is loaded and the actors run, 503 before and while stopping;
                       with several daemons on etcd, a second line says who leads
    /metrics           Prometheus text format (transport.http.metrics), refreshed from the actors on each scrape
    /, /stream         the live cluster page and its WebSocket (transport.web), when deps.web is given
    /version, /api, /apis, /openapi/v3
                       the Kubernetes REST API (transport.kube), when deps.kube is given

With a token configured (HttpDeps.token), every path except /healthz, /livez and
/readyz needs `Authorization: Bearer TOKEN` (401 otherwise: also when the header comes
twice; a token in the query string, access_token=, is never read, as kube-apiserver
never reads it), and so does the page's
data: its /stream asks for the token in its first message, while the page itself
(/, /static/) holds no data. The daemon serves HTTP over the same TLS as its
msgpack port.

start_http() runs the app with an AppRunner (never run_app), so the daemon keeps
control of the event loop and of shutdown; its listener admits connections through
transport.http.limits (a connection cap and an idle timeout, HttpLimits).

Failed Bearer tokens count against the peer address's budget in the daemon's shared
AuthThrottle (transport.server.auth_throttle): an address out of budget gets 429 with
Retry-After before its token is looked at.
"""
from __future__ import annotations

import asyncio
import hmac
import logging
import math
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from transport.http.limits import GATE, ConnectionGate, HttpLimits, track_requests
from transport.http.metrics import CONTENT_TYPE, SchedulerMetrics
from transport.server.auth_throttle import AuthThrottle, RateLimitedLog

if TYPE_CHECKING:
    from transport.kube import KubeDeps
    from transport.web import WebDeps


@dataclass(frozen=True, slots=True)
class HttpDeps:
    ready: Callable[[], bool]
    metrics: SchedulerMetrics
    refresh_metrics: Callable[[], Awaitable[None]] | None = None  # pulls gauges from the actors
    leadership: Callable[[], Awaitable[str]] | None = None  # several daemons on etcd: who leads, in a line
    token: str | None = None  # Bearer token for everything but the health endpoints
    on_reject: Callable[[str], None] | None = None  # counts refused requests (/metrics)
    web: "WebDeps | None" = None  # the cluster page at / (transport.web); None: no page
    auth_throttle: AuthThrottle | None = None  # failed tokens per address, shared with the other ports
    kube: "KubeDeps | None" = None  # the Kubernetes REST API (transport.kube); None: not served


DEPS = web.AppKey("deps", HttpDeps)
OPEN_PATHS = frozenset({"/healthz", "/livez", "/readyz"})
# The cluster page (transport.web) is loaded by a browser, which cannot send a Bearer
# header: its HTML and assets hold no data, and its stream checks the token itself.
PAGE_PATHS = frozenset({"/", "/stream"})


@web.middleware
async def require_token(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                        ) -> web.StreamResponse:
    """The msgpack port's token, as a Bearer token, on every path but the health checks."""
    deps = request.app[DEPS]
    if (deps.token is None or request.path in OPEN_PATHS
            or (deps.web is not None and (request.path in PAGE_PATHS or request.path.startswith("/static/")))):
        return await handler(request)
    throttle = deps.auth_throttle
    wait = throttle.retry_after(request.remote, "HTTP") if throttle is not None else 0.0
    if wait:
        if deps.on_reject is not None:
            deps.on_reject("http_auth_throttled")
        return web.Response(status=429, text="Too many failed authentications from this address; retry later\n",
                            headers={"Retry-After": str(math.ceil(wait))})
    sent = request.headers.getall("Authorization", [])
    # exactly one header: two could disagree, and which one a proxy on the way read is unknown
    scheme, _, given = (sent[0] if len(sent) == 1 else "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), deps.token.encode()):
        if deps.on_reject is not None:
            deps.on_reject("http_auth_failed")
        if throttle is not None:
            throttle.failed(request.remote, "HTTP")
        headers = {"WWW-Authenticate": 'Bearer realm="ksched"'}
        if deps.kube is not None and not request.path.startswith(("/metrics", "/stream")):
            from transport.kube.status import failure, json_response

            return json_response(failure(401, "Unauthorized", "Unauthorized"), status=401, headers=headers)
        return web.Response(status=401, text="Unauthorized: send Authorization: Bearer TOKEN\n", headers=headers)
    return await handler(request)


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _readyz(request: web.Request) -> web.Response:
    deps = request.app[DEPS]
    if deps.ready():
        return web.Response(text="ok" if deps.leadership is None else f"ok\n{await deps.leadership()}")
    return web.Response(status=503, text="not ready")


async def _metrics(request: web.Request) -> web.Response:
    deps = request.app[DEPS]
    if deps.refresh_metrics is not None:
        await deps.refresh_metrics()
    return web.Response(body=deps.metrics.render(), headers={"Content-Type": CONTENT_TYPE})


def make_http_app(deps: HttpDeps) -> web.Application:
    app = web.Application(middlewares=[track_requests, require_token])
    app[DEPS] = deps
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/livez", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/metrics", _metrics)
    if deps.web is not None:
        from transport.web import mount_web

        mount_web(app, deps.web)
    if deps.kube is not None:
        from transport.kube import mount_kube

        mount_kube(app, deps.kube)
    return app


class MalformedHttpLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's request-handling log, with requests that are not well-formed HTTP (a
    bad chunk size, a bad header line: aiohttp answers them 400 itself) reported as a
    rate-limited warning without a traceback, as Go's server answers them silently:
    a client's garbage is no fault of the daemon and must not flood its log."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__(logger, {})
        self.malformed = RateLimitedLog(logger)

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info")
        if level >= logging.WARNING and isinstance(exc, HttpProcessingError):  # aiohttp's debug lines stay debug
            self.malformed.event("malformed HTTP request refused (400): %s", str(exc).splitlines()[0][:200])
            return
        super().log(level, msg, *args, **kwargs)


class HttpServer:
    """A running HTTP listener and its app; `cleanup()` stops both."""

    def __init__(self, runner: web.AppRunner, server: asyncio.AbstractServer, gate: ConnectionGate) -> None:
        self.runner, self.server, self.gate = runner, server, gate

    async def cleanup(self) -> None:
        self.server.close()  # no new connections; the runner closes the open ones
        await self.runner.cleanup()


async def start_http(app: web.Application, host: str, port: int, ssl_context: ssl.SSLContext | None = None,
                     limits: HttpLimits | None = None, on_reject: Callable[[str], None] | None = None
                     ) -> tuple[HttpServer, tuple[str, int]]:
    """Serve `app` (over TLS with `ssl_context`) within `limits`; the caller awaits
    cleanup() on the returned server at shutdown."""
    limits = limits if limits is not None else HttpLimits()
    gate = ConnectionGate(limits, on_reject)
    app[GATE] = gate
    runner = web.AppRunner(app, access_log=None, handle_signals=False, keepalive_timeout=limits.idle_timeout,
                           logger=MalformedHttpLog(logging.getLogger("aiohttp.server")))
    await runner.setup()
    gate.factory = runner.server
    try:
        server = await asyncio.get_running_loop().create_server(
            gate, host, port, ssl=ssl_context, reuse_address=True,
            ssl_handshake_timeout=limits.idle_timeout if ssl_context is not None else None)
    except BaseException:
        await runner.cleanup()
        raise
    bound = server.sockets[0].getsockname() if server.sockets else (host, port)  # the real port when port is 0
    return HttpServer(runner, server, gate), (bound[0], bound[1])
