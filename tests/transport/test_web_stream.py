"""The cluster page's HTTP side over real loopback sockets: the page and its
files, and its WebSocket over the real actor pipeline (fake clock): the store's
watch with resume, the token, explain, throughput samples and Permit waiters."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import aiohttp
import pytest

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.store.memory import InMemoryBackend
from actors.store.sqlite import SQLiteBackend
from transport.server.explain import explain_on_live_snapshot
from transport.http.app import HttpDeps, make_http_app, start_http
from transport.http.metrics import SchedulerMetrics
from transport.server.service import StoreService
from transport.web import WebDeps
from transport.web.columns import unflatten
from transport.web.feed import Waiter
from transport.web.routes import HUB
from transport.web.stream import CLOSE_UNAUTHORIZED

from tests.transport.conftest import node, pod

HOUR = 3600.0  # the sampler's period in these tests: it ticks once at start, tests call tick() themselves


class Page:
    """One page's stream, read frame by frame."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws

    async def next(self) -> dict[str, Any]:
        async with asyncio.timeout(10):  # a hang guard, not a speed threshold
            msg = await self.ws.receive()
        assert msg.type == aiohttp.WSMsgType.TEXT, f"stream closed: {msg!r}"
        return json.loads(msg.data)

    async def until(self, pred: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """Every frame up to and including the first that `pred` accepts."""
        seen = []
        while True:
            frame = await self.next()
            seen.append(frame)
            if pred(frame):
                return seen


def items(frame: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects one frame carries: an events frame's items, a snapshot frame's rows
    read back as the page reads them (ADDED at the snapshot's resourceVersion)."""
    if frame["type"] == "events":
        return frame["items"]
    if frame["type"] == "snapshot":
        return [{"type": "ADDED", "kind": frame["kind"], "resourceVersion": frame["resourceVersion"],
                 **unflatten(frame["columns"], row)} for row in frame["rows"]]
    return []


def events(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for f in frames for e in items(f)]


def has_event(name: str, pred: Callable[[dict[str, Any]], bool] = lambda e: True) -> Callable[[dict[str, Any]], bool]:
    return lambda f: any(e["object"]["metadata"]["name"] == name and pred(e) for e in items(f))


def bound(e: dict[str, Any]) -> bool:
    return bool(e["object"].get("spec", {}).get("nodeName"))


class Site:
    def __init__(self, pipeline: Pipeline, service: StoreService, base: str, app: Any, metrics: SchedulerMetrics,
                 session: aiohttp.ClientSession, waiting: list[Waiter]) -> None:
        self.pipeline, self.service, self.base, self.app, self.metrics, self.session = \
            pipeline, service, base, app, metrics, session
        self.waiting = waiting

    async def open(self, rv: int = 0, token: str | None = None) -> Page:
        ws = await self.session.ws_connect(self.base.replace("http", "ws") + "/stream")
        await ws.send_json({"token": token, "resourceVersion": rv})
        return Page(ws)


def _listing(waiting: list[Waiter]):  # noqa: ANN202
    async def current() -> list[Waiter]:
        return list(waiting)
    return current


async def start_site(pipeline: Pipeline, token: str | None = None) -> tuple[Site, Any]:
    service = StoreService(pipeline.store, explain=lambda p: explain_on_live_snapshot(pipeline, p),
                           clock=pipeline.clock.now)
    metrics = SchedulerMetrics()
    waiting: list[Waiter] = []  # what the test puts at Permit
    web = WebDeps(service=service, registry=metrics.registry, token=token,
                  waiting=_listing(waiting), sample_seconds=HOUR)
    app = make_http_app(HttpDeps(ready=lambda: True, metrics=metrics, web=web))
    runner, (host, port) = await start_http(app, "127.0.0.1", 0)
    site = Site(pipeline, service, f"http://{host}:{port}", app, metrics, aiohttp.ClientSession(), waiting)
    return site, runner


async def stop_site(site: Site, runner: Any) -> None:
    await site.session.close()
    await runner.cleanup()


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    pipeline = Pipeline(None, clock=FakeClock(), backend=InMemoryBackend())
    await pipeline.start()
    s, runner = await start_site(pipeline)
    yield s
    await stop_site(s, runner)
    await pipeline.stop()


async def test_the_page_its_script_and_its_style_are_served_from_the_root(site: Site) -> None:
    async with site.session.get(site.base + "/") as r:
        assert r.status == 200 and r.content_type == "text/html"
        html = await r.text()
    assert '<script src="/static/app.js"' in html and 'href="/static/app.css"' in html
    for path, kind in (("/static/app.js", "javascript"), ("/static/app.css", "text/css")):
        async with site.session.get(site.base + path) as r:
            assert r.status == 200 and kind in r.content_type


async def test_a_new_page_gets_every_current_object_and_then_each_change_with_requests_parsed(site: Site) -> None:
    await site.service.apply([node("n1", cpu="4", memory="8Gi")])
    page = await site.open()
    hello = await page.next()
    assert hello["type"] == "hello" and hello["resumed"] is False
    first = events(await page.until(has_event("n1")))
    assert [(e["type"], e["kind"], e["view"]["cpu"], e["view"]["memory"], e["view"]["pods"]) for e in first] == [
        ("ADDED", "Node", 4000, 8 << 30, 110)]

    await site.service.apply([pod("p1", cpu="500m")])
    seen = events(await page.until(has_event("p1", bound)))
    assert [e["type"] for e in seen if e["kind"] == "Pod"][-1] == "MODIFIED"
    assert seen[-1]["object"]["spec"]["nodeName"] == "n1"
    assert seen[-1]["view"] == {"cpu": 500, "memory": 0}  # not terminal: false is left out


async def test_a_page_that_reconnects_with_its_resource_version_gets_only_what_came_after(site: Site) -> None:
    await site.service.apply([node("n1"), pod("p1")])
    page = await site.open()
    frames = await page.until(has_event("p1", bound))
    last_rv = max(e["resourceVersion"] for e in events(frames))
    await page.ws.close()

    await site.service.apply([pod("p2")])
    again = await site.open(rv=last_rv)
    hello = await again.next()
    assert hello["resumed"] is True
    resumed = events(await again.until(has_event("p2", bound)))
    assert {e["object"]["metadata"]["name"] for e in resumed} == {"p2"}
    assert all(e["resourceVersion"] > last_rv for e in resumed)


async def test_a_resource_version_from_before_a_restart_starts_the_page_over_from_the_current_objects(tmp_path: Path) -> None:
    first = Pipeline(None, clock=FakeClock(), backend=SQLiteBackend(tmp_path))
    await first.start()
    await StoreService(first.store).apply([node("n1"), pod("p1")])
    await first.settle()
    await first.stop()

    again = Pipeline(None, clock=FakeClock(), backend=SQLiteBackend(tmp_path))
    await again.start()
    site, runner = await start_site(again)
    try:
        page = await site.open(rv=1)  # the daemon restarted: it keeps no history from before
        hello = await page.next()
        assert hello["resumed"] is False
        frames = await page.until(lambda f: f["type"] == "snapshot" and f["last"])
        assert sorted((e["type"], e["object"]["metadata"]["name"]) for e in events(frames)) == [
            ("ADDED", "n1"), ("ADDED", "p1")]
    finally:
        await stop_site(site, runner)
        await again.stop()


@pytest.mark.parametrize("given", [None, "wrong", ""], ids=["no token", "a wrong token", "an empty token"])
async def test_with_a_token_a_stream_without_the_right_one_is_refused_and_sees_no_object(given: str | None) -> None:
    pipeline = Pipeline(None, clock=FakeClock(), backend=InMemoryBackend())
    await pipeline.start()
    site, runner = await start_site(pipeline, token="s3cret")
    try:
        await site.service.apply([node("n1")])
        page = await site.open(token=given)
        refusal = await page.next()
        assert refusal == {"type": "error", "reason": "Unauthorized", "message": "token: missing or wrong"}
        closing = await page.ws.receive()
        assert closing.type == aiohttp.WSMsgType.CLOSE and closing.data == CLOSE_UNAUTHORIZED

        ok = await site.open(token="s3cret")
        assert (await ok.next())["type"] == "hello"
        assert events(await ok.until(has_event("n1")))[0]["object"]["metadata"]["name"] == "n1"
    finally:
        await stop_site(site, runner)
        await pipeline.stop()


@pytest.mark.parametrize("first, message", [
    ("not json", "the first message must be a JSON object {token, resourceVersion}"),
    ('{"resourceVersion": -1}', "resourceVersion: must be a non-negative integer"),
    ('{"resourceVersion": "12"}', "resourceVersion: must be a non-negative integer"),
], ids=["not JSON", "a negative resourceVersion", "a resourceVersion that is a string"])
async def test_a_bad_first_message_is_refused_naming_the_field(site: Site, first: str, message: str) -> None:
    ws = await site.session.ws_connect(site.base.replace("http", "ws") + "/stream")
    await ws.send_str(first)
    assert await Page(ws).next() == {"type": "error", "reason": "Invalid", "message": message}
    assert (await ws.receive()).type == aiohttp.WSMsgType.CLOSE


async def test_explain_over_the_stream_answers_for_a_stored_pod_and_names_what_is_missing(site: Site) -> None:
    await site.service.apply([node("small", cpu="1"), node("large", cpu="8"), pod("p1", cpu="2")])
    page = await site.open()
    await page.until(has_event("p1", bound))

    await page.ws.send_json({"op": "explain", "id": 7, "namespace": "default", "name": "p1"})
    answer = (await page.until(lambda f: f["type"] == "explain"))[-1]
    result = answer["result"]
    assert answer["id"] == 7 and result["chosen"] == "large" and result["boundTo"] == "large"
    assert result["nodes"]["small"]["filters"]["NodeResourcesFit"]["reasons"] == ["Insufficient cpu"]
    assert set(result["nodes"]["large"]["scores"]) >= {"NodeResourcesFit", "NodeResourcesBalancedAllocation"}

    await page.ws.send_json({"op": "explain", "id": 8, "namespace": "default", "name": "ghost"})
    missing = (await page.until(lambda f: f["type"] == "explain"))[-1]
    assert missing["id"] == 8 and missing["error"]["reason"] == "NotFound" and "ghost" in missing["error"]["message"]

    await page.ws.send_json({"op": "explain", "id": 9})
    nameless = (await page.until(lambda f: f["type"] == "explain"))[-1]
    assert nameless["error"] == {"reason": "Invalid", "message": "name: a pod name is required"}


async def test_open_pages_get_each_throughput_sample_and_the_permit_waiters_when_they_change(site: Site) -> None:
    page = await site.open()
    hello = await page.next()
    assert [set(s) for s in hello["samples"]] == [{"t", "scheduled", "pending"}]  # the sampler's first tick
    hub = site.app[HUB]

    site.metrics.schedule_attempt("scheduled", "default-scheduler", 0.01)
    site.metrics.schedule_attempt("scheduled", "other", 0.01)
    site.metrics.schedule_attempt("unschedulable", "default-scheduler", 0.01)
    site.metrics.set_pending_pods({"active": 1, "unschedulable": 2})
    site.waiting.append(Waiter("default/train-0", "default/train", "n1", 1030.0))
    await hub.tick(1000.0)
    await hub.tick(1001.0)  # same waiters: no second "waiting" frame
    site.waiting.clear()
    await hub.tick(1002.0)

    frames = [f for f in await page.until(lambda f: f["type"] == "waiting" and f["waiting"] == [])
              if f["type"] != "snapshot"]  # the (empty) cluster's snapshot comes first
    assert [(f["type"], f["sample"]["t"] if "sample" in f else f["waiting"]) for f in frames] == [
        ("sample", 1000.0),
        ("waiting", [{"pod": "default/train-0", "group": "default/train", "node": "n1", "deadline": 1030.0}]),
        ("sample", 1001.0),
        ("sample", 1002.0),
        ("waiting", []),
    ]
    assert frames[0]["sample"] == {"t": 1000.0, "scheduled": 2.0, "pending": 3.0}


def test_a_page_too_far_behind_gets_its_stream_ended_instead_of_an_ever_growing_queue(monkeypatch) -> None:
    from transport.web import stream

    monkeypatch.setattr(stream, "MAX_BACKLOG", 3)
    page = stream.PageStream(ws=None, service=None, hub=None, token=None)  # type: ignore[arg-type]
    for rv in range(1, 11):
        page.on_event("ADDED", "Pod", {"metadata": {"name": f"p{rv}"}}, rv)
    queued = [page.outbox.get_nowait() for _ in range(page.outbox.qsize())]
    assert [q[4] if isinstance(q, tuple) else "end" for q in queued] == [1, 2, 3, 4, "end"]
    assert page.overflowed


async def test_a_new_page_starts_from_snapshot_frames_nodes_first_and_the_next_page_at_that_version_reuses_them(site: Site) -> None:
    await site.service.apply([node("n1"), node("n2"), pod("p1"), pod("p2")])
    await site.pipeline.settle()
    snapshots = site.app[HUB].snapshots
    first = await site.open()
    hello = await first.next()
    frames = await first.until(lambda f: f["type"] == "snapshot" and f["last"])
    assert [f["kind"] for f in frames] == ["Node", "Pod"]
    assert {f["resourceVersion"] for f in frames} == {hello["resourceVersion"]}
    assert sorted((e["kind"], e["object"]["metadata"]["name"]) for e in events(frames)) == [
        ("Node", "n1"), ("Node", "n2"), ("Pod", "p1"), ("Pod", "p2")]
    assert all(e["object"]["spec"]["nodeName"] in ("n1", "n2") for e in events(frames) if e["kind"] == "Pod")
    assert snapshots.encoded == 1

    again = await site.open()
    assert (await again.next())["resourceVersion"] == hello["resourceVersion"]
    assert await again.until(lambda f: f["type"] == "snapshot" and f["last"]) == frames
    assert snapshots.encoded == 1  # sent as encoded for the first page

    await site.service.apply([pod("p3")])
    changed = await first.until(has_event("p3", bound))  # the first page follows with events after its snapshot
    assert all(e["resourceVersion"] > hello["resourceVersion"] for e in events(changed))
    third = await site.open()
    await third.next()
    assert "p3" in {e["object"]["metadata"]["name"] for e in events(await third.until(lambda f: f.get("last")))}
    assert snapshots.encoded == 2
