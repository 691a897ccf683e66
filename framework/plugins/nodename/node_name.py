"""NodeName: a pod that names a node (spec.nodeName) fits only that node."""
from __future__ import annotations

from typing import Any

from framework.api.objects import Pod
from framework.cache import NodeInfo
from framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, Code, CycleState, Handle, Status

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = "NodeName"

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
