"""What the two plugins that match tolerations against taints (NodeUnschedulable,
TaintToleration) share: the TaintTolerationComparisonOperators gate and the
cluster events that can make a pod one of them rejected schedulable."""
from __future__ import annotations

from typing import Any

from framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint, Status

COMPARISON_OPERATORS_GATE = "TaintTolerationComparisonOperators"


class TolerationsPlugin:
    """Base of a plugin that matches the pod's tolerations against node taints.
    Subclasses give the two queueing hints."""

    def __init__(self, enable_comparison_operators: bool) -> None:
        self._comparison_ops = enable_comparison_operators

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Any) -> Any:
        return cls(handle.features.enabled(COMPARISON_OPERATORS_GATE))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A node added or its taints changed; the pending pod's own tolerations changed."""
        return [
            ClusterEventWithHint(ClusterEvent("Node", ActionType.Add | ActionType.UpdateNodeTaint),
                                 self.is_schedulable_after_node_change),
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.UpdatePodTolerations),
                                 self.is_schedulable_after_pod_toleration_change),
        ]

    def pre_filter(self, state: Any, pod: Any, nodes: list[Any]) -> tuple[None, Status | None]:
        """Nothing to compute before Filter: every pod passes."""
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def is_schedulable_after_node_change(self, pod: Any, old: Any, new: Any) -> QueueingHint:
        raise NotImplementedError

    def is_schedulable_after_pod_toleration_change(self, pod: Any, old: Any, new: Any) -> QueueingHint:
        raise NotImplementedError
