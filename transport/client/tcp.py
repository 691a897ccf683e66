"""The client library: `Client` (asyncio) and `SyncClient` (a thin blocking wrapper).

    async with await Client.connect("127.0.0.1:7777", token=None) as c:
        await c.apply([node, pod])
        pods, rv = await c.list("Pod", field_selector="spec.nodeName=node-1")
        async for ev in c.watch(["Pod"], resource_version=rv):
            print(ev.type, ev.object["metadata"]["name"])

    with SyncClient("127.0.0.1:7777") as c:
        print(c.get("Node", "node-1"))

Every call raises wire.ApiError on an error reply (reason + message), and
ApiError(Unavailable) when the daemon cannot be reached or does not answer in
time. Requests on one connection may run concurrently (replies carry ids). A
watch survives a lost connection: it reconnects and resumes after the last
resourceVersion it delivered; if the daemon no longer has that history
(Expired), it lists again: it starts over from the current state (every object
ADDED again). `list` pages transparently (`limit` objects a request, following
`continue` tokens; every page is read at the first page's resourceVersion, and a
list whose token expired starts over). `apply` never reports an error for a write
that committed: when the daemon's reply would be too large it answers compactly
(actions and names), and apply returns each object as kind, name and namespace.
"""
from __future__ import annotations

import asyncio
import itertools
import ssl
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator, Sequence, TypeVar

from transport.protocol.framing import DEFAULT_MAX_FRAME, BadFrame, FrameDecoder, FrameTooLarge, encode_frame
from transport.protocol.wire import ApiError, Reason, encode_request

DEFAULT_SERVER = "127.0.0.1:7777"
T = TypeVar("T")
RECONNECT_ATTEMPTS = 10
RECONNECT_DELAY = 0.2  # seconds, doubling, capped at 2 s
LIST_PAGE = 500  # objects a list request asks for (kubectl's --chunk-size)
LIST_ATTEMPTS = 3  # a paged list whose snapshot expired starts over this many times


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str  # ADDED | MODIFIED | DELETED
    object: dict[str, Any]
    resource_version: int


def split_server(server: str) -> tuple[str, int]:
    host, _, port = server.rpartition(":")
    if not host or not port.isdigit():
        raise ApiError(Reason.INVALID, f"server: must be HOST:PORT, got {server!r}")
    return host.strip("[]"), int(port)


def client_tls_context(ca_file: str) -> ssl.SSLContext:
    """TLS that verifies the daemon's certificate against `ca_file` (its own
    certificate, when self-signed)."""
    try:
        return ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise ApiError(Reason.INVALID, f"tls-ca: cannot load {ca_file}: {exc}") from None


class ConnectError(ApiError):
    """The daemon could not be reached, is not the msgpack port, or refused the
    token: no request was answered. The message says what to do."""


def refused_message(server: str) -> str:
    return (f"The connection to the server {server} was refused - did you specify the right host or port? "
            f"Is `ksched serve` running (its msgpack address is --listen, default {DEFAULT_SERVER})?")


def http_port_message(server: str) -> str:
    return (f"{server} answered in HTTP: it is the daemon's HTTP port (serve --http: the page, the Kubernetes "
            f"API, health and metrics), not its msgpack port (serve --listen, default {DEFAULT_SERVER}); give "
            "that one with --server or KSCHED_SERVER")


def closed_message(server: str) -> str:
    return (f"{server} closed the connection without answering hello: if it serves TLS, give --tls-ca (or "
            "KSCHED_TLS_CA); if it is the daemon's HTTP port (serve --http, HTTPS when the daemon has a token), "
            f"give its msgpack port instead (serve --listen, default {DEFAULT_SERVER})")


def token_message(sent: bool) -> str:
    if not sent:
        return ("this daemon requires a token (it was started with --token-file): give it with --token TOKEN "
                "or the KSCHED_TOKEN environment variable")
    return ("the daemon refused the token given (--token or KSCHED_TOKEN): it is not the one in the daemon's "
            "--token-file")


class _Closed:
    """Put in a watch's queue when the connection is gone."""


class Client:
    def __init__(self, server: str, token: str | None, timeout: float, ssl_context: ssl.SSLContext | None) -> None:
        self.server = server
        self.token = token
        self.timeout = timeout
        self.ssl_context = ssl_context
        self.hello: dict[str, Any] = {}
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._watches: dict[int, asyncio.Queue[Any]] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._reconnect_lock = asyncio.Lock()
        self._closed = False

    @classmethod
    async def connect(cls, server: str = DEFAULT_SERVER, token: str | None = None, *, timeout: float = 30.0,
                      ssl_context: ssl.SSLContext | None = None) -> "Client":
        c = cls(server, token, timeout, ssl_context)
        await c._open()
        return c

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _open(self) -> None:
        host, port = split_server(self.server)
        try:
            async with asyncio.timeout(self.timeout):
                reader, writer = await asyncio.open_connection(host, port, ssl=self.ssl_context)
        except ConnectionRefusedError:
            raise ConnectError(Reason.UNAVAILABLE, refused_message(self.server)) from None
        except (OSError, TimeoutError) as exc:
            raise ConnectError(Reason.UNAVAILABLE, f"cannot connect to the server {self.server}: {exc}") from None
        self._writer = writer
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop(reader))
        try:
            self.hello = await self.request("hello", token=self.token)
        except ApiError as err:
            if err.reason == Reason.UNAUTHORIZED:
                raise ConnectError(Reason.UNAUTHORIZED, token_message(self.token is not None)) from None
            if err.reason == Reason.UNAVAILABLE and not isinstance(err, ConnectError) and self.ssl_context is None:
                raise ConnectError(Reason.UNAVAILABLE, closed_message(self.server)) from None
            raise

    async def close(self) -> None:
        self._closed = True
        if self._writer is not None:
            self._writer.close()
        if self._reader_task is not None:
            self._reader_task.cancel()
            try:
                await self._reader_task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - closing: nothing to report
                pass
        self._fail_all(ApiError(Reason.UNAVAILABLE, "client closed"))

    async def _read_loop(self, reader: asyncio.StreamReader) -> None:
        decoder = FrameDecoder(DEFAULT_MAX_FRAME)
        err = ApiError(Reason.UNAVAILABLE, f"connection to {self.server} closed")
        first = True
        try:
            while True:
                data = await reader.read(256 * 1024)
                if not data:
                    break
                if first and data[:5] == b"HTTP/":  # an HTTP server's reply to bytes it cannot read
                    err = ConnectError(Reason.UNAVAILABLE, http_port_message(self.server))
                    break
                first = False
                for frame in decoder.feed(data):
                    if not isinstance(frame, BadFrame):
                        self._route(frame)
        except FrameTooLarge as exc:
            err = ApiError(Reason.TOO_LARGE, f"reply: {exc}")
        except (OSError, ConnectionError) as exc:
            err = ApiError(Reason.UNAVAILABLE, f"connection to {self.server} lost: {exc}")
        finally:
            self._fail_all(err)

    def _route(self, frame: dict[str, Any]) -> None:
        rid = frame.get("id")
        if "event" in frame:
            q = self._watches.get(rid)  # type: ignore[arg-type]
            if q is not None:
                ev = frame["event"]
                q.put_nowait(WatchEvent(ev.get("type", ""), ev.get("object") or {}, int(ev.get("resourceVersion", 0))))
            return
        fut = self._pending.pop(rid, None)  # type: ignore[arg-type]
        if fut is not None:
            if not fut.done():
                if frame.get("ok"):
                    fut.set_result(frame.get("result"))
                else:
                    fut.set_exception(ApiError.from_wire(frame.get("error"), rid))
            return
        q = self._watches.get(rid)  # type: ignore[arg-type]
        if q is not None and not frame.get("ok"):  # the daemon ended this watch
            q.put_nowait(ApiError.from_wire(frame.get("error"), rid))
        elif rid is None and not frame.get("ok"):
            # an error about a frame the daemon could not read: fail everything waiting
            self._fail_all(ApiError.from_wire(frame.get("error")))

    def _fail_all(self, err: ApiError) -> None:
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(err)
        for q in self._watches.values():
            q.put_nowait(_Closed())

    def _send(self, op: str, fields: dict[str, Any], *, want_reply: bool = True) -> tuple[int, asyncio.Future[Any]]:
        if self._writer is None or self._writer.is_closing() or not self._connected():
            raise ApiError(Reason.UNAVAILABLE, f"not connected to {self.server}")
        rid = next(self._ids)
        try:
            data = encode_frame(encode_request(rid, op, fields))
        except FrameTooLarge as exc:
            raise ApiError(Reason.TOO_LARGE, f"request: {exc}") from None
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if want_reply:
            self._pending[rid] = fut
        self._writer.write(data)
        return rid, fut

    async def request(self, op: str, **fields: Any) -> Any:
        """Send one request and await its result (raises ApiError on an error reply)."""
        rid, fut = self._send(op, fields)
        try:
            async with asyncio.timeout(self.timeout):
                await self._writer.drain()  # type: ignore[union-attr]
                return await fut
        except TimeoutError:
            raise ApiError(Reason.UNAVAILABLE, f"{op}: no reply from {self.server} within {self.timeout:g}s") from None
        except (OSError, ConnectionError) as exc:
            raise ApiError(Reason.UNAVAILABLE, f"{op}: {exc}") from None
        finally:
            self._pending.pop(rid, None)

    # --- ops ------------------------------------------------------------------------------

    async def apply(self, objects: Sequence[dict[str, Any]], *, field_validation: str | None = None
                    ) -> list[dict[str, Any]]:
        """field_validation (Strict, Warn, Ignore): see transport.protocol.wire; the
        reply's warnings are in `request("apply", ...)`'s result."""
        return applied_items(await self.request("apply", objects=list(objects), fieldValidation=field_validation),
                             objects)

    async def create(self, obj: dict[str, Any], *, field_validation: str | None = None) -> dict[str, Any]:
        return (await self.request("create", object=obj, fieldValidation=field_validation))["object"]

    async def delete(self, kind: str, name: str, namespace: str = "") -> dict[str, Any]:
        return (await self.request("delete", kind=kind, name=name, namespace=namespace))["object"]

    async def get(self, kind: str, name: str, namespace: str = "") -> dict[str, Any]:
        return (await self.request("get", kind=kind, name=name, namespace=namespace))["object"]

    async def events(self, kind: str, name: str, namespace: str = "") -> list[dict[str, Any]]:
        return (await self.request("events", kind=kind, name=name, namespace=namespace))["items"]

    async def list(self, kind: str, namespace: str = "", label_selector: str = "", field_selector: str = "",
                   *, page_size: int = LIST_PAGE) -> tuple[list[dict[str, Any]], int]:
        """Every matching object, read page by page at one resourceVersion."""
        for attempt in range(LIST_ATTEMPTS):
            items: list[dict[str, Any]] = []
            try:
                async for page, rv in self.list_pages(kind, namespace, label_selector, field_selector,
                                                      page_size=page_size):
                    items += page
                return items, rv
            except ApiError as err:
                if err.reason != Reason.EXPIRED or attempt == LIST_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    async def list_pages(self, kind: str, namespace: str = "", label_selector: str = "", field_selector: str = "",
                         *, page_size: int = LIST_PAGE) -> AsyncIterator[tuple[list[dict[str, Any]], int]]:
        """(items, resourceVersion) per page; raises ApiError(Expired) when the
        daemon no longer has the snapshot the pages are read at."""
        token = ""
        while True:
            r = await self.request("list", kind=kind, namespace=namespace, labelSelector=label_selector,
                                   fieldSelector=field_selector, limit=page_size, **({"continue": token} if token else {}))
            yield r["items"], r["resourceVersion"]
            token = r.get("continue") or ""
            if not token:
                return

    async def explain(self, pod: dict[str, Any]) -> dict[str, Any]:
        return await self.request("explain", pod=pod)

    async def stats(self) -> dict[str, Any]:
        return await self.request("stats")

    async def complete(self, name: str, namespace: str = "", *, failed: bool = False, attempts: int = 5) -> dict[str, Any]:
        """Finish a pod: status.phase Succeeded (or Failed), which frees its resources.
        Read-modify-write with the resourceVersion, retried on Conflict."""
        for attempt in range(attempts):
            pod = await self.get("Pod", name, namespace)
            pod.setdefault("status", {})["phase"] = "Failed" if failed else "Succeeded"
            try:
                return (await self.apply([pod]))[0]
            except ApiError as err:
                if err.reason != Reason.CONFLICT or attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")

    def watch(self, kinds: Sequence[str] = (), namespace: str = "", resource_version: int = 0
              ) -> AsyncIterator[WatchEvent]:
        """Events after resource_version (0: every current object as ADDED first)."""
        return self._watch(tuple(kinds), namespace, resource_version)

    async def _watch(self, kinds: tuple[str, ...], namespace: str, rv: int) -> AsyncIterator[WatchEvent]:
        failures = 0
        while True:
            q: asyncio.Queue[Any] = asyncio.Queue()
            rid, fut = self._send("watch", {"kinds": list(kinds), "namespace": namespace, "resourceVersion": rv})
            self._watches[rid] = q
            try:
                try:
                    await fut
                except ApiError as err:
                    if err.reason in (Reason.EXPIRED, Reason.CONFLICT) and rv:
                        rv = 0  # history compacted: list again (every object ADDED), then watch on
                        continue
                    if err.reason != Reason.UNAVAILABLE:
                        raise
                else:
                    failures = 0
                    while True:
                        item = await q.get()
                        if isinstance(item, WatchEvent):
                            rv = max(rv, item.resource_version)
                            yield item
                        else:
                            break  # _Closed, or the daemon ended the watch: resume
            finally:
                self._watches.pop(rid, None)
                if not self._closed and self._writer is not None and not self._writer.is_closing():
                    try:
                        self._send("cancel", {"watch": rid}, want_reply=False)  # its reply is ignored
                    except ApiError:
                        pass
            failures += 1
            await self._reconnect(failures)

    def _connected(self) -> bool:
        return self._reader_task is not None and not self._reader_task.done()

    async def _reconnect(self, failures: int) -> None:
        """Open a new connection unless one is up (several watches may get here at once)."""
        async with self._reconnect_lock:
            for attempt in range(RECONNECT_ATTEMPTS):
                if self._closed:
                    raise ApiError(Reason.UNAVAILABLE, "client closed")
                if self._connected():
                    return  # still or again connected: just watch again
                await asyncio.sleep(min(RECONNECT_DELAY * 2 ** (attempt + failures - 1), 2.0))
                try:
                    await self._open()
                except ApiError as err:
                    if err.reason != Reason.UNAVAILABLE:
                        raise
        if not self._connected():
            raise ApiError(Reason.UNAVAILABLE, f"lost {self.server} and could not reconnect")


def applied_items(result: dict[str, Any], sent: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stored objects of an apply reply; for a compact reply, each object as
    kind, apiVersion (a kind named by its group needs it), name and namespace (the
    reply's names, in the order sent)."""
    if "items" in result:
        return result["items"]
    names = result.get("names") or []
    out = []
    for i, obj in enumerate(sent):
        ns, _, name = names[i].rpartition("/") if i < len(names) else ("", "", "")
        meta = {"name": name or (obj.get("metadata") or {}).get("name", "")}
        if ns:
            meta["namespace"] = ns
        out.append({"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"), "metadata": meta})
    return out


class SyncClient:
    """Blocking calls for scripts and the CLI: each call runs the async client on a
    private event loop. Not for use inside a running event loop."""

    def __init__(self, server: str = DEFAULT_SERVER, token: str | None = None, *, timeout: float = 30.0,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self._runner = asyncio.Runner()
        self._closed = False
        try:
            self._client = self._runner.run(Client.connect(server, token, timeout=timeout, ssl_context=ssl_context))
        except BaseException:
            self._runner.close()
            raise

    def __enter__(self) -> "SyncClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._runner.run(self._client.close())
        finally:
            self._closed = True
            self._runner.close()

    @property
    def hello(self) -> dict[str, Any]:
        return self._client.hello

    def request(self, op: str, **fields: Any) -> Any:
        return self._runner.run(self._client.request(op, **fields))

    def run(self, fn: Callable[[Client], Awaitable[T]]) -> T:
        """Run `fn(client)` with the async client on this client's loop (e.g. many
        requests in flight at once)."""

        async def call() -> T:
            return await fn(self._client)

        return self._runner.run(call())

    def apply(self, objects: Sequence[dict[str, Any]], *, field_validation: str | None = None
              ) -> list[dict[str, Any]]:
        return self._runner.run(self._client.apply(objects, field_validation=field_validation))

    def create(self, obj: dict[str, Any], *, field_validation: str | None = None) -> dict[str, Any]:
        return self._runner.run(self._client.create(obj, field_validation=field_validation))

    def delete(self, kind: str, name: str, namespace: str = "") -> dict[str, Any]:
        return self._runner.run(self._client.delete(kind, name, namespace))

    def get(self, kind: str, name: str, namespace: str = "") -> dict[str, Any]:
        return self._runner.run(self._client.get(kind, name, namespace))

    def events(self, kind: str, name: str, namespace: str = "") -> list[dict[str, Any]]:
        return self._runner.run(self._client.events(kind, name, namespace))

    def list(self, kind: str, namespace: str = "", label_selector: str = "", field_selector: str = ""
             ) -> tuple[list[dict[str, Any]], int]:
        return self._runner.run(self._client.list(kind, namespace, label_selector, field_selector))

    def explain(self, pod: dict[str, Any]) -> dict[str, Any]:
        return self._runner.run(self._client.explain(pod))

    def stats(self) -> dict[str, Any]:
        return self._runner.run(self._client.stats())

    def complete(self, name: str, namespace: str = "", *, failed: bool = False) -> dict[str, Any]:
        return self._runner.run(self._client.complete(name, namespace, failed=failed))

    def watch(self, kinds: Sequence[str] = (), namespace: str = "", resource_version: int = 0) -> Iterator[WatchEvent]:
        stream = self._client.watch(kinds, namespace, resource_version)
        try:
            while True:
                try:
                    yield self._runner.run(stream.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            if not self._closed:
                self._runner.run(stream.aclose())  # type: ignore[attr-defined]
