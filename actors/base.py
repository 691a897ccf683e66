"""The actor shape every part of the running system shares.

One actor = one class, one inbox (a closeable Mailbox), one `run()` loop that
handles messages in order; it is the only owner of its state. `tell` posts a
message; `ask` posts a message that carries a reply Future and awaits it.
Messages are frozen dataclasses, one union per actor, dispatched with `match`.
"""
from __future__ import annotations

import asyncio
import collections
from typing import Any, Generic, TypeVar

M = TypeVar("M")


class MailboxClosed(Exception):
    """The actor behind this inbox has stopped (or is stopping)."""


class Mailbox(Generic[M]):
    """A FIFO inbox that can be closed.

    After `close()` nothing more is accepted. With `drain=True` the messages
    already queued are still handed out, then `get()` raises MailboxClosed; with
    `drain=False` they are dropped, and every queued ask (a message with a
    `reply` Future) fails with MailboxClosed so no caller waits forever.
    """

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._items: collections.deque[M] = collections.deque()
        self._closed = False
        self._waiter: asyncio.Future[None] | None = None

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._items)

    def put(self, msg: M) -> None:
        if self._closed:
            _fail_reply(msg, MailboxClosed(f"{self.name or 'actor'} is stopped"))
            raise MailboxClosed(f"{self.name or 'actor'} is stopped")
        self._items.append(msg)
        self._wake()

    async def get(self) -> M:
        while not self._items:
            if self._closed:
                raise MailboxClosed(self.name)
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()

    def get_nowait_all(self) -> list[M]:
        """Everything queued now (for batching), leaving the inbox empty."""
        out = list(self._items)
        self._items.clear()
        return out

    def close(self, *, drain: bool = True) -> None:
        self._closed = True
        if not drain:
            err = MailboxClosed(f"{self.name or 'actor'} stopped")
            while self._items:
                _fail_reply(self._items.popleft(), err)
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


def _fail_reply(msg: Any, err: BaseException) -> None:
    reply = getattr(msg, "reply", None)
    if isinstance(reply, asyncio.Future) and not reply.done():
        reply.set_exception(err)


def new_reply() -> asyncio.Future[Any]:
    return asyncio.get_running_loop().create_future()


def resolve(reply: asyncio.Future[Any] | None, value: Any = None) -> None:
    if reply is not None and not reply.done():
        reply.set_result(value)


def reject(reply: asyncio.Future[Any] | None, err: BaseException) -> None:
    if reply is not None and not reply.done():
        reply.set_exception(err)


class Actor(Generic[M]):
    """Base: subclasses implement `handle(msg)`; `run()` is the loop.

    `busy` is True while a message is being handled; with an empty inbox it lets
    the pipeline tell when the system has nothing left to do.
    """

    name = "actor"

    def __init__(self) -> None:
        self.inbox: Mailbox[M] = Mailbox(self.name)
        self.busy = False

    def tell(self, msg: M) -> None:
        self.inbox.put(msg)

    async def ask(self, msg: M) -> Any:
        """Post `msg` (which carries a `reply` Future) and await the reply."""
        self.inbox.put(msg)
        return await msg.reply  # type: ignore[attr-defined]

    def idle(self) -> bool:
        return not self.busy and not len(self.inbox)

    # Take every queued message per turn (the store's group commit) instead of one.
    batched = False

    async def run(self) -> None:
        while True:
            try:
                first = await self.inbox.get()
            except MailboxClosed:
                return
            self.busy = True
            try:
                if self.batched:
                    await self.handle_batch([first, *self.inbox.get_nowait_all()])
                else:
                    await self.handle(first)
            finally:
                self.busy = False

    async def handle(self, msg: M) -> None:
        raise NotImplementedError

    async def handle_batch(self, msgs: list[M]) -> None:
        for msg in msgs:
            await self.handle(msg)
