"""Health and metrics over HTTP (aiohttp), built by make_http_app(deps).

    /healthz, /livez   200 "ok" while the process serves HTTP at all
    /readyz            200 once the store is loaded and the actors run, 503 before and while stopping;
                       with several daemons on etcd, a second line says who leads
    /metrics           Prometheus text format (transport.metrics), refreshed from the actors on each scrape
    /, /stream         the live cluster page and its WebSocket (transport.web), when deps.web is given

start_http() runs the app with an AppRunner (never run_app), so the daemon keeps
control of the event loop and of shutdown.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable

from aiohttp import web

from transport.metrics import CONTENT_TYPE, SchedulerMetrics

if TYPE_CHECKING:
    from transport.web import WebDeps


@dataclass(frozen=True, slots=True)
class HttpDeps:
    ready: Callable[[], bool]
    metrics: SchedulerMetrics
    refresh_metrics: Callable[[], Awaitable[None]] | None = None  # pulls gauges from the actors
    leadership: Callable[[], Awaitable[str]] | None = None  # several daemons on etcd: who leads, in a line
    web: "WebDeps | None" = None  # the cluster page at / (transport.web); None: no page


DEPS = web.AppKey("deps", HttpDeps)


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
    app = web.Application()
    app[DEPS] = deps
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/livez", _healthz)
    app.router.add_get("/readyz", _readyz)
    app.router.add_get("/metrics", _metrics)
    if deps.web is not None:
        from transport.web import mount_web

        mount_web(app, deps.web)
    return app


async def start_http(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, tuple[str, int]]:
    """Serve `app`; the caller awaits runner.cleanup() at shutdown."""
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    bound = runner.addresses[0] if runner.addresses else (host, port)  # the real port when port is 0
    return runner, (bound[0], bound[1])
