"""The Permit waiting room: pods a Permit plugin answered Wait.

The scheduling cycle adds the WaitingPod to the map plugins see through the
handle (as upstream's RunPermitPlugins does) and sends a Park message; the room
arms one timer per waiting plugin. Every decision reaches the room as a message:
Allow and Reject from plugins through the handle (the WaitingPod records the
first decision, so the plugin's own cycle sees it, and posts Decided), Reject
from the scheduler (pod deleted, preempted), and Expire when a timer fires
(upstream's timeout message). Others learn who waits by asking (ListWaiting:
immutable snapshots), never by reading the map. The first decision wins; the room then
cancels the timers, takes the pod out of the map and resolves the Future the
pod's binding cycle awaits.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Union, assert_never

from actors.base import Actor, ActorRef, MailboxClosed, new_reply, reject, resolve
from actors.clock import Clock, Timer
from framework.api.objects import Pod
from framework.api.timeutil import go_duration
from framework.interface import Code, Status
from framework.waiting import WaitingPod, WaitingPodsMap


@dataclass(frozen=True, slots=True, kw_only=True)
class Park:
    """Time `waiting` (already in the map) and resolve `decision` once it is decided.
    `timeouts`: plugin -> seconds (already capped)."""

    waiting: WaitingPod
    timeouts: dict[str, float]
    decision: asyncio.Future


@dataclass(frozen=True, slots=True, kw_only=True)
class Decided:
    """A waiting pod was allowed or rejected (by a plugin, the scheduler or a timer)."""

    uid: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Reject:
    uid: str
    plugin: str
    message: str


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


WaitingRoomMsg = Union[Park, Decided, Reject, Expire, ListWaiting, RejectAll]


def timeout_message(plugin: str, timeout: float) -> str:
    return f"rejected due to timeout after waiting {go_duration(timeout)} at plugin {plugin}"


@dataclass(slots=True)
class _Parked:
    waiting: WaitingPod
    decision: asyncio.Future
    timers: list[Timer] = field(default_factory=list)


class WaitingRoom(Actor[WaitingRoomMsg]):
    name = "waiting-room"

    def __init__(self, waiting_pods: WaitingPodsMap, clock: Clock) -> None:
        super().__init__()
        self.waiting_pods = waiting_pods  # the map plugins read through the handle
        self.clock = clock
        self._parked: dict[str, _Parked] = {}

    def __len__(self) -> int:
        return len(self.waiting_pods)

    async def handle(self, msg: WaitingRoomMsg) -> None:
        match msg:
            case Park(waiting=wp, timeouts=timeouts, decision=decision):
                self._park(wp, timeouts, decision)
            case Decided(uid=uid):
                self._settle(uid)
            case Reject(uid=uid, plugin=plugin, message=message):
                wp = self.waiting_pods.get(uid)
                if wp is not None:
                    wp.reject(plugin, message)
            case Expire(uid=uid, plugin=plugin, timeout=timeout):
                wp = self.waiting_pods.get(uid)
                if wp is not None:
                    wp.reject(plugin, timeout_message(plugin, timeout))
            case ListWaiting(reply=reply):
                resolve(reply, self.snapshot())
            case RejectAll(message=message):
                self.reject_all(message)
            case _:
                assert_never(msg)

    def snapshot(self) -> tuple[WaitingSnapshot, ...]:
        """The undecided waiters with their earliest deadline."""
        return tuple(WaitingSnapshot(p.waiting.pod, p.waiting.node_name, min(p.waiting.deadlines.values()))
                     for p in self._parked.values() if p.waiting.deadlines and p.waiting.decided is None)

    def _park(self, wp: WaitingPod, timeouts: dict[str, float], decision: asyncio.Future) -> None:
        uid = wp.pod.uid
        parked = _Parked(wp, decision)
        self._parked[uid] = parked
        now = self.clock.now()
        for plugin, timeout in timeouts.items():
            wp.deadlines[plugin] = now + timeout
            parked.timers.append(self.clock.call_at(now + timeout, self._expire_cb(uid, plugin, timeout)))
        wp.set_on_decision(lambda _status: self._decided(uid))  # runs at once if already decided

    def _decided(self, uid: str) -> None:
        if self.inbox.closed:
            self._settle(uid)  # stopping: nothing reads the inbox any more
        else:
            self.tell(Decided(uid=uid))

    def _settle(self, uid: str) -> None:
        parked = self._parked.pop(uid, None)
        if parked is None:
            return
        for t in parked.timers:
            t.cancel()
        if self.waiting_pods.get(uid) is parked.waiting:
            self.waiting_pods.remove(uid)
        status = parked.waiting.decided or Status(Code.Unschedulable, "scheduler is shutting down")
        if not parked.decision.done():
            parked.decision.set_result(status)

    def _expire_cb(self, uid: str, plugin: str, timeout: float):  # noqa: ANN202
        def fire() -> None:
            if not self.inbox.closed:
                self.tell(Expire(uid=uid, plugin=plugin, timeout=timeout))
        return fire

    def reject_all(self, message: str) -> None:
        for wp in self.waiting_pods:
            pending = wp.pending_plugins()
            wp.reject(pending[0] if pending else "", message)

    def stop(self) -> None:
        """Reject every waiter and resolve its binding cycle now; Parks still
        queued are answered the same way."""
        queued = self.inbox.get_nowait_all()
        self.inbox.close(drain=False)
        for msg in queued:
            if isinstance(msg, Park):
                self._park(msg.waiting, {}, msg.decision)
            else:  # an ask taken out of the inbox is answered, never left waiting
                reject(getattr(msg, "reply", None), MailboxClosed(f"{self.name} is stopped"))
        self.reject_all("scheduler is shutting down")
        for uid in list(self._parked):
            self._settle(uid)


async def list_waiting(room: ActorRef[WaitingRoomMsg]) -> tuple[WaitingSnapshot, ...]:
    """Ask the room who waits; nobody once it has stopped."""
    try:
        return await room.ask(ListWaiting(reply=new_reply()))
    except MailboxClosed:
        return ()
