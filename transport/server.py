"""The msgpack TCP server: one Connection per client, requests dispatched through
a table to the Service.

Connection policy (DESIGN.md, wire protocol):
- a frame whose header announces more than the limit: error TooLarge (id null),
  then the connection closes, before any of the body is read;
- a body that is not a msgpack map: error Invalid (id null), the connection stays;
- a map that is not a valid request (no integer id, unknown op, a field of the
  wrong type): error Invalid naming the field, the connection stays;
- with a token configured, the first request must be hello with that token;
  anything else gets Unauthorized and the connection closes.
Nothing a client sends can stop the daemon or change state except a valid request.

Requests on one connection run concurrently (replies carry the request id); one
writer task sends frames in order. A connection with MAX_IN_FLIGHT requests in
progress, or MAX_QUEUED_FRAMES frames its client has not read, is not read from
until that clears, so a client cannot make the daemon buffer without bound. Watch events go through the same writer; a
watcher that falls more than MAX_QUEUED_FRAMES behind has its watch ended with
Unavailable, and resumes from the last resourceVersion it saw.
"""
from __future__ import annotations

import asyncio
import hmac
import logging
import ssl
from typing import Any, Awaitable, Callable

from transport import wire
from transport.framing import DEFAULT_MAX_FRAME, BadFrame, FrameDecoder, FrameTooLarge, encode_frame
from transport.service import Service
from transport.wire import ApiError, Reason

log = logging.getLogger("ksched.server")

READ_CHUNK = 256 * 1024
MAX_QUEUED_FRAMES = 50_000  # frames waiting for a slow reader
MAX_IN_FLIGHT = 1_000  # requests of one connection being handled at once
_CLOSE = object()
_NO_REPLY = object()  # a handler that sent its own reply (watch: the reply precedes its events)


class Connection:
    def __init__(self, server: "Server", reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.service = server.service
        self.reader = reader
        self.writer = writer
        self.peer = writer.get_extra_info("peername")
        self.authenticated = server.token is None
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
            self._drop_watches()
            self.writer.close()
            try:
                await self.writer.wait_closed()
            except (ConnectionError, OSError):
                pass

    async def _read_loop(self, tg: asyncio.TaskGroup) -> bool:
        """Read and dispatch frames; True at the client's end of stream, False when
        the connection must close now (TooLarge, Unauthorized, a broken socket)."""
        decoder = FrameDecoder(self.server.max_frame)
        while True:
            # Backpressure: a client that sends faster than it reads its replies, or
            # keeps too many requests in flight, is not read from until that clears.
            while len(self._tasks) >= MAX_IN_FLIGHT or self.out.qsize() >= MAX_QUEUED_FRAMES:
                self._progress.clear()
                await self._progress.wait()
            try:
                data = await self.reader.read(READ_CHUNK)
            except (ConnectionError, OSError):
                return False
            if not data:
                return True
            try:
                frames = decoder.feed(data)
            except FrameTooLarge as err:
                log.info("closing %s: %s", self.peer, err)
                self.send(wire.error_reply(None, ApiError(Reason.TOO_LARGE, str(err))))
                return False
            for frame in frames:
                if not self._accept(frame, tg):
                    return False

    def _accept(self, frame: dict[str, Any] | BadFrame, tg: asyncio.TaskGroup) -> bool:
        """Start handling one frame; False means close the connection."""
        if isinstance(frame, BadFrame):
            self.send(wire.error_reply(None, ApiError(Reason.INVALID, frame.message)))
            return True
        try:
            req = wire.decode_request(frame)
        except ApiError as err:
            self.send(wire.error_reply(err.request_id, err))
            return True
        if not self.authenticated and not isinstance(req, wire.Hello):
            self.send(wire.error_reply(req.id, ApiError(Reason.UNAUTHORIZED, "send hello with a valid token first")))
            return False
        if isinstance(req, wire.Hello):
            # hello runs inline so that requests pipelined behind it see its outcome
            if not self._check_token(req):
                return False
        task = tg.create_task(self._handle(req))
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return True

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._progress.set()

    def _check_token(self, req: wire.Hello) -> bool:
        want = self.server.token
        if want is None:
            return True
        if req.token is None or not hmac.compare_digest(req.token.encode(), want.encode()):
            self.send(wire.error_reply(req.id, ApiError(Reason.UNAUTHORIZED, "invalid token")))
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
                data = encode_frame(msg, self.server.max_frame)
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
        items, actions = await self.service.apply(list(req.objects))
        return {"items": items, "actions": actions}

    async def on_create(self, req: wire.Create) -> dict[str, Any]:
        return {"object": await self.service.create(req.object)}

    async def on_delete(self, req: wire.Delete) -> dict[str, Any]:
        return {"object": await self.service.delete(req.kind, req.namespace, req.name)}

    async def on_get(self, req: wire.Get) -> dict[str, Any]:
        return {"object": await self.service.get(req.kind, req.namespace, req.name)}

    async def on_events(self, req: wire.Events) -> dict[str, Any]:
        return {"items": await self.service.events(req.kind, req.namespace, req.name)}

    async def on_list(self, req: wire.List) -> dict[str, Any]:
        items, rv = await self.service.list(req.kind, req.namespace, req.label_selector, req.field_selector)
        return {"items": items, "resourceVersion": rv}

    async def on_watch(self, req: wire.Watch) -> object:
        if req.id in self.watches:
            raise ApiError(Reason.ALREADY_EXISTS, f"id: watch {req.id} is already open on this connection")
        ns = req.namespace
        # The reply must go out before the first event: hold events until it is queued.
        held: list[dict[str, Any]] | None = []

        def sink(event_type: str, kind: str, obj: dict[str, Any], rv: int) -> None:
            if ns and (obj.get("metadata") or {}).get("namespace", "default") != ns:
                return
            frame = wire.event_frame(req.id, event_type, obj, rv)
            if held is not None:
                held.append(frame)
            elif self.out.qsize() > MAX_QUEUED_FRAMES:
                self._end_watch(req.id, ApiError(Reason.UNAVAILABLE, "watch fell behind; resume from the last resourceVersion"))
            elif req.id in self.watches:
                self.send(frame)

        wid, rv = await self.service.watch(req.kinds, req.resource_version, sink)
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

    def __init__(self, service: Service, *, token: str | None = None, max_frame: int = DEFAULT_MAX_FRAME,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.service = service
        self.token = token
        self.max_frame = max_frame
        self.ssl_context = ssl_context
        self.connections: set[Connection] = set()
        self._server: asyncio.Server | None = None
        self._group: asyncio.TaskGroup | None = None
        self._conn_tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        group = asyncio.TaskGroup()
        await group.__aenter__()
        try:
            self._server = await asyncio.start_server(self._on_client, host, port, ssl=self.ssl_context,
                                                      limit=READ_CHUNK, reuse_address=True)
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
        task = self._group.create_task(self._serve(Connection(self, reader, writer)))
        self._conn_tasks.add(task)
        task.add_done_callback(self._conn_tasks.discard)

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
