"""Pods held at Permit as the scheduling cycle sees them (upstream's waitingPod /
waitingPodsMap), without timers or I/O.

The waiting room (actors/waiting_room.py) owns who waits and how each wait ends:
timers, deadlines, the first decision, the binding cycle's Future. The Scheduler
keeps this read view for its plugins, which run inside its cycle and need
synchronous answers (Coscheduling allows a waiter and reads at once whether that
decided it). The scheduler creates a pod's entry in the cycle that parks it (the
same step that sends the waiting room its Park) and removes it only when the
room says the wait is over (PermitSettled); nothing else changes the map.

A WaitingPod records the first decision it is given, as upstream's does: Success
once every plugin that asked to wait has allowed it, Unschedulable (naming the
plugin) on any rejection; later calls are ignored. That decision goes to the
`on_decision` callback, which in the running system is a message to the room.
The room's word is final: a wait the room ended first (a timeout, a deleted or
preempted pod) ends as the room says, whatever the view recorded meanwhile.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Callable, Iterator, Mapping

from framework.api.objects import Pod
from framework.interface import Code, Status

Decision = Callable[[Status], None]


class WaitingPod:
    __slots__ = ("pod", "node_name", "deadlines", "_pending", "_decided", "_on_decision")

    def __init__(self, pod: Pod, node_name: str, deadlines: Mapping[str, float],
                 on_decision: Decision | None = None) -> None:
        self.pod = pod
        self.node_name = node_name
        # plugin -> absolute deadline (clock seconds); read only, never rewritten.
        self.deadlines: Mapping[str, float] = MappingProxyType(dict(deadlines))
        self._pending = set(deadlines)
        self._decided: Status | None = None
        self._on_decision = on_decision

    def set_on_decision(self, fn: Decision) -> None:
        self._on_decision = fn
        if self._decided is not None:
            fn(self._decided)

    @property
    def decided(self) -> Status | None:
        return self._decided

    def pending_plugins(self) -> list[str]:
        return sorted(self._pending)

    def allow(self, plugin_name: str) -> None:
        if self._decided is not None:
            return
        self._pending.discard(plugin_name)
        if not self._pending:
            self._decide(Status(Code.Success))

    def reject(self, plugin_name: str, message: str) -> None:
        if self._decided is not None:
            return
        self._decide(Status(Code.Unschedulable, message, plugin=plugin_name))

    def settled(self, status: Status) -> None:
        """The owner's final word (the room ended the wait): recorded without
        calling back, replacing any decision the view recorded meanwhile."""
        self._decided = status
        self._pending.clear()

    def _decide(self, status: Status) -> None:
        self._decided = status
        if self._on_decision is not None:
            self._on_decision(status)


class WaitingPodsMap:
    """uid -> WaitingPod (the scheduler's view; see the module docstring for who
    changes it). Iteration order is insertion order."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, wp: WaitingPod) -> None:
        self._pods[wp.pod.uid] = wp

    def remove(self, uid: str) -> WaitingPod | None:
        return self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)
