"""A real msgpack server on a loopback port over a real Store actor (in-memory backend)."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, AsyncIterator

import pytest

from actors.store import Store
from actors.store.memory import InMemoryBackend
from transport.protocol.framing import FrameDecoder, encode_frame
from transport.server.tcp import Server
from transport.server.service import StoreService


@dataclass
class Daemon:
    store: Store
    server: Server
    address: str
    host: str
    port: int


async def start_daemon(token: str | None = None, max_frame: int = 1 << 20, backend: Any = None,
                       port: int = 0) -> tuple[Daemon, asyncio.Task[None]]:
    store = Store(backend if backend is not None else InMemoryBackend())
    await store.load()
    task = asyncio.get_running_loop().create_task(store.run())
    server = Server(StoreService(store), token=token, max_frame=max_frame)
    host, port = await server.start("127.0.0.1", port)
    return Daemon(store, server, f"{host}:{port}", host, port), task


async def stop_daemon(d: Daemon, task: asyncio.Task[None]) -> None:
    await d.server.close()
    d.store.inbox.close()
    await task


@pytest.fixture
async def daemon() -> AsyncIterator[Daemon]:
    d, task = await start_daemon()
    yield d
    await stop_daemon(d, task)


class RawConn:
    """A socket that speaks frames by hand, for sending what a client never would."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.decoder = FrameDecoder(1 << 24)
        self.frames: list[Any] = []

    @classmethod
    async def open(cls, d: Daemon) -> "RawConn":
        return cls(*await asyncio.open_connection(d.host, d.port))

    async def send_bytes(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send(self, msg: dict[str, Any]) -> None:
        await self.send_bytes(encode_frame(msg))

    async def recv(self) -> Any:
        """The next frame, or None at end of stream."""
        while not self.frames:
            try:
                data = await self.reader.read(65536)
            except ConnectionResetError:  # closed with our unread bytes in its buffer: RST
                return None
            if not data:
                return None
            self.frames.extend(self.decoder.feed(data))
        return self.frames.pop(0)

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except OSError:
            pass


def node(name: str, cpu: str = "4", memory: str = "8Gi", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def pod(name: str, cpu: str = "1", namespace: str = "default", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}
