"""The actor base: closeable mailbox, ask/tell, and the fake clock."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from actors.base import Actor, InvariantBreach, Mailbox, MailboxClosed, new_reply, resolve
from actors.clock import FakeClock


@dataclass(frozen=True, slots=True, kw_only=True)
class Echo:
    text: str
    reply: asyncio.Future | None = None


class EchoActor(Actor[Echo]):
    name = "echo"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    async def handle(self, msg: Echo) -> None:
        self.seen.append(msg.text)
        resolve(msg.reply, msg.text.upper())


async def test_ask_gets_the_reply_and_tell_is_handled_in_order() -> None:
    a = EchoActor()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(a.run())
        a.tell(Echo(text="one"))
        assert await a.ask(Echo(text="two", reply=new_reply())) == "TWO"
        a.inbox.close()
    assert a.seen == ["one", "two"]


async def test_closing_a_mailbox_without_draining_fails_queued_asks() -> None:
    box: Mailbox[Echo] = Mailbox("box")
    pending = Echo(text="x", reply=new_reply())
    box.put(pending)
    box.close(drain=False)
    with pytest.raises(MailboxClosed):
        await pending.reply
    with pytest.raises(MailboxClosed):
        await box.get()


async def test_a_closed_mailbox_refuses_new_messages_and_fails_their_asks() -> None:
    box: Mailbox[Echo] = Mailbox("box")
    box.close()
    msg = Echo(text="late", reply=new_reply())
    with pytest.raises(MailboxClosed):
        box.put(msg)
    assert isinstance(msg.reply.exception(), MailboxClosed)


async def test_a_draining_close_still_hands_out_what_was_queued() -> None:
    box: Mailbox[str] = Mailbox()
    box.put("a")
    box.put("b")
    box.close(drain=True)
    assert [await box.get(), await box.get()] == ["a", "b"]
    with pytest.raises(MailboxClosed):
        await box.get()


def test_fake_clock_fires_due_timers_in_time_order_at_their_own_time() -> None:
    clock = FakeClock()
    fired: list[tuple[str, float]] = []
    clock.call_at(5.0, lambda: fired.append(("b", clock.now())))
    clock.call_at(2.0, lambda: fired.append(("a", clock.now())))
    late = clock.call_at(3.0, lambda: fired.append(("cancelled", clock.now())))
    late.cancel()
    clock.call_at(9.0, lambda: fired.append(("c", clock.now())))
    assert clock.advance(6.0) == 2
    assert fired == [("a", 2.0), ("b", 5.0)]
    assert clock.now() == 6.0
    assert clock.next_deadline() == 9.0


def test_fake_clock_fires_timers_armed_by_timers_when_they_fall_due() -> None:
    clock = FakeClock()
    fired: list[float] = []
    clock.call_at(1.0, lambda: clock.call_at(1.5, lambda: fired.append(clock.now())))
    clock.advance(2.0)
    assert fired == [1.5]


class Fragile(Actor[Echo]):
    """Raises on "bad" (one message's failure) and on "broken" (its state is gone)."""

    name = "fragile"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    async def handle(self, msg: Echo) -> None:
        if msg.text == "bad":
            raise ValueError("bad input")
        if msg.text == "broken":
            raise InvariantBreach(self.name, type(msg).__name__, "state lost")
        self.seen.append(msg.text)
        resolve(msg.reply, msg.text)


async def test_a_failing_message_fails_its_ask_is_logged_with_actor_and_type_and_the_actor_goes_on(caplog) -> None:
    a = Fragile()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(a.run())
        with pytest.raises(ValueError, match="bad input"):
            await a.ask(Echo(text="bad", reply=new_reply()))
        assert await a.ref().ask(Echo(text="next", reply=new_reply())) == "next"
        a.inbox.close()
    assert a.seen == ["next"] and a.failures == 1
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [
        "actor fragile failed handling Echo: ValueError('bad input')"]


async def test_an_invariant_breach_stops_the_actor_fails_what_is_queued_and_tells_the_supervisor() -> None:
    a = Fragile()
    told: list[InvariantBreach] = []
    a.on_breach = told.append
    queued = Echo(text="later", reply=new_reply())
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(a.run())
        a.tell(Echo(text="broken"))
        a.tell(queued)
    assert task.done() and a.breach is not None and told == [a.breach]
    assert isinstance(queued.reply.exception(), MailboxClosed)
    assert a.ref().stopped and not a.ref().try_tell(Echo(text="x"))


async def test_next_put_returns_when_a_message_arrives_and_holds_finds_it_from_a_position():
    box: Mailbox[object] = Mailbox("store")
    box.put(1)
    waiting = asyncio.get_running_loop().create_task(box.next_put(3600))  # the store's overlap, waking on a put
    await asyncio.sleep(0)
    assert not waiting.done()
    box.put("write")
    await waiting
    assert box.holds((str,)) and box.holds((str,), 1) and not box.holds((str,), 2) and not box.holds((bytes,))
    assert box.get_nowait_all() == [1, "write"]


async def test_ask_posts_at_the_call_and_hands_back_the_reply_future_itself() -> None:
    """ask is no coroutine: the message is in the inbox once ask returns, and what it
    returns is the message's own reply Future (awaited by the caller, no frame between)."""
    a = EchoActor()
    msg = Echo(text="x", reply=new_reply())
    got = a.ask(msg)
    assert got is msg.reply and list(a.inbox._items) == [msg]
    ref_msg = Echo(text="y", reply=new_reply())
    assert a.ref().ask(ref_msg) is ref_msg.reply and list(a.inbox._items) == [msg, ref_msg]
    async with asyncio.TaskGroup() as tg:
        tg.create_task(a.run())
        assert await got == "X" and await ref_msg.reply == "Y"
        a.inbox.close()


async def test_ask_of_a_stopped_actor_raises_at_the_call_and_fails_the_reply() -> None:
    a = EchoActor()
    a.inbox.close()
    msg = Echo(text="late", reply=new_reply())
    with pytest.raises(MailboxClosed):
        a.ref().ask(msg)
    assert isinstance(msg.reply.exception(), MailboxClosed)
