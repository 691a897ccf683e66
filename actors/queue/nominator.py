"""Pods nominated to nodes by preemption (upstream's backend/queue/nominator.go)."""
from __future__ import annotations

from typing import Callable

from framework.api.objects import Pod
from framework.cache import PodInfo


class Nominator:
    """Pods nominated to nodes by preemption (upstream's nominator)."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self._node_of: dict[str, str] = {}
        # Whether the pod lister still knows the pod as pending (upstream's nominator
        # drops nominations of pods gone or bound); None: every pod is.
        self.accepts: Callable[[Pod], bool] | None = None
        # Moves with every change of who is nominated where (a cycle's reused
        # failure holds for one version only: framework.failure_memo).
        self.version = 0

    def add(self, pod: Pod, node_name: str) -> None:
        self.delete(pod)
        if not node_name or (self.accepts is not None and not self.accepts(pod)):
            return
        self.version += 1
        self._node_of[pod.key] = node_name
        self._by_node.setdefault(node_name, {})[pod.key] = PodInfo(pod)

    def delete(self, pod: Pod) -> None:
        node = self._node_of.pop(pod.key, None)
        if node is not None:
            self.version += 1
            pods = self._by_node.get(node, {})
            pods.pop(pod.key, None)
            if not pods:
                self._by_node.pop(node, None)

    def node_of(self, pod: Pod) -> str:
        return self._node_of.get(pod.key, "")

    def nodes(self) -> list[str]:
        """Every node some pod is nominated to."""
        return list(self._by_node)

    def pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self._by_node.get(node_name, {}).values())
