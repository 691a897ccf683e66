"""NodeName: a pod that names a node (spec.nodeName) fits only that node."""
from __future__ import annotations

from typing import Any, Hashable, Sequence

from framework.api.objects import Pod
from framework.cache import NodeInfo
from framework.interface import (ActionType, ClusterEvent, ClusterEventWithHint, Code, CycleState, FilterReads,
                                 Handle, SignPurpose, Status)
from framework.plugins.helper.signing import ALL_SIGNED, ANY_POD_EVENT

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = "NodeName"

    filter_reads = FilterReads.NODE  # FilterReadsPlugin: the node alone decides

    def monotone_events(self, pod: Pod) -> Sequence[ClusterEvent]:
        """No pod event changes a verdict that reads only the node (MonotoneEventsPlugin)."""
        return (ANY_POD_EVENT,)

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """Reads nothing of the pod beyond the common signature (SignPlugin)."""
        return ALL_SIGNED

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "NodeName":
        return cls()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("Node", ActionType.Add | ActionType.Update))]

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not pod.node_name or pod.node_name == node_info.name:
            return None
        return Status(Code.UnschedulableAndUnresolvable, ERR_REASON)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[Status | None]:
        if not pod.node_name:
            return [None] * len(nodes)
        return [self.filter(state, pod, ni) for ni in nodes]


PLUGINS = [NodeName]
