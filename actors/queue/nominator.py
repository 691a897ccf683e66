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
        # The node each version step touched: version v's change is _log[v - _log_start - 1].
        self._log: list[str] = []
        self._log_start = 0

    def add(self, pod: Pod, node_name: str) -> None:
        self.delete(pod)
        if not node_name or (self.accepts is not None and not self.accepts(pod)):
            return
        self._moved(node_name)
        self._node_of[pod.key] = node_name
        self._by_node.setdefault(node_name, {})[pod.key] = PodInfo(pod)

    def delete(self, pod: Pod) -> None:
        node = self._node_of.pop(pod.key, None)
        if node is not None:
            self._moved(node)
            pods = self._by_node.get(node, {})
            pods.pop(pod.key, None)
            if not pods:
                self._by_node.pop(node, None)

    _LOG_LIMIT = 1 << 14

    def _moved(self, node_name: str) -> None:
        self.version += 1
        if len(self._log) >= self._LOG_LIMIT:
            self._log_start += len(self._log)
            self._log = []
        self._log.append(node_name)

    def nodes_changed_since(self, version: int) -> list[str] | None:
        """The nodes whose nominated pods changed after `version` (repeats
        possible); None when the log no longer reaches back that far."""
        if version < self._log_start or version > self.version:
            return None
        return self._log[version - self._log_start:]

    def node_of(self, pod: Pod) -> str:
        return self._node_of.get(pod.key, "")

    def nodes(self) -> list[str]:
        """Every node some pod is nominated to."""
        return list(self._by_node)

    def pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self._by_node.get(node_name, {}).values())
