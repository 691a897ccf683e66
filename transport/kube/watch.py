"""Watches: GET <collection>?watch=true as newline-delimited JSON events, the same
store watch the msgpack port and the cluster page use (StoreService.watch).

- resourceVersion unset or "0": every current match as ADDED, then live events;
  n: every change after n, then live. Too old for the store's history: one ERROR
  event carrying a 410 Expired Status, then the stream ends (kube-apiserver's answer).
- Selectors and the namespace are applied to each event's object; an object that
  stops matching is sent as DELETED, once it had been sent.
- allowWatchBookmarks=true: a BOOKMARK (an empty object of the kind carrying only
  metadata.resourceVersion) when kube-apiserver's watch cache sends one: every
  BOOKMARK_SECONDS, and PRE_TIMEOUT_SECONDS before timeoutSeconds ends the stream
  (cache_watcher.go nextBookmarkTime), none when that moment is already past.
- timeoutSeconds (whole seconds; 0 or none: no end) ends the stream normally;
  clients re-watch from their last version.
- With kubectl's Table Accept each event's object is a one-row Table (the columns on
  the first event).
A client that falls MAX_BACKLOG events behind is cut off (it re-watches, as from a timeout).
A watch ends quietly however it ends (client gone at any point, timeout, server stop):
a client that left is not an error.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import re
from typing import Any

from aiohttp import web

from framework.api.errors import ValidationError
from framework.api.objects import parse_object
from transport.kube import table
from transport.kube.reads import related_objects
from transport.kube.request import KUBE, Target, decorate, flag
from transport.kube.status import KubeError, bad_request, failure, from_api_error
from transport.protocol.wire import ApiError, Reason

BOOKMARK_SECONDS = 60.0  # the watch cache's bookmark frequency
PRE_TIMEOUT_SECONDS = 2.0  # the last bookmark comes this long before the stream's deadline
LIVENESS_SECONDS = 1.0  # how often an idle stream checks that its client is still there
MAX_BACKLOG = 10_000
_END = object()
WATCHES = web.AppKey("kube_watches", set)  # the queues of open watches, ended at shutdown


async def end_watches(app: web.Application) -> None:
    """on_shutdown: end every open watch, so the server's cleanup does not wait for them."""
    for queue in list(app.get(WATCHES, ())):
        queue.put_nowait(_END)


def _line(event_type: str, obj: Any) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


def _resource_version(text: str, target: Target) -> int:
    """A watch's resourceVersion, an unsigned integer as the watch cache parses it; else
    422 as kube-apiserver words a version it cannot parse."""
    if re.fullmatch(r"[0-9]+", text) and int(text) < 2**64:
        return int(text)
    why = "value out of range" if re.fullmatch(r"[0-9]+", text) else "invalid syntax"
    raise KubeError(422, "Invalid", f'{target.qualified} "" is invalid: resourceVersion: Invalid value: '
                    f'{json.dumps(text)}: strconv.ParseUint: parsing {json.dumps(text)}: {why}',
                    kind=target.qualified.split(".")[0], group=target.resource.group)


def _next_bookmark(now: float, deadline: float | None) -> float | None:
    """When the next BOOKMARK is due: in BOOKMARK_SECONDS, or PRE_TIMEOUT_SECONDS before the
    deadline when that comes first; None when that moment has passed."""
    at = now + BOOKMARK_SECONDS
    if deadline is not None:
        at = min(at, deadline - PRE_TIMEOUT_SECONDS)
    return at if at >= now else None


async def watch(request: web.Request, target: Target) -> web.StreamResponse:
    from actors.store.select import Selectors

    deps = request.app[KUBE]
    res = target.resource
    q = request.query
    try:
        selectors = Selectors(q.get("labelSelector") or None, q.get("fieldSelector") or None, res.kind)
    except ValidationError as err:
        raise bad_request(str(err).split(": ", 1)[-1]) from None
    from_rv = _resource_version(q.get("resourceVersion") or "0", target)
    try:
        # whole seconds, as kube's int64 field: no nan or inf to wait on forever
        timeout = int(q["timeoutSeconds"]) if q.get("timeoutSeconds") else None
        timeout = timeout or None  # 0 is unset, as kube-apiserver reads it
    except ValueError:
        raise bad_request(f"timeoutSeconds: must be an integer, not {q['timeoutSeconds']!r}") from None
    as_table = table.wants_table(request.headers.get("Accept", ""))
    queue: asyncio.Queue[Any] = asyncio.Queue()
    sent: set[str] = set()  # keys sent as matching, for DELETED when they stop matching
    cut = False

    def sink(event_type: str, kind: str, raw: dict[str, Any], rv: int) -> None:
        nonlocal cut
        if cut:
            return
        if queue.qsize() > MAX_BACKLOG:
            cut = True
            queue.put_nowait(_END)
            return
        queue.put_nowait((event_type, raw, rv))

    def select(event_type: str, raw: dict[str, Any]) -> str | None:
        meta = raw.get("metadata") or {}
        if target.namespace and res.namespaced and meta.get("namespace", "default") != target.namespace:
            return None
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        try:
            matches = selectors.matches(parse_object(raw))
        except ValidationError:
            matches = False
        if event_type == "DELETED":
            sent.discard(key)
            return "DELETED" if matches else None
        if matches:
            sent.add(key)
            return event_type
        if key in sent:
            sent.discard(key)
            return "DELETED"
        return None

    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json",
                                                        "Transfer-Encoding": "chunked"})
    try:
        watch_id, now_rv = await deps.service.watch((res.kind,), from_rv, sink)
    except ApiError as err:
        if err.reason == Reason.EXPIRED:
            text = err.message if err.message.startswith("too old resource version") else \
                f"too old resource version: {from_rv} ({err.message})"
            status = failure(410, "Expired", text)
        else:
            status = from_api_error(err, target.qualified).status()
        with contextlib.suppress(ConnectionResetError):  # a client gone first needs no answer
            await response.prepare(request)
            await response.write(_line("ERROR", status))
            await response.write_eof()
        return response
    try:
        await response.prepare(request)
    except ConnectionResetError:  # the client left while the watch was being set up
        deps.service.unwatch(watch_id)
        return response
    open_watches = request.app[WATCHES]
    open_watches.add(queue)
    first_table = True
    last_rv = max(now_rv, from_rv)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout if timeout is not None else None
    bookmarks = flag(request, "allowWatchBookmarks")
    next_bookmark = _next_bookmark(loop.time(), deadline)
    try:
        while True:
            now = loop.time()
            wait = LIVENESS_SECONDS
            if bookmarks and next_bookmark is not None:
                wait = min(wait, max(next_bookmark - now, 0.0))
            if deadline is not None:
                if deadline <= now:
                    break
                wait = min(wait, deadline - now)
            due = bookmarks and next_bookmark is not None and now >= next_bookmark
            try:
                item = ("BOOKMARK", None, 0) if due else await asyncio.wait_for(queue.get(), wait)
            except asyncio.TimeoutError:
                if request.transport is None or request.transport.is_closing():
                    break  # the client went away
                continue
            if item is _END:
                break
            event_type, raw, rv = item
            if event_type == "BOOKMARK":
                next_bookmark = _next_bookmark(loop.time(), deadline)
                obj: Any = {"kind": res.api_kind, "apiVersion": res.group_version,
                            "metadata": {"resourceVersion": str(last_rv)}}
                await response.write(_line("BOOKMARK", obj))
                continue
            last_rv = max(last_rv, rv)
            if event_type == "DELETED":  # the last state, at the deletion's resourceVersion (as upstream)
                raw = {**raw, "metadata": {**(raw.get("metadata") or {}), "resourceVersion": str(rv)}}
            chosen = select(event_type, raw)
            if chosen is None:
                continue
            obj = decorate(raw, res)
            if as_table:
                related = await related_objects(request, res.kind, [obj])
                obj = table.to_table(res.kind, [obj], deps.now(), list_meta={"resourceVersion": str(last_rv)},
                                     include_object=q.get("includeObject", "Metadata"), related=related,
                                     with_columns=first_table)
                first_table = False
            await response.write(_line(chosen, obj))
    except ConnectionResetError:
        return response  # the client went away mid-write
    finally:
        open_watches.discard(queue)
        deps.service.unwatch(watch_id)
    with contextlib.suppress(ConnectionResetError):  # the client left first: nothing to end
        await response.write_eof()
    return response
