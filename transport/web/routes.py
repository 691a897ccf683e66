"""mount_web(app, deps): the page's routes on the daemon's HTTP app."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from aiohttp import web

from transport.server.auth_throttle import AuthThrottle
from transport.server.service import Service
from transport.web.feed import Waiter, WaitingSource
from transport.web.stream import HELLO_TIMEOUT_SECONDS, Hub, PageStream, StreamAuth

STATIC = Path(__file__).resolve().parent / "static"


async def _no_waiters() -> list[Waiter]:
    return []


@dataclass(frozen=True, slots=True)
class WebDeps:
    service: Service               # the msgpack server's service: watch, get, explain
    registry: Any                  # the daemon's prometheus_client registry (throughput samples)
    token: str | None = None       # --token-file's token; the stream asks for it
    waiting: WaitingSource = field(default=_no_waiters)  # pods held at Permit
    sample_seconds: float = 1.0    # how often throughput and waiters are sampled
    keep_samples: int = 600        # 10 minutes at 1 s
    hello_timeout: float = HELLO_TIMEOUT_SECONDS  # seconds for the stream's first message (the token)
    max_streams: int = 100                        # page streams open at once, signed in or not
    auth_throttle: AuthThrottle | None = None     # failed tokens per address, shared with the other ports
    on_reject: Callable[[str], None] | None = None  # counts refusals (/metrics)


HUB = web.AppKey("web_hub", Hub)
WEB = web.AppKey("web_deps", WebDeps)


async def _index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


async def _stream(request: web.Request) -> web.StreamResponse:
    deps = request.app[WEB]
    hub = request.app[HUB]
    if hub.open_sockets >= deps.max_streams:  # before the upgrade: streams cannot take every HTTP connection
        if deps.on_reject is not None:
            deps.on_reject("ws_streams")
        return web.Response(status=503, text=f"too many page streams (limit {deps.max_streams}); retry\n",
                            headers={"Retry-After": "1"})
    hub.open_sockets += 1
    try:
        ws = web.WebSocketResponse(heartbeat=30.0, compress=False)
        await ws.prepare(request)
        auth = StreamAuth(deps.token, request.remote, deps.hello_timeout, deps.auth_throttle, deps.on_reject)
        await PageStream(ws, deps.service, hub, auth).serve()
        return ws
    finally:
        hub.open_sockets -= 1


def mount_web(app: web.Application, deps: WebDeps) -> None:
    """Add GET /, /static/* and /stream to `app`, and the sampler that feeds the
    throughput chart for as long as the app runs."""
    app[WEB] = deps
    app[HUB] = hub = Hub(deps.registry, deps.waiting, deps.keep_samples)

    async def sampler(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.get_running_loop().create_task(hub.run(deps.sample_seconds))
        yield
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    async def close_streams(app: web.Application) -> None:
        await hub.close_all()

    app.cleanup_ctx.append(sampler)
    app.on_shutdown.append(close_streams)
    app.router.add_get("/", _index)
    app.router.add_get("/stream", _stream)
    app.router.add_static("/static", STATIC, append_version=False)
