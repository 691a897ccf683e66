"""The Permit waiting room: the one owner of the pods a Permit plugin answered Wait.

It owns the waits: the deadlines (fixed when the pod is parked, never
rewritten), one timer per waiting plugin, and the Future the pod's binding cycle
awaits. The decisions are taken in one place, the scheduler's view of waiting
pods (framework/waiting.py), in the scheduler's loop, so a timeout or a
preemption is ordered with the Allows of the cycle that completes a gang.
Everything reaches the room as a message: Park from the scheduling cycle;
Decided when the view decided a pod (a plugin's Allow or Reject, or a rejection
the room forwarded); Expire when a timer fires (upstream's timeout message),
Reject from anyone, and RejectIfWaiting, an ask, from the preemption actor (its
answer says whether the victim was held here): each is forwarded to the parker
as PermitRejected. The room then cancels the timers, resolves the binding
cycle's Future and tells the parker (PermitSettled), whose view drops the pod.
At shutdown (RejectAll, stop) the room rejects every waiter itself: no cycle
runs any more. Others learn who waits by asking (ListWaiting: immutable
snapshots).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, Union, assert_never

from actors.base import Actor, ActorRef, MailboxClosed, new_reply, reject, resolve
from actors.clock import Clock, Timer
from framework.api.objects import Pod
from framework.api.timeutil import go_duration
from framework.interface import Code, Status

SHUTTING_DOWN = "scheduler is shutting down"


@dataclass(frozen=True, slots=True, kw_only=True)
class Park:
    """Time `pod` (assumed on `node_name`) and resolve `decision` once it is decided.
    `timeouts`: plugin -> seconds (already capped). `reply_to` hears PermitSettled."""

    pod: Pod
    node_name: str
    timeouts: Mapping[str, float]
    decision: asyncio.Future
    reply_to: ActorRef[Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Decided:
    """A plugin decided a waiting pod through the scheduler's view."""

    uid: str
    status: Status


@dataclass(frozen=True, slots=True, kw_only=True)
class Reject:
    uid: str
    plugin: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectIfWaiting:
    """Reject each of the pods that waits here; the reply is the uids it rejected."""

    uids: tuple[str, ...]
    plugin: str
    message: str
    reply: asyncio.Future


@dataclass(frozen=True, slots=True, kw_only=True)
class Expire:
    uid: str
    plugin: str
    timeout: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ListWaiting:
    """Ask for the pods waiting now (a tuple of WaitingSnapshot)."""

    reply: asyncio.Future


@dataclass(frozen=True, slots=True)
class WaitingSnapshot:
    """One pod waiting at Permit, as others may see it: an immutable copy."""

    pod: Pod
    node_name: str
    deadline: float  # the earliest plugin deadline, on the room's clock


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectAll:
    """Shutdown: reject every waiting pod with `message`."""

    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PermitRejected:
    """To the parker: reject waiting pod `uid` in your view (a timer fired, the
    preemption actor preempted it); the view's decision then comes back as Decided."""

    uid: str
    plugin: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PermitSettled:
    """To the parker: the wait of pod `uid` ended with `status` (the room's word)."""

    uid: str
    status: Status


WaitingRoomMsg = Union[Park, Decided, Reject, RejectIfWaiting, Expire, ListWaiting, RejectAll]


def timeout_message(plugin: str, timeout: float) -> str:
    return f"rejected due to timeout after waiting {go_duration(timeout)} at plugin {plugin}"


@dataclass(frozen=True, slots=True)
class _Parked:
    """One wait, as the room recorded it when the pod was parked."""

    pod: Pod
    node_name: str
    deadlines: Mapping[str, float]  # plugin -> absolute deadline (clock seconds)
    decision: asyncio.Future
    timers: tuple[Timer, ...]
    reply_to: ActorRef[Any] | None


class WaitingRoom(Actor[WaitingRoomMsg]):
    name = "waiting-room"

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock
        self._parked: dict[str, _Parked] = {}

    def __len__(self) -> int:
        return len(self._parked)

    def __contains__(self, uid: object) -> bool:
        return uid in self._parked

    async def handle(self, msg: WaitingRoomMsg) -> None:
        match msg:
            case Park():
                self._park(msg)
            case Decided(uid=uid, status=status):
                self._settle(uid, status)
            case Reject(uid=uid, plugin=plugin, message=message):
                self._reject(uid, plugin, message)
            case RejectIfWaiting(uids=uids, plugin=plugin, message=message, reply=reply):
                resolve(reply, frozenset(uid for uid in uids if self._reject(uid, plugin, message)))
            case Expire(uid=uid, plugin=plugin, timeout=timeout):
                self._reject(uid, plugin, timeout_message(plugin, timeout))
            case ListWaiting(reply=reply):
                resolve(reply, self.snapshot())
            case RejectAll(message=message):
                self.reject_all(message)
            case _:
                assert_never(msg)

    def snapshot(self) -> tuple[WaitingSnapshot, ...]:
        """The waiters with their earliest deadline."""
        return tuple(WaitingSnapshot(p.pod, p.node_name, min(p.deadlines.values()))
                     for p in self._parked.values() if p.deadlines)

    def _park(self, msg: Park) -> None:
        uid = msg.pod.uid
        now = self.clock.now()
        timers = tuple(self.clock.call_at(now + timeout, self._expire_cb(uid, plugin, timeout))
                       for plugin, timeout in msg.timeouts.items())
        deadlines = MappingProxyType({plugin: now + timeout for plugin, timeout in msg.timeouts.items()})
        self._parked[uid] = _Parked(msg.pod, msg.node_name, deadlines, msg.decision, timers, msg.reply_to)

    def _reject(self, uid: str, plugin: str, message: str) -> bool:
        """A rejection from here (timer) or another actor: the parker's view
        decides it, in the parker's loop, so it is ordered with every Allow its
        plugins give (all or nothing for a gang); without a parker it is final
        here. False if `uid` was not waiting."""
        parked = self._parked.get(uid)
        if parked is None:
            return False
        if parked.reply_to is None or not parked.reply_to.try_tell(PermitRejected(uid=uid, plugin=plugin,
                                                                                   message=message)):
            self._settle(uid, Status(Code.Unschedulable, message, plugin=plugin))
        return True

    def _settle(self, uid: str, status: Status) -> bool:
        """The first decision for `uid` ends its wait; False if it was not waiting."""
        parked = self._parked.pop(uid, None)
        if parked is None:
            return False
        for t in parked.timers:
            t.cancel()
        if parked.reply_to is not None:  # before the Future: the view drops the pod before its cycle ends
            parked.reply_to.try_tell(PermitSettled(uid=uid, status=status))
        if not parked.decision.done():
            parked.decision.set_result(status)
        return True

    def _expire_cb(self, uid: str, plugin: str, timeout: float):  # noqa: ANN202
        def fire() -> None:
            if not self.inbox.closed:
                self.tell(Expire(uid=uid, plugin=plugin, timeout=timeout))
        return fire

    def reject_all(self, message: str) -> None:
        for uid, parked in list(self._parked.items()):
            plugins = sorted(parked.deadlines)
            self._settle(uid, Status(Code.Unschedulable, message, plugin=plugins[0] if plugins else ""))

    def stop(self) -> None:
        """Reject every waiter and resolve its binding cycle now. Parks and
        decisions still queued are taken first, in order (a pod a plugin allowed
        keeps that decision); asks still queued are answered."""
        queued = self.inbox.get_nowait_all()
        self.inbox.close(drain=False)
        for msg in queued:
            if isinstance(msg, Park):
                self._park(Park(pod=msg.pod, node_name=msg.node_name, timeouts={}, decision=msg.decision,
                                reply_to=msg.reply_to))
            elif isinstance(msg, Decided):
                self._settle(msg.uid, msg.status)
            elif isinstance(msg, Reject):
                self._settle(msg.uid, Status(Code.Unschedulable, msg.message, plugin=msg.plugin))
            else:  # an ask taken out of the inbox is answered, never left waiting
                reject(getattr(msg, "reply", None), MailboxClosed(f"{self.name} is stopped"))
        self.reject_all(SHUTTING_DOWN)


async def list_waiting(room: ActorRef[WaitingRoomMsg]) -> tuple[WaitingSnapshot, ...]:
    """Ask the room who waits; nobody once it has stopped."""
    try:
        return await room.ask(ListWaiting(reply=new_reply()))
    except MailboxClosed:
        return ()


async def reject_if_waiting(room: ActorRef[WaitingRoomMsg], uid: str, plugin: str, message: str) -> bool:
    """Ask the room to reject `uid` if it waits at Permit; whether it did (a
    stopped room has already rejected everyone: False)."""
    return uid in await reject_those_waiting(room, (uid,), plugin, message)


async def reject_those_waiting(room: ActorRef[WaitingRoomMsg], uids: tuple[str, ...], plugin: str,
                               message: str) -> frozenset[str]:
    """Ask the room, once, to reject each of `uids` that waits at Permit; the uids it
    rejected (none once it has stopped: it rejected everyone then)."""
    try:
        return await room.ask(RejectIfWaiting(uids=uids, plugin=plugin, message=message, reply=new_reply()))
    except MailboxClosed:
        return frozenset()
