"""The actor shape every part of the running system shares.

One actor = one class, one inbox (a closeable Mailbox), one `run()` loop that
handles messages in order; it is the only owner of its state. `tell` posts a
message; `ask` posts a message that carries a reply Future and awaits it.
Messages are frozen dataclasses, one union per actor, dispatched with `match`.
Other actors hold an `ActorRef` (tell, ask, stop), never the actor itself.

Failure (Pykka's shape): an exception while handling one message fails that
message's reply Future, is logged with the actor and the message type, and the
actor takes the next message. An `InvariantBreach` (the actor's own state can no
longer be trusted) instead stops the actor and is reported to its supervisor
(`on_breach`), which stops the whole system cleanly.
"""
from __future__ import annotations

import asyncio
import collections
import itertools
import logging
from typing import Any, Callable, Generic, TypeVar

log = logging.getLogger("ksched.actors")

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
        self.puts = 0  # messages accepted so far (per-pod message counts: bench/profile.py)

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._items)

    def put(self, msg: M) -> None:
        if self._closed:
            err = MailboxClosed(f"{self.name or 'actor'} is stopped")
            reply = _fail_reply(msg, err)
            if reply is not None:
                reply.exception()  # the sender hears it from the raise below; no "never retrieved" warning
            raise err
        self.puts += 1
        self._items.append(msg)
        waiter = self._waiter  # _wake's, written out: every message of every actor comes here
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

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

    async def next_put(self, timeout: float) -> None:
        """Until the next message is put (or the inbox closes), at most `timeout`
        seconds; for an owner that is not in `get()` (the store overlapping a commit)."""
        if self._closed or self._waiter is not None:
            await asyncio.sleep(timeout)
            return
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        timer = loop.call_later(timeout, _end_wait, waiter)  # one timer, not wait_for's task and shield
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def nudge(self) -> None:
        """End a `next_put` wait without a message (its owner has something else to
        look at: the store's commit has landed)."""
        self._wake()

    def holds(self, kinds: tuple[type, ...], start: int = 0) -> bool:
        """Whether a queued message from position `start` on is one of `kinds`."""
        return any(isinstance(m, kinds) for m in itertools.islice(self._items, start, None))

    def tail(self) -> M | None:
        """The last message queued and not taken yet (None when empty): its sender may
        still add to it (the Scheduler's BindingDone, actors/scheduler_outcomes.py)."""
        return self._items[-1] if self._items else None

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


def _end_wait(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _fail_reply(msg: Any, err: BaseException) -> asyncio.Future[Any] | None:
    """Fail the message's reply Future, if it has one still open; returns it."""
    reply = getattr(msg, "reply", None)
    if isinstance(reply, asyncio.Future) and not reply.done():
        reply.set_exception(err)
        return reply
    return None


def new_reply() -> asyncio.Future[Any]:
    return asyncio.get_running_loop().create_future()


def resolve(reply: asyncio.Future[Any] | None, value: Any = None) -> None:
    if reply is not None and not reply.done():
        reply.set_result(value)


def reject(reply: asyncio.Future[Any] | None, err: BaseException) -> None:
    if reply is not None and not reply.done():
        reply.set_exception(err)


class InvariantBreach(Exception):
    """The actor's own state broke a rule it keeps (e.g. a data structure left
    half-updated by an exception): it cannot go on, and neither can the system."""

    def __init__(self, actor: str, msg_type: str, cause: BaseException | str) -> None:
        super().__init__(f"{actor}: invariant breached while handling {msg_type}: {cause}")
        self.actor = actor
        self.msg_type = msg_type


BreachHandler = Callable[[InvariantBreach], None]


class ActorRef(Generic[M]):
    """What other actors hold: post messages, ask and await a reply, stop. The
    actor's state stays out of reach (Pykka's ActorRef)."""

    __slots__ = ("name", "_inbox")

    def __init__(self, name: str, inbox: "Mailbox[M]") -> None:
        self.name = name
        self._inbox = inbox

    @property
    def stopped(self) -> bool:
        return self._inbox.closed

    def tell(self, msg: M) -> None:
        """Post `msg`; raises MailboxClosed when the actor has stopped."""
        self._inbox.put(msg)

    def try_tell(self, msg: M) -> bool:
        """Post `msg` unless the actor has stopped; False when it has."""
        try:
            self._inbox.put(msg)
        except MailboxClosed:
            return False
        return True

    def ask(self, msg: M) -> Any:
        """Post `msg` (which carries a `reply` Future); its reply Future, to await. Not a
        coroutine: the caller awaits the Future itself (a frame fewer to make and to
        resume when the reply comes); posting happens at the call, which every caller
        awaits at once, so at the instant the coroutine's first step posted."""
        self._inbox.put(msg)
        return msg.reply  # type: ignore[attr-defined]


class Actor(Generic[M]):
    """Base: subclasses implement `handle(msg)`; `run()` is the loop.

    `busy` is True while a message is being handled; with an empty inbox it lets
    the pipeline tell when the system has nothing left to do. `on_breach` is set
    by the supervisor (the pipeline); `breach` holds the breach that stopped the
    actor, if one did.
    """

    name = "actor"

    def __init__(self) -> None:
        self.inbox: Mailbox[M] = Mailbox(self.name)
        self.busy = False
        self.on_breach: BreachHandler | None = None
        self.breach: InvariantBreach | None = None
        self.failures = 0  # messages whose handling raised (and were answered with the error)

    def ref(self) -> ActorRef[M]:
        return ActorRef(self.name, self.inbox)

    def tell(self, msg: M) -> None:
        self.inbox.put(msg)

    def ask(self, msg: M) -> Any:
        """Post `msg` (which carries a `reply` Future); its reply Future, to await (ActorRef.ask)."""
        self.inbox.put(msg)
        return msg.reply  # type: ignore[attr-defined]

    def idle(self) -> bool:
        return not self.busy and not len(self.inbox)

    # Take every queued message per turn (the store's group commit) instead of one.
    batched = False

    async def run(self) -> None:
        # Mailbox.get's and get_nowait_all's work on the inbox's deque, written out: a
        # message already queued is taken without get()'s coroutine (get() hands out
        # what is queued whether or not the inbox is closed, and so does this).
        inbox = self.inbox
        items = inbox._items
        while True:
            if items:
                first = items.popleft()
            else:
                try:
                    first = await inbox.get()
                except MailboxClosed:
                    return
            self.busy = True
            if self.batched:
                batch = [first, *items]
                items.clear()
            else:
                batch = [first]
            try:
                if self.batched:
                    await self.handle_turn(batch)
                else:
                    await self.handle(first)
            except InvariantBreach as breach:
                self._stop_on_breach(breach, batch)
                return
            except Exception as exc:  # noqa: BLE001 - one message's failure is that message's
                for msg in batch:
                    self.on_failure(msg, exc)
            finally:
                self.busy = False

    def on_failure(self, msg: M, exc: BaseException) -> None:
        """One message failed: its asker gets the exception; the actor goes on."""
        self.failures += 1
        log.error("actor %s failed handling %s: %r", self.name, type(msg).__name__, exc, exc_info=exc)
        _fail_reply(msg, exc)

    def _stop_on_breach(self, breach: InvariantBreach, batch: list[M]) -> None:
        log.critical("actor %s stopped: %s", self.name, breach, exc_info=breach)
        self.breach = breach
        for msg in batch:
            _fail_reply(msg, breach)
        self.inbox.close(drain=False)
        if self.on_breach is not None:
            self.on_breach(breach)

    async def handle(self, msg: M) -> None:
        raise NotImplementedError

    async def handle_turn(self, msgs: list[M]) -> None:
        for msg in msgs:
            await self.handle(msg)
