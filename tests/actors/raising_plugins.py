"""Plugins that raise, for the failure tests (loaded by import path in a config,
so the real daemon can load them too). A pod labelled boom=yes makes them raise."""
from __future__ import annotations

from typing import Any

from framework.api.objects import Pod
from framework.interface import CycleState, QueuedPodInfo
from framework.cache import NodeInfo


def _boom(pod: Pod) -> bool:
    return pod.labels.get("boom") == "yes"


class RaisingSort:
    """QueueSort: priority order, but comparing a boom pod raises (a plugin bug
    the queue's heap cannot survive)."""

    name = "RaisingSort"

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> "RaisingSort":
        return cls()

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        if _boom(a.pod) or _boom(b.pod):
            raise RuntimeError(f"RaisingSort cannot order {a.pod.name} and {b.pod.name}")
        if a.pod.priority != b.pod.priority:
            return a.pod.priority > b.pod.priority
        return a.timestamp < b.timestamp


class RaisingScore:
    """Score: 0 for every node, but raises for a boom pod."""

    name = "RaisingScore"

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> "RaisingScore":
        return cls()

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, None]:
        if _boom(pod):
            raise RuntimeError(f"RaisingScore cannot score {pod.name}")
        return 0, None

    def score_extensions(self) -> None:
        return None


class RaisingPreEnqueue:
    """PreEnqueue: admits every pod but raises on a boom pod."""

    name = "RaisingPreEnqueue"

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> "RaisingPreEnqueue":
        return cls()

    def pre_enqueue(self, pod: Pod) -> None:
        if _boom(pod):
            raise RuntimeError(f"RaisingPreEnqueue cannot admit {pod.name}")
        return None
