"""What one connection has to send, in order: replies and watch events, counted in
frames and, for each watch, in bytes (a watch's events are encoded as they are
queued, so what a client that does not read makes the daemon hold is known
exactly, and bounded: ServerLimits.max_watch_backlog_bytes)."""
from __future__ import annotations

import asyncio
import collections
from typing import Any

CLOSE = object()  # the writer stops here


class Outbox:
    __slots__ = ("_items", "_nonempty", "watch_bytes")

    def __init__(self) -> None:
        # (a reply map, encoded frame bytes or CLOSE; the watch its event is of, or None)
        self._items: collections.deque[tuple[Any, int | None]] = collections.deque()
        self._nonempty = asyncio.Event()
        self.watch_bytes: dict[int, int] = {}  # watch request id -> bytes of its events queued

    def qsize(self) -> int:
        return len(self._items)

    def put(self, item: Any, watch: int | None = None) -> None:
        """Queue a reply map or an encoded frame; `watch`: the watch an encoded event is of."""
        if watch is not None:
            self.watch_bytes[watch] = self.watch_bytes.get(watch, 0) + len(item)
        self._items.append((item, watch))
        self._nonempty.set()

    async def get(self) -> Any:
        while not self._items:
            self._nonempty.clear()
            await self._nonempty.wait()
        item, watch = self._items.popleft()
        if watch is not None:
            left = self.watch_bytes.get(watch, 0) - len(item)
            if left > 0:
                self.watch_bytes[watch] = left
            else:
                self.watch_bytes.pop(watch, None)
        return item

    def drop_watch(self, watch: int) -> int:
        """Forget the queued events of one watch (it is ending); the bytes freed."""
        freed = self.watch_bytes.pop(watch, 0)
        if freed:
            self._items = collections.deque(entry for entry in self._items if entry[1] != watch)
        return freed
