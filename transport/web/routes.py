"""mount_web(app, deps): the page's routes on the daemon's HTTP app."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator

from aiohttp import web

from transport.server.service import Service
from transport.web.feed import Waiter, WaitingSource
from transport.web.stream import Hub, PageStream

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


HUB = web.AppKey("web_hub", Hub)
WEB = web.AppKey("web_deps", WebDeps)


async def _index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


async def _stream(request: web.Request) -> web.WebSocketResponse:
    ws = web.WebSocketResponse(heartbeat=30.0)
    await ws.prepare(request)
    deps = request.app[WEB]
    await PageStream(ws, deps.service, request.app[HUB], deps.token).serve()
    return ws


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
