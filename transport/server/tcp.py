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
- strangers (connections before a hello with the token; without a token, before
  their first valid request) have `max_unauthenticated` places of their own and
  `handshake_timeout` seconds: a new one above the cap closes the oldest, so
  sockets that never speak cannot keep a client out; clients have
  `max_connections` places: above it, the request that would make a stranger a
  client is answered TooManyRequests and the connection closes;
- a client connection with nothing in flight and no watch is closed after
  `idle_timeout` seconds of silence (0: never);
- requests in flight per connection: at the limit the connection is not read from
  until one finishes (backpressure, as HTTP/2's concurrent streams);
- watches per connection: one more is answered TooManyRequests;
- frame size after hello: TooLarge, and the connection closes.
Requests on one connection run concurrently (replies carry the request id); one
writer task sends frames in order. A connection with `max_queued_frames` frames its
client has not read is not read from until that clears. Watch events go through
the same writer, encoded as they are queued; a watch whose client falls more than
`max_queued_frames` frames or `max_watch_backlog_bytes` bytes of its events behind
is ended with Unavailable (its queued events are dropped), and resumes from the
last resourceVersion it saw (or lists again, if that has been compacted).
A big frame (PACED_BYTES) is decoded and checked, its objects stored and a long
reply encoded, in slices between which the event loop serves everyone else.
List pages end before the frame limit whatever the objects' sizes.

An apply's reply never contradicts its commit: when the whole reply (every stored
object) would be above the frame limit, it is compact: actions, names and counts.
"""
from __future__ import annotations

import asyncio
import dataclasses
import hmac
import logging
import ssl
from typing import Any, Awaitable, Callable

from actors.pacing import Pacer
from transport.protocol import wire
from transport.protocol.framing import (
    BadFrame, FrameDecoder, FrameTooLarge, decode_body, decode_body_steps, encode_frame,
)
from transport.server.auth_throttle import AuthThrottle
from transport.protocol.wire import ApiError, Reason
from transport.server.limits import AuthLog, ServerLimits
from transport.server.ops import NO_REPLY, Ops
from transport.server.outbox import CLOSE, Outbox
from transport.server.service import Service

log = logging.getLogger("ksched.server")

READ_CHUNK = 256 * 1024
STREAM_LIMIT = 64 * 1024  # bytes the socket's reader buffers before it stops reading
PACED_BYTES = 64 * 1024  # a frame body this big is decoded and checked in slices




class Connection(Ops):
    def __init__(self, server: "Server", reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.service = server.service
        self.reader = reader
        self.writer = writer
        self.peer = writer.get_extra_info("peername")
        self.limits = server.limits
        # A stranger until a hello with the token (without a token: its first valid request)
        self.authenticated = False
        self._refused: wire.Hello | None = None  # a hello with a wrong token, answered late
        self.out = Outbox()
        self.watches: dict[int, int] = {}  # watch request id -> store watch id
        self._tasks: set[asyncio.Task[None]] = set()
        self._progress = asyncio.Event()  # a request finished or a frame went out
        self._quiet_since = asyncio.get_running_loop().time()  # the last frame read or request answered
        self._stopping = False  # the daemon is stopping: read what is buffered, then end
        self._read_timeout: asyncio.Timeout | None = None  # the current read's deadline
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
                    self.out.put(CLOSE)
                    await writer_task
                    for t in list(self._tasks):
                        t.cancel()
        finally:
            self.server.forget(self)
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
        decoder = FrameDecoder(self._frame_limit())
        loop = asyncio.get_running_loop()
        hello_deadline = loop.time() + limits.handshake_timeout
        while True:
            # Backpressure: a client that sends faster than it reads its replies, or
            # keeps too many requests in flight, is not read from until that clears.
            while len(self._tasks) >= limits.max_in_flight or self.out.qsize() >= limits.max_queued_frames:
                self.server.reject("in_flight" if len(self._tasks) >= limits.max_in_flight else "queued_frames")
                self._progress.clear()
                await self._progress.wait()
            if self._stopping:
                self._pause_reading()  # the reader may have resumed it while draining its buffer
                deadline: float | None = loop.time()  # what is buffered is still read, then the end
            elif not self.authenticated:
                deadline = hello_deadline
            elif limits.idle_timeout:
                # from the last frame or the last reply, whichever came later; a busy
                # connection is looked at again then (its last request may end meanwhile)
                busy = self._tasks or self.watches
                deadline = (loop.time() if busy else self._quiet_since) + limits.idle_timeout
            else:
                deadline = None
            try:
                async with asyncio.timeout_at(deadline) as self._read_timeout:
                    data = await self.reader.read(READ_CHUNK)
            except TimeoutError:
                if self._stopping:
                    return True
                if not self.authenticated:
                    self.server.reject("handshake_timeout")
                    log.info("closing %s: no %s within %gs", self.peer,
                             "hello" if self.server.token is not None else "request", limits.handshake_timeout)
                    return False
                if self._tasks or self.watches or loop.time() < self._quiet_since + limits.idle_timeout:
                    continue  # busy, or a request ended while we waited
                self.server.reject("idle_timeout")
                return False
            except (ConnectionError, OSError):
                return False
            if not data:
                return True
            self._quiet_since = loop.time()
            try:
                decoder.push(data)
                while (body := decoder.next_body()) is not None:
                    frame, checked = await self._decode(body)
                    if not self._accept(frame, tg, checked):
                        if self._refused is not None:
                            await self._refuse(self._refused)
                        return False
                    decoder.limit = self._frame_limit()
            except FrameTooLarge as err:
                stranger = not self.authenticated and self.server.token is not None
                self.server.reject("hello_size" if stranger else "frame_size")
                log.info("closing %s: %s", self.peer, err)
                if not stranger:
                    self.send(wire.error_reply(None, ApiError(Reason.TOO_LARGE, str(err))))
                return False

    async def _decode(self, body: bytes) -> tuple[dict[str, Any] | BadFrame | ApiError, bool]:
        """A frame body decoded: the frame, or why it is not a request; and whether
        its objects' JSON checks are made. After hello a big one is decoded and
        checked in slices between which the event loop runs (the other clients,
        the scheduler): one big request does not stop everyone else."""
        if len(body) < PACED_BYTES or self._frame_limit() < len(body):
            return decode_body(body), False
        pacer = Pacer()
        frame = await pacer.drive(decode_body_steps(body))
        if isinstance(frame, BadFrame):
            return frame, False
        try:
            await pacer.drive(wire.request_steps(frame))
        except ApiError as err:
            return err, False
        return frame, True

    def _accept(self, frame: dict[str, Any] | BadFrame | ApiError, tg: asyncio.TaskGroup, checked: bool = False) -> bool:
        """Start handling one frame; False means close the connection."""
        if not self.authenticated and self.server.token is not None:
            return self._accept_hello(frame, tg)
        if isinstance(frame, BadFrame):
            self.send(wire.error_reply(None, ApiError(Reason.INVALID, frame.message)))
            return True
        try:
            if isinstance(frame, ApiError):
                raise frame
            req = wire.decode_request(frame, checked=checked)
        except ApiError as err:
            self.send(wire.error_reply(err.request_id, err))
            return True
        if not self.authenticated and not self._become_client(req):  # without a token: its first valid request
            return False
        self._start(req, tg)
        return True

    def _frame_limit(self) -> int:
        """Before the token only a small hello is read; otherwise the frame limit."""
        stranger = not self.authenticated and self.server.token is not None
        return self.limits.max_hello_bytes if stranger else self.limits.max_frame_bytes

    def _become_client(self, req: wire.Request) -> bool:
        """A stranger proved itself: it takes one of the clients' places, or, when
        they are all taken, its request is answered TooManyRequests (then it closes)."""
        if not self.server.promote(self):
            self.server.reject("connections")
            self.send(wire.error_reply(req.id, ApiError(
                Reason.TOO_MANY_REQUESTS, f"too many connections (connections: limit {self.limits.max_connections}); "
                                          "try again later")))
            return False
        self.authenticated = True
        return True

    def evict(self) -> None:
        """Close a stranger at once (a newer one needs its place)."""
        self.writer.transport.abort()

    def stop_reading(self) -> None:
        """The daemon is stopping: read nothing more from the socket; the frames
        already read are handled and answered, then the connection closes. Open
        watches end with Unavailable (a client resumes on another daemon, or later)."""
        for watch_req_id in list(self.watches):
            self._end_watch(watch_req_id, ApiError(Reason.UNAVAILABLE, "the daemon is shutting down"))
        self._stopping = True
        self._pause_reading()
        if self._read_timeout is not None:
            try:  # a read waiting ends now; a read loop between reads sees the flag
                self._read_timeout.reschedule(asyncio.get_running_loop().time())
            except RuntimeError:  # that read has ended already (its timeout is exited or expiring)
                pass

    def _pause_reading(self) -> None:
        transport = self.writer.transport
        if not transport.is_closing():
            transport.pause_reading()

    def _accept_hello(self, frame: dict[str, Any] | BadFrame | ApiError, tg: asyncio.TaskGroup) -> bool:
        """Before the token: only a well-formed hello is read; anything else closes
        the connection without an answer (nothing is learnt from a stranger)."""
        try:
            req = wire.decode_request(frame) if isinstance(frame, dict) else None
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
        if not self._become_client(req):
            return False
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
        self._quiet_since = asyncio.get_running_loop().time()
        self._progress.set()

    def _check_token(self, req: wire.Hello) -> bool:
        want = self.server.token
        if want is None:
            return True
        return req.token is not None and hmac.compare_digest(req.token.encode(), want.encode())

    async def _handle(self, req: wire.Request) -> None:
        try:
            result = await self._handlers[type(req)](req)
            if result is NO_REPLY:
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

    def send(self, msg: dict[str, Any] | bytes) -> None:
        """Queue a reply (a map, or a frame encoded already)."""
        self.out.put(msg)

    async def _write_loop(self) -> None:
        while True:
            msg = await self.out.get()
            if msg is CLOSE:
                return
            try:
                data = msg if isinstance(msg, bytes) else encode_frame(msg, self.limits.max_frame_bytes)
            except FrameTooLarge as err:
                data = encode_frame(wire.error_reply(msg.get("id"), ApiError(Reason.TOO_LARGE, f"reply: {err}")))
            try:
                self.writer.write(data)
                await self.writer.drain()  # returns at once below the transport's high-water mark
            except (ConnectionError, OSError):
                return
            self._progress.set()

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
        self._strangers: dict[Connection, None] = {}  # not yet clients, oldest first
        self._clients: set[Connection] = set()
        self.auth_log = AuthLog()
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
        conn = Connection(self, reader, writer)
        if len(self._strangers) >= self.limits.max_unauthenticated:
            # Strangers have their own few places; the oldest has had longest to speak and
            # leaves, so that sockets that never speak cannot keep a client from connecting.
            oldest = next(iter(self._strangers))
            del self._strangers[oldest]
            self.reject("unauthenticated_evicted")
            oldest.evict()
        self._strangers[conn] = None
        self.connections.add(conn)  # counted now: a burst of accepts cannot pass the limit
        task = self._group.create_task(self._serve(conn))
        self._conn_tasks.add(task)
        task.add_done_callback(self._conn_tasks.discard)

    @property
    def unauthenticated(self) -> int:
        return len(self._strangers)

    def promote(self, conn: Connection) -> bool:
        """Make a stranger a client, if a client's place is free."""
        if len(self._clients) >= self.limits.max_connections:
            return False
        self._strangers.pop(conn, None)
        self._clients.add(conn)
        return True

    def forget(self, conn: Connection) -> None:
        self._strangers.pop(conn, None)
        self._clients.discard(conn)

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

    async def drain(self, grace: float) -> None:
        """Stop reading from every connection and wait, at most `grace` seconds, for
        each to answer the requests it has read and close (SIGTERM: nothing read is
        left without a reply)."""
        for conn in list(self.connections):
            conn.stop_reading()
        tasks = set(self._conn_tasks)
        if tasks:
            await asyncio.wait(tasks, timeout=grace)

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
