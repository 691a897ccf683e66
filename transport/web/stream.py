"""The page's WebSocket (GET /stream): one per open page.

Protocol (JSON text frames):
  page -> server, first: {"token": str|null, "resourceVersion": int}
      resourceVersion 0 starts from the current objects (each sent as ADDED);
      n > 0 resumes after n, as a watch does after a reconnect.
  server -> page:
      {"type": "error", "reason": "Unauthorized", "message": ...}   then close (4401)
      {"type": "error", "reason": "TooManyRequests", "message": ...} then close (4429): this address
          failed too often (transport.server.auth_throttle); the token was not looked at
      {"type": "hello", "resourceVersion": n, "resumed": bool, "now": wall,
       "samples": [...], "waiting": [...]}                           resumed false: drop what you hold
      {"type": "snapshot", "kind", "columns", "rows", "resourceVersion", "last"}
          resumed false only: every current object at resourceVersion n, as rows of
          columns (snapshot.py, columns.py), nodes first; n is the page's once "last"
          is true. The events that follow come after n.
      {"type": "events", "items": [{"type", "kind", "object", "resourceVersion", "view"}]}
          object: the fields the page shows; view: what the scheduler parses from it
          (feed.page_item: one row of columns.py read back). At most FRAME_ITEMS
          items a frame, so the page parses and draws the first while the server
          encodes the next.
      {"type": "sample", "sample": {t, scheduled, pending}, "now": wall}
      {"type": "waiting", "waiting": [{pod, group, node, deadline}], "now": wall}
      {"type": "explain", "id": n, "result": {...}} | {"type": "explain", "id": n, "error": {reason, message}}
  page -> server, later: {"op": "explain", "id": n, "namespace": ns, "name": pod}

A page that does not keep up (more than MAX_BACKLOG events queued) is closed;
it reconnects and resumes from the last resourceVersion it saw. Nothing on the
stream writes to the store.
"""
from __future__ import annotations

import asyncio
import collections
import functools
import hmac
import json
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

from aiohttp import WSCloseCode, WSMsgType, web

from transport.server.auth_throttle import AuthThrottle
from transport.server.service import Service
from transport.web.feed import Sample, SampleRing, Waiter, WaitingSource, page_item, sample_metrics
from transport.web.snapshot import Replay, SnapshotCache, snapshot_frames
from transport.protocol.wire import ApiError, Reason

log = logging.getLogger("ksched.web")

# (scheduling.k8s.io's PodGroup by its group-qualified key: framework.api.groups)
KINDS = ("Pod", "Node", "PodGroup", "PodGroup.scheduling.k8s.io", "ClusterQueue", "LocalQueue", "Workload",
         "ResourceSlice", "ResourceClaim")
MAX_BACKLOG = 100_000
FRAME_ITEMS = 2_000
HELLO_TIMEOUT_SECONDS = 30.0
CLOSE_UNAUTHORIZED = 4401
CLOSE_THROTTLED = 4429
CLOSE_TOO_SLOW = 4408
_DONE = object()
# Objects are JSON-shaped, but msgpack clients can store bytes; those go out as text
# rather than ending the stream.
_dumps = functools.partial(json.dumps, default=str, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class StreamAuth:
    """How one stream checks its first message: the token, who is asking, how long
    it may take, and the daemon's shared throttle of failed tokens."""

    token: str | None
    peer: str | None = None
    hello_timeout: float = HELLO_TIMEOUT_SECONDS
    throttle: AuthThrottle | None = None
    on_reject: Callable[[str], None] | None = None

    def reject(self, limit: str) -> None:
        if self.on_reject is not None:
            self.on_reject(limit)


class Outbox:
    """The frames waiting for one page: a deque and a wake-up flag. It does what
    asyncio.Queue did here at a fraction of the cost per item, which counts when a
    page starts on 50,000 objects (one item each)."""

    def __init__(self) -> None:
        self._items: collections.deque[Any] = collections.deque()
        self._ready = asyncio.Event()

    def put_nowait(self, item: Any) -> None:
        self._items.append(item)
        if not self._ready.is_set():
            self._ready.set()

    def get_nowait(self) -> Any:
        return self._items.popleft()

    async def get(self) -> Any:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        return self._items.popleft()

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()


class Hub:
    """What every open page shares: the throughput samples and the Permit waiters,
    taken every `sample_seconds` by `run()` (tests call `tick(now)`), pushed to
    each stream as they change."""

    def __init__(self, registry: Any, waiting: WaitingSource, keep: int = 600) -> None:
        self.registry = registry
        self.waiting = waiting
        self.samples = SampleRing(keep)
        self.last_waiting: list[Waiter] = []
        self.streams: set[PageStream] = set()
        self.snapshots = SnapshotCache()
        self.open_sockets = 0  # /stream requests being served, before and after their token (routes.py)

    async def tick(self, now: float) -> None:
        sample = sample_metrics(self.registry, now)
        self.samples.add(sample)
        waiting = await self.waiting()
        changed = waiting != self.last_waiting
        self.last_waiting = waiting
        for s in list(self.streams):
            s.push_sample(sample, now)
            if changed:
                s.push_waiting(waiting, now)

    async def run(self, sample_seconds: float) -> None:
        while True:
            try:
                await self.tick(time.time())
            except Exception:  # a bad sample must not end the page's feed
                log.exception("cluster page: sampling failed")
            await asyncio.sleep(sample_seconds)

    async def close_all(self) -> None:
        for s in list(self.streams):
            await s.ws.close(code=WSCloseCode.GOING_AWAY, message=b"the daemon is stopping")


class PageStream:
    """One page's WebSocket."""

    def __init__(self, ws: web.WebSocketResponse, service: Service, hub: Hub, token: StreamAuth | str | None) -> None:
        self.ws = ws
        self.service = service
        self.hub = hub
        self.auth = token if isinstance(token, StreamAuth) else StreamAuth(token)
        self.token = self.auth.token
        self.outbox = Outbox()
        self.watch_id: int | None = None
        self.overflowed = False
        self._initial: Replay | None = None  # what the watch replays, while it does
        self.snapshot: tuple[int, Replay] | None = None  # (resourceVersion, the objects) to send first

    # --- what the hub and the watch push (synchronous, on the loop) ---------------

    def _push(self, frame: Any) -> None:
        if self.overflowed:
            return
        if self.outbox.qsize() > MAX_BACKLOG:
            self.overflowed = True  # the pump closes the socket; the page resumes from its resourceVersion
            self.outbox.put_nowait(_DONE)
            return
        self.outbox.put_nowait(frame)

    def push_sample(self, sample: Sample, now: float) -> None:
        self._push({"type": "sample", "sample": sample.to_json(), "now": now})

    def push_waiting(self, waiting: list[Waiter], now: float) -> None:
        self._push({"type": "waiting", "waiting": [w.to_json() for w in waiting], "now": now})

    def on_event(self, event_type: str, kind: str, obj: Any, rv: int) -> None:
        """A store object (KubeObject, never changed in place); encoded when sent."""
        if self._initial is not None:
            self._initial.add(event_type, kind, obj, rv)
            return
        self._push(("event", event_type, kind, obj, rv))

    # --- the connection ------------------------------------------------------------

    async def serve(self) -> None:
        first = await self._receive_hello()
        if first is None:
            return
        from_rv = first.get("resourceVersion") or 0
        if not isinstance(from_rv, int) or isinstance(from_rv, bool) or from_rv < 0:
            await self._refuse(Reason.INVALID, "resourceVersion: must be a non-negative integer")
            return
        try:
            resumed, rv = await self._watch(from_rv)
        except ApiError as err:
            await self._refuse(err.reason, err.message)
            return
        self.hub.streams.add(self)
        try:
            now = time.time()
            await self.ws.send_json({"type": "hello", "resourceVersion": rv, "resumed": resumed, "now": now,
                                     "samples": self.hub.samples.to_json(),
                                     "waiting": [w.to_json() for w in self.hub.last_waiting]}, dumps=_dumps)
            async with asyncio.TaskGroup() as tg:
                pump = tg.create_task(self._pump())
                await self._read_requests(tg)
                self.outbox.put_nowait(_DONE)
                await pump
        finally:
            self.hub.streams.discard(self)
            if self.watch_id is not None:
                self.service.unwatch(self.watch_id)

    async def _receive_hello(self) -> dict[str, Any] | None:
        try:
            msg = await self.ws.receive(timeout=self.auth.hello_timeout)
        except TimeoutError:
            self.auth.reject("ws_hello_timeout")
            await self._refuse(Reason.UNAUTHORIZED, f"no hello within {self.auth.hello_timeout:g}s")
            return None
        if msg.type != WSMsgType.TEXT:
            return None
        try:
            first = json.loads(msg.data)
        except ValueError:
            first = None
        if not isinstance(first, dict):
            await self._refuse(Reason.INVALID, "the first message must be a JSON object {token, resourceVersion}")
            return None
        if self.token is not None:
            throttle = self.auth.throttle
            wait = throttle.retry_after(self.auth.peer, "WebSocket") if throttle is not None else 0.0
            if wait:
                self.auth.reject("ws_auth_throttled")
                await self._refuse(Reason.TOO_MANY_REQUESTS, f"too many failed authentications from this address; "
                                   f"retry in {wait:.0f}s")
                return None
            given = first.get("token")
            if not isinstance(given, str) or not hmac.compare_digest(given.encode(), self.token.encode()):
                self.auth.reject("ws_auth_failed")
                if throttle is not None:
                    throttle.failed(self.auth.peer, "WebSocket")
                await self._refuse(Reason.UNAUTHORIZED, "token: missing or wrong")
                return None
        return first

    async def _watch(self, from_rv: int) -> tuple[bool, int]:
        """(resumed, resourceVersion now). A resourceVersion the store no longer
        keeps history for starts over from the current objects (resumed False)."""
        if from_rv > 0:
            try:
                self.watch_id, rv = await self.service.watch_objects(KINDS, from_rv, self.on_event)
                return True, rv
            except ApiError as err:
                if err.reason not in (Reason.EXPIRED, Reason.CONFLICT):
                    raise
                self._drain()
        self._initial = initial = Replay()
        try:
            self.watch_id, rv = await self.service.watch_objects(KINDS, 0, self.on_event)
        finally:
            self._initial = None
        # The store replays the current objects (each at most at rv) before it answers;
        # what it committed after answering and before this resumed comes after rv.
        for event in initial.after(rv):
            self._push(("event", *event))
        self.snapshot = (rv, initial)
        return False, rv

    def _drain(self) -> None:
        self.outbox.clear()

    async def _refuse(self, reason: Reason | str, message: str) -> None:
        reason = reason.value if isinstance(reason, Reason) else reason
        await self.ws.send_json({"type": "error", "reason": reason, "message": message}, dumps=_dumps)
        code = {Reason.UNAUTHORIZED.value: CLOSE_UNAUTHORIZED,
                Reason.TOO_MANY_REQUESTS.value: CLOSE_THROTTLED}.get(reason, WSCloseCode.POLICY_VIOLATION)
        await self.ws.close(code=code, message=message.encode()[:120])

    async def _pump(self) -> None:
        try:
            await self._send_snapshot()
            await self._send_queued()
        except ConnectionResetError:
            pass  # the page went away; the reader sees the close too

    async def _send_snapshot(self) -> None:
        """The current objects, one frame at a time, the loop free between frames
        (another page, a msgpack client, the scheduler). Encoded once per
        resourceVersion: the hub keeps the newest snapshot's frames."""
        if self.snapshot is None:
            return
        (rv, replay), self.snapshot = self.snapshot, None
        cache = self.hub.snapshots
        kept = cache.get(rv)
        frames = ((f, False) for f in kept) if kept is not None else snapshot_frames(replay.by_kind, rv)
        encoded: list[str] = []
        for frame, last in frames:
            if self.ws.closed:
                return
            if kept is None:
                encoded.append(frame)
                if last:  # kept before it is sent: a page that saw the last frame finds it cached
                    cache.put(rv, encoded)
            await self.ws.send_str(frame)
            await asyncio.sleep(0)

    async def _send_queued(self) -> None:
        """Send what is queued, events batched into one frame per turn."""
        while True:
            item = await self.outbox.get()
            batch: list[dict[str, Any]] = []
            while True:
                if item is _DONE:
                    await self._flush(batch)
                    if not self.ws.closed:
                        await self.ws.close(code=CLOSE_TOO_SLOW, message=b"too far behind; resume")
                    return
                if isinstance(item, tuple):
                    _, event_type, kind, obj, rv = item
                    batch.append({"type": event_type, "kind": kind, "resourceVersion": rv, **page_item(kind, obj)})
                    if len(batch) >= FRAME_ITEMS:
                        await self._flush(batch)
                        batch = []
                elif not self.ws.closed:
                    await self._flush(batch)
                    batch = []
                    await self.ws.send_json(item, dumps=_dumps)
                if self.outbox.empty():
                    break
                item = self.outbox.get_nowait()
            await self._flush(batch)

    async def _flush(self, batch: list[dict[str, Any]]) -> None:
        if batch and not self.ws.closed:
            await self.ws.send_json({"type": "events", "items": batch}, dumps=_dumps)

    async def _read_requests(self, tg: asyncio.TaskGroup) -> None:
        async for msg in self.ws:
            if msg.type != WSMsgType.TEXT:
                continue
            try:
                req = json.loads(msg.data)
            except ValueError:
                req = None
            if isinstance(req, dict) and req.get("op") == "explain":
                tg.create_task(self._explain(req))
            else:
                self._push({"type": "error", "reason": Reason.INVALID.value,
                            "message": "op: expected {\"op\": \"explain\", \"id\", \"namespace\", \"name\"}"})

    async def _explain(self, req: dict[str, Any]) -> None:
        rid = req.get("id")
        try:
            result = await explain_stored_pod(self.service, req.get("namespace"), req.get("name"))
            self._push({"type": "explain", "id": rid, "result": result})
        except ApiError as err:
            self._push({"type": "explain", "id": rid, "error": {"reason": err.reason.value, "message": err.message}})
        except Exception as err:  # noqa: BLE001 - one failed explain must not end the page's stream
            log.exception("cluster page: explain failed")
            self._push({"type": "explain", "id": rid, "error": {"reason": Reason.INTERNAL.value, "message": str(err)}})


async def explain_stored_pod(service: Service, namespace: Any, name: Any) -> dict[str, Any]:
    """`explain` of a pod as stored, through the same service the msgpack server
    uses. A bound pod is asked about as if it were not bound yet (its nodeName
    dropped), so the answer says where it would go now."""
    if not isinstance(name, str) or not name:
        raise ApiError(Reason.INVALID, "name: a pod name is required")
    if namespace is not None and not isinstance(namespace, str):
        raise ApiError(Reason.INVALID, "namespace: must be a string")
    pod = await service.get("Pod", namespace or "default", name)
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
    result = await service.explain({**pod, "spec": spec})
    return {**result, "boundTo": (pod.get("spec") or {}).get("nodeName") or None}
