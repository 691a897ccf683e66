"""The msgpack TCP server: one Connection per client, requests dispatched through
a table to the Service.

Connection policy (DESIGN.md, wire protocol):
- a frame whose header announces more than the limit: error TooLarge (id null),
  then the connection closes, before any of the body is read;
- a body that is not a msgpack map: error Invalid (id null), the connection stays;
- a map that is not a valid request (no integer id, unknown op, a field of the
  wrong type): error Invalid naming the field, the connection stays;
- with a token configured, the first frame must be hello with that token, and
  at most `max_hello_bytes` long: its header is checked before any body is read.
  Anything else (a bigger frame, garbage, another op, a wrong token) closes the
  connection; a wrong token is answered Unauthorized after `auth_failure_delay`
  seconds and logged (at most once a second, with a count), so guessing is slow.
  A connection that has not said hello within `handshake_timeout` is closed.
  Wrong tokens also count against the address's budget in the shared AuthThrottle
  (transport.server.auth_throttle): out of budget, hello is answered TooManyRequests unread.
Nothing a client sends can stop the daemon or change state except a valid request.

Limits (ServerLimits; DaemonConfiguration `limits`), each counted by
`on_reject(limit)` (the daemon's /metrics):
- connections in all, and unauthenticated ones: a new connection above either
  is answered TooManyRequests and closed;
- an authenticated connection with nothing in flight and no watch is closed after
  `idle_timeout` seconds of silence (0: never);
- requests in flight per connection: at the limit the connection is not read from
  until one finishes (backpressure, as HTTP/2's concurrent streams);
- watches per connection: one more is answered TooManyRequests;
- frame size after hello: TooLarge, and the connection closes.
Requests on one connection run concurrently (replies carry the request id); one
writer task sends frames in order. A connection with `max_queued_frames` frames its
client has not read is not read from until that clears. Watch events go through
the same writer; a watcher that falls more than `max_queued_frames` behind has its
watch ended with Unavailable, and resumes from the last resourceVersion it saw
(or lists again, if that has been compacted). A write's reply: replies.py.
"""
from __future__ import annotations

import asyncio
import dataclasses
import hmac
import logging
import ssl
import time
from typing import Any, Awaitable, Callable

from transport.protocol import wire
from transport.protocol.framing import DEFAULT_MAX_FRAME, BadFrame, FrameDecoder, FrameTooLarge, encode_frame
from transport.server.auth_throttle import AuthThrottle
from transport.server.replies import apply_result, with_warnings
from transport.server.service import Service
from transport.protocol.wire import ApiError, Reason

log = logging.getLogger("ksched.server")

READ_CHUNK = 256 * 1024
STREAM_LIMIT = 64 * 1024  # bytes the socket's reader buffers before it stops reading
_CLOSE = object()
_PENDING_WATCH = -1  # a watch's store id before the store has registered it


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ServerLimits:
    """What one daemon lets its clients make it hold. Defaults follow kube-apiserver
    where it has one: HTTP/2 allows 1000 streams per connection there, its TLS
    handshake times out after 10 s."""

    max_frame_bytes: int = DEFAULT_MAX_FRAME  # any frame after hello
    max_hello_bytes: int = 4096  # the first frame when a token is configured
    max_connections: int = 1000
    max_unauthenticated: int = 100  # connections that have not yet said hello with the token
    handshake_timeout: float = 10.0  # seconds to connect (TLS included) and say hello
    idle_timeout: float = 3600.0  # seconds an idle authenticated connection stays open (0: forever)
    max_in_flight: int = 1000  # requests of one connection handled at once
    max_watches: int = 100  # open watches on one connection
    max_queued_frames: int = 10_000  # frames waiting for a slow reader
    auth_failure_delay: float = 1.0  # seconds before a wrong token is answered


class _AuthLog:
    """Failed hellos, logged at most once a second with how many there were."""

    def __init__(self) -> None:
        self.failures = 0
        self._unlogged = 0
        self._last = 0.0

    def failed(self, peer: object) -> None:
        self.failures += 1
        self._unlogged += 1
        now = time.monotonic()
        if now - self._last >= 1.0:
            log.warning("authentication failed from %s (%d failed hellos since the last report)", peer, self._unlogged)
            self._last, self._unlogged = now, 0
_NO_REPLY = object()  # a handler that sent its own reply (watch: the reply precedes its events)


class Connection:
    def __init__(self, server: "Server", reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.service = server.service
        self.reader = reader
        self.writer = writer
        self.peer = writer.get_extra_info("peername")
        self.limits = server.limits
        self.authenticated = server.token is None
        self._refused: wire.Hello | None = None  # a hello with a wrong token, answered late
        if not self.authenticated:
            server.unauthenticated += 1
        self.out: asyncio.Queue[Any] = asyncio.Queue()
        self.watches: dict[int, int] = {}  # watch request id -> store watch id
        self._tasks: set[asyncio.Task[None]] = set()
        self._progress = asyncio.Event()  # a request finished or a frame went out
        self._handlers: dict[type, Callable[[Any], Awaitable[Any]]] = {
            wire.Hello: self.on_hello,
            wire.Apply: self.on_apply,
            wire.Create: self.on_create,
            wire.Delete: self.on_delete,
            wire.Get: self.on_get,
            wire.Events: self.on_events,
            wire.List: self.on_list,
            wire.Watch: self.on_watch,
            wire.Cancel: self.on_cancel,
            wire.Explain: self.on_explain,
            wire.Stats: self.on_stats,
        }

    # --- the connection's life ----------------------------------------------------------

    async def serve(self) -> None:
        try:
            async with asyncio.TaskGroup() as tg:
                writer_task = tg.create_task(self._write_loop())
                try:
                    if await self._read_loop(tg) and self._tasks:
                        # the client finished sending: answer what it asked before closing
                        await asyncio.wait(set(self._tasks))
                finally:
                    self.out.put_nowait(_CLOSE)
                    await writer_task
                    for t in list(self._tasks):
                        t.cancel()
        finally:
            if not self.authenticated:
                self.server.unauthenticated -= 1
                self.authenticated = True  # counted once
            self._drop_watches()
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except (ConnectionError, OSError):
                pass

    async def _read_loop(self, tg: asyncio.TaskGroup) -> bool:
        """Read and dispatch frames; True at the client's end of stream, False when
        the connection must close now (TooLarge, Unauthorized, a timeout, a broken socket)."""
        limits = self.limits
        decoder = FrameDecoder(limits.max_frame_bytes if self.authenticated else limits.max_hello_bytes)
        loop = asyncio.get_running_loop()
        hello_deadline = loop.time() + limits.handshake_timeout
        while True:
            # Backpressure: a client that sends faster than it reads its replies, or
            # keeps too many requests in flight, is not read from until that clears.
            while len(self._tasks) >= limits.max_in_flight or self.out.qsize() >= limits.max_queued_frames:
                self.server.reject("in_flight" if len(self._tasks) >= limits.max_in_flight else "queued_frames")
                self._progress.clear()
                await self._progress.wait()
            if not self.authenticated:
                deadline: float | None = hello_deadline
            elif limits.idle_timeout and not self._tasks and not self.watches:
                deadline = loop.time() + limits.idle_timeout
            else:
                deadline = None
            try:
                async with asyncio.timeout_at(deadline):
                    data = await self.reader.read(READ_CHUNK)
            except TimeoutError:
                if not self.authenticated:
                    self.server.reject("handshake_timeout")
                    log.info("closing %s: no hello within %gs", self.peer, limits.handshake_timeout)
                    return False
                if self._tasks or self.watches:
                    continue  # became busy while we waited
                self.server.reject("idle_timeout")
                return False
            except (ConnectionError, OSError):
                return False
            if not data:
                return True
            try:
                decoder.push(data)
                while (frame := decoder.next_frame()) is not None:
                    if not self._accept(frame, tg):
                        if self._refused is not None:
                            await self._refuse(self._refused)
                        return False
                    decoder.limit = limits.max_frame_bytes if self.authenticated else limits.max_hello_bytes
            except FrameTooLarge as err:
                self.server.reject("frame_size" if self.authenticated else "hello_size")
                log.info("closing %s: %s", self.peer, err)
                if self.authenticated:
                    self.send(wire.error_reply(None, ApiError(Reason.TOO_LARGE, str(err))))
                return False

    def _accept(self, frame: dict[str, Any] | BadFrame, tg: asyncio.TaskGroup) -> bool:
        """Start handling one frame; False means close the connection."""
        if not self.authenticated:
            return self._accept_hello(frame, tg)
        if isinstance(frame, BadFrame):
            self.send(wire.error_reply(None, ApiError(Reason.INVALID, frame.message)))
            return True
        try:
            req = wire.decode_request(frame)
        except ApiError as err:
            self.send(wire.error_reply(err.request_id, err))
            return True
        self._start(req, tg)
        return True

    def _accept_hello(self, frame: dict[str, Any] | BadFrame, tg: asyncio.TaskGroup) -> bool:
        """Before the token: only a well-formed hello is read; anything else closes
        the connection without an answer (nothing is learnt from a stranger)."""
        try:
            req = wire.decode_request(frame) if not isinstance(frame, BadFrame) else None
        except ApiError:
            req = None
        if not isinstance(req, wire.Hello):
            self.server.reject("not_hello")
            if req is not None:  # a well-formed request from a client that forgot its hello
                self.send(wire.error_reply(req.id, ApiError(Reason.UNAUTHORIZED, "send hello with a valid token first")))
            return False
        if self.server.token is not None and (why := self.server.auth_throttle.refusal(self.peer, "msgpack")):
            self.server.reject("auth_throttled")
            self.send(wire.error_reply(req.id, ApiError(Reason.TOO_MANY_REQUESTS, why)))
            return False
        # hello runs inline so that requests pipelined behind it see its outcome
        if not self._check_token(req):
            self._refused = req
            return False
        self.server.unauthenticated -= 1
        self._start(req, tg)
        return True

    async def _refuse(self, req: wire.Hello) -> None:
        """A wrong token: answered late, so that guessing is slow."""
        self.server.reject("auth_failed")
        self.server.auth_log.failed(self.peer)
        self.server.auth_throttle.failed(self.peer, "msgpack", logged=False)
        await asyncio.sleep(self.limits.auth_failure_delay)
        self.send(wire.error_reply(req.id, ApiError(Reason.UNAUTHORIZED, "invalid token")))

    def _start(self, req: wire.Request, tg: asyncio.TaskGroup) -> None:
        task = tg.create_task(self._handle(req))
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._progress.set()

    def _check_token(self, req: wire.Hello) -> bool:
        want = self.server.token
        if want is None:
            return True
        if req.token is None or not hmac.compare_digest(req.token.encode(), want.encode()):
            return False
        self.authenticated = True
        return True

    async def _handle(self, req: wire.Request) -> None:
        try:
            result = await self._handlers[type(req)](req)
            if result is _NO_REPLY:
                return
        except ApiError as err:
            self.send(wire.error_reply(req.id, err))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a bug answers Internal; the daemon carries on
            log.exception("internal error handling %s", type(req).__name__)
            self.send(wire.error_reply(req.id, ApiError(Reason.INTERNAL, f"{type(exc).__name__}: {exc}")))
        else:
            self.send(wire.ok_reply(req.id, result))

    def send(self, msg: dict[str, Any]) -> None:
        self.out.put_nowait(msg)

    async def _write_loop(self) -> None:
        while True:
            msg = await self.out.get()
            if msg is _CLOSE:
                return
            try:
                data = encode_frame(msg, self.limits.max_frame_bytes)
            except FrameTooLarge as err:
                data = encode_frame(wire.error_reply(msg.get("id"), ApiError(Reason.TOO_LARGE, f"reply: {err}")))
            try:
                self.writer.write(data)
                await self.writer.drain()  # returns at once below the transport's high-water mark
            except (ConnectionError, OSError):
                return
            self._progress.set()

    # --- handlers (one per op) -------------------------------------------------------------

    async def on_hello(self, req: wire.Hello) -> dict[str, Any]:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("ksched")
        except PackageNotFoundError:
            v = "dev"
        stats = await self.service.stats()
        return {"server": "ksched", "version": v, "resourceVersion": stats.get("resourceVersion", 0)}

    async def on_apply(self, req: wire.Apply) -> dict[str, Any]:
        warnings: list[str] = []
        items, actions = await self.service.apply(list(req.objects), req.field_validation, warnings)
        return with_warnings(apply_result(items, actions, self.limits.max_frame_bytes), warnings)

    async def on_create(self, req: wire.Create) -> dict[str, Any]:
        warnings: list[str] = []
        return with_warnings({"object": await self.service.create(req.object, req.field_validation, warnings)},
                              warnings)

    async def on_delete(self, req: wire.Delete) -> dict[str, Any]:
        return {"object": await self.service.delete(req.kind, req.namespace, req.name)}

    async def on_get(self, req: wire.Get) -> dict[str, Any]:
        return {"object": await self.service.get(req.kind, req.namespace, req.name)}

    async def on_events(self, req: wire.Events) -> dict[str, Any]:
        return {"items": await self.service.events(req.kind, req.namespace, req.name)}

    async def on_list(self, req: wire.List) -> dict[str, Any]:
        items, rv, token = await self.service.list(req.kind, req.namespace, req.label_selector, req.field_selector,
                                                   req.limit, req.continue_token)
        return {"items": items, "resourceVersion": rv, "continue": token}

    async def on_watch(self, req: wire.Watch) -> object:
        if req.id in self.watches:
            raise ApiError(Reason.ALREADY_EXISTS, f"id: watch {req.id} is already open on this connection")
        if len(self.watches) >= self.limits.max_watches:
            self.server.reject("watches")
            raise ApiError(Reason.TOO_MANY_REQUESTS,
                           f"watch: {len(self.watches)} watches are open on this connection (limit {self.limits.max_watches})")
        ns = req.namespace
        # The reply must go out before the first event: hold events until it is queued.
        held: list[dict[str, Any]] | None = []

        def sink(event_type: str, kind: str, obj: dict[str, Any], rv: int) -> None:
            if ns and (obj.get("metadata") or {}).get("namespace", "default") != ns:
                return
            frame = wire.event_frame(req.id, event_type, obj, rv)
            if held is not None:
                held.append(frame)
            elif self.out.qsize() > self.limits.max_queued_frames:
                self._end_watch(req.id, ApiError(Reason.UNAVAILABLE, "watch fell behind; resume from the last resourceVersion"))
            elif req.id in self.watches:
                self.send(frame)

        self.watches[req.id] = _PENDING_WATCH  # holds its slot against the limit while it starts
        try:
            wid, rv = await self.service.watch(req.kinds, req.resource_version, sink)
        except BaseException:
            self.watches.pop(req.id, None)
            raise
        self.watches[req.id] = wid
        self.send(wire.ok_reply(req.id, {"watch": req.id, "resourceVersion": rv}))
        for frame in held:
            self.send(frame)
        held = None
        return _NO_REPLY

    def _end_watch(self, watch_req_id: int, err: ApiError) -> None:
        wid = self.watches.pop(watch_req_id, None)
        if wid is None:
            return
        self.send(wire.error_reply(watch_req_id, err))
        self.service.unwatch(wid)

    async def on_cancel(self, req: wire.Cancel) -> dict[str, Any]:
        wid = self.watches.pop(req.watch, None)
        if wid is None:
            raise ApiError(Reason.NOT_FOUND, f"watch: no open watch {req.watch} on this connection")
        self.service.unwatch(wid)
        return {}

    async def on_explain(self, req: wire.Explain) -> dict[str, Any]:
        return await self.service.explain(req.pod)

    async def on_stats(self, req: wire.Stats) -> dict[str, Any]:
        stats = await self.service.stats()
        return {**stats, "connections": len(self.server.connections)}

    def _drop_watches(self) -> None:
        watches, self.watches = self.watches, {}
        for wid in watches.values():
            self.service.unwatch(wid)


class Server:
    """Listens, and runs one Connection per client until close(). Every connection
    is a task of the server's own TaskGroup; a connection's failure is logged and
    ends only that connection."""

    def __init__(self, service: Service, *, token: str | None = None, max_frame: int | None = None,
                 ssl_context: ssl.SSLContext | None = None, limits: ServerLimits | None = None,
                 on_reject: Callable[[str], None] | None = None, auth_throttle: AuthThrottle | None = None) -> None:
        self.service = service
        self.auth_throttle = auth_throttle if auth_throttle is not None else AuthThrottle()
        self.token = token
        limits = limits if limits is not None else ServerLimits()
        if max_frame is not None:
            limits = dataclasses.replace(limits, max_frame_bytes=max_frame)
        self.limits = limits
        self.ssl_context = ssl_context
        self.connections: set[Connection] = set()
        self.unauthenticated = 0
        self.auth_log = _AuthLog()
        self.rejections: dict[str, int] = {}
        self._on_reject = on_reject
        self._server: asyncio.Server | None = None
        self._group: asyncio.TaskGroup | None = None
        self._conn_tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        group = asyncio.TaskGroup()
        await group.__aenter__()
        try:
            self._server = await asyncio.start_server(
                self._on_client, host, port, ssl=self.ssl_context, limit=STREAM_LIMIT, reuse_address=True,
                ssl_handshake_timeout=self.limits.handshake_timeout if self.ssl_context is not None else None)
        except BaseException:
            await group.__aexit__(None, None, None)
            raise
        self._group = group
        sock = self._server.sockets[0].getsockname()
        return sock[0], sock[1]

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Hand the connection to our TaskGroup; asyncio's own callback task ends here.
        if self._group is None:
            writer.close()
            return
        full = self._full()
        if full:
            self.reject(full)
            writer.write(encode_frame(wire.error_reply(None, ApiError(
                Reason.TOO_MANY_REQUESTS, f"too many connections ({full}); try again later"))))
            writer.close()
            return
        conn = Connection(self, reader, writer)
        self.connections.add(conn)  # counted now: a burst of accepts cannot pass the limit
        task = self._group.create_task(self._serve(conn))
        self._conn_tasks.add(task)
        task.add_done_callback(self._conn_tasks.discard)

    def _full(self) -> str:
        """Which connection limit a new connection would pass, or ""."""
        if len(self.connections) >= self.limits.max_connections:
            return f"connections: limit {self.limits.max_connections}"
        if self.token is not None and self.unauthenticated >= self.limits.max_unauthenticated:
            return f"unauthenticated connections: limit {self.limits.max_unauthenticated}"
        return ""

    def reject(self, limit: str) -> None:
        """Count one refusal by a limit (`limit` is its name, or a message starting with it)."""
        name = limit.split(":", 1)[0].replace(" ", "_")
        self.rejections[name] = self.rejections.get(name, 0) + 1
        if self._on_reject is not None:
            self._on_reject(name)

    async def _serve(self, conn: Connection) -> None:
        self.connections.add(conn)
        try:
            await conn.serve()
        except* (ConnectionError, OSError):
            pass
        except* Exception:  # noqa: BLE001 - a bug ends this connection, never the server
            log.exception("connection %s failed", conn.peer)
        finally:
            self.connections.discard(conn)

    def stop_listening(self) -> None:
        if self._server is not None:
            self._server.close()

    async def close(self) -> None:
        """Stop accepting, then end every connection."""
        self.stop_listening()
        group, self._group = self._group, None
        for task in list(self._conn_tasks):
            task.cancel()
        if group is not None:
            await group.__aexit__(None, None, None)
        if self._server is not None:
            await self._server.wait_closed()
