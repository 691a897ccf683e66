"""Pods held at Permit (upstream's waitingPod / waitingPodsMap), without timers or I/O.

A WaitingPod is decided exactly once: when every plugin that asked to wait has
allowed it (Success), or when any plugin rejects it (Unschedulable, naming the
plugin). The decision goes to the `on_decision` callback; later allow/reject calls
are ignored. Timers belong to whoever owns the map (the waiting-room actor).
"""
from __future__ import annotations

from typing import Callable, Iterator

from framework.api.objects import Pod
from framework.interface import Code, Status

Decision = Callable[[Status], None]


class WaitingPod:
    __slots__ = ("pod", "node_name", "deadlines", "_pending", "_decided", "_on_decision")

    def __init__(self, pod: Pod, node_name: str, deadlines: dict[str, float], on_decision: Decision | None = None) -> None:
        self.pod = pod
        self.node_name = node_name
        self.deadlines = dict(deadlines)  # plugin -> absolute deadline (clock seconds)
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

    def _decide(self, status: Status) -> None:
        self._decided = status
        if self._on_decision is not None:
            self._on_decision(status)


class WaitingPodsMap:
    """uid -> WaitingPod. Iteration order is insertion order."""

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
