"""The Permit waiting room: pods a Permit plugin answered Wait.

`park()` (called by the scheduling cycle, before the next cycle starts) puts the
WaitingPod into the map plugins see through the handle and arms one timer per
waiting plugin. Allow and Reject come from plugins through the handle and decide
the pod at once; a timer firing is an Expire message that rejects it with
upstream's message. The first decision wins; it resolves the Future the pod's
binding cycle awaits, and the pod leaves the map.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Union, assert_never

from actors.base import Actor
from actors.clock import Clock, Timer
from framework.interface import Status
from framework.runtime import go_duration
from framework.waiting import WaitingPod, WaitingPodsMap


@dataclass(frozen=True, slots=True, kw_only=True)
class Expire:
    uid: str
    plugin: str
    timeout: float


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectAll:
    """Shutdown: reject every waiting pod with `message`."""

    message: str


WaitingRoomMsg = Union[Expire, RejectAll]


def timeout_message(plugin: str, timeout: float) -> str:
    return f"rejected due to timeout after waiting {go_duration(timeout)} at plugin {plugin}"


class WaitingRoom(Actor[WaitingRoomMsg]):
    name = "waiting-room"

    def __init__(self, waiting_pods: WaitingPodsMap, clock: Clock) -> None:
        super().__init__()
        self.waiting_pods = waiting_pods
        self.clock = clock
        self._timers: dict[str, list[Timer]] = {}

    def park(self, wp: WaitingPod, timeouts: dict[str, float]) -> asyncio.Future[Status]:
        """Hold `wp` until every waiting plugin allows it, one rejects it, or a
        timeout passes. `timeouts`: plugin -> seconds (already capped)."""
        fut: asyncio.Future[Status] = asyncio.get_running_loop().create_future()
        uid = wp.pod.uid
        self.waiting_pods.add(wp)
        now = self.clock.now()
        timers = []
        for plugin, timeout in timeouts.items():
            wp.deadlines[plugin] = now + timeout
            timers.append(self.clock.call_at(now + timeout, self._expire_cb(uid, plugin, timeout)))
        self._timers[uid] = timers

        def decided(status: Status) -> None:
            for t in self._timers.pop(uid, ()):
                t.cancel()
            if self.waiting_pods.get(uid) is wp:
                self.waiting_pods.remove(uid)
            if not fut.done():
                fut.set_result(status)

        wp.set_on_decision(decided)
        return fut

    def _expire_cb(self, uid: str, plugin: str, timeout: float):  # noqa: ANN202
        def fire() -> None:
            if not self.inbox.closed:
                self.tell(Expire(uid=uid, plugin=plugin, timeout=timeout))
        return fire

    def __len__(self) -> int:
        return len(self.waiting_pods)

    async def handle(self, msg: WaitingRoomMsg) -> None:
        match msg:
            case Expire(uid=uid, plugin=plugin, timeout=timeout):
                wp = self.waiting_pods.get(uid)
                if wp is not None:
                    wp.reject(plugin, timeout_message(plugin, timeout))
            case RejectAll(message=message):
                self.reject_all(message)
            case _:
                assert_never(msg)

    def reject_all(self, message: str) -> None:
        for wp in self.waiting_pods:
            pending = wp.pending_plugins()
            wp.reject(pending[0] if pending else "", message)

    def stop(self) -> None:
        self.reject_all("scheduler is shutting down")
        self.inbox.close(drain=False)

