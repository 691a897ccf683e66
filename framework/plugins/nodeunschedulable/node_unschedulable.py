"""NodeUnschedulable: cordoned nodes (spec.unschedulable) take only pods that
tolerate the node.kubernetes.io/unschedulable:NoSchedule taint."""
from __future__ import annotations

from typing import Any, Hashable, Sequence

from framework.api.labels import Taint, tolerations_tolerate_taint
from framework.api.objects import Node, Pod
from framework.cache import NodeInfo
from framework.plugins.helper import filter_flagged
from framework.plugins.helper.hints import as_objects
from framework.plugins.helper.taints import TolerationsPlugin
from framework.interface import ClusterEvent, Code, CycleState, FilterReads, QueueingHint, SignPurpose, Status
from framework.plugins.helper.signing import ALL_SIGNED, ANY_POD_EVENT

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeUnschedulable(TolerationsPlugin):
    name = "NodeUnschedulable"

    filter_reads = FilterReads.NODE  # FilterReadsPlugin: the node alone decides

    def monotone_events(self, pod: Pod) -> Sequence[ClusterEvent]:
        """No pod event changes a verdict that reads only the node (MonotoneEventsPlugin)."""
        return (ANY_POD_EVENT,)

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """Reads nothing of the pod beyond the common signature (SignPlugin)."""
        return ALL_SIGNED

    def _tolerates_unschedulable(self, pod: Pod) -> bool:
        return tolerations_tolerate_taint(pod.tolerations, UNSCHEDULABLE_TAINT, self._comparison_ops)

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A node added schedulable, or turned from unschedulable to schedulable."""
        old, new = as_objects(Node, old, new)
        if not new.unschedulable and (old is None or old.unschedulable):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def is_schedulable_after_pod_toleration_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """The pending pod itself now tolerates the unschedulable taint. The old
        tolerations need no look: had it tolerated the taint, this plugin would not
        have rejected it."""
        _, new = as_objects(Pod, old, new)
        if new is not None and new.uid == pod.uid and self._tolerates_unschedulable(new):
            return QueueingHint.Queue
        return QueueingHint.QueueSkip

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None or not node.unschedulable:
            return None
        if self._tolerates_unschedulable(pod):
            return None
        return Status(Code.UnschedulableAndUnresolvable, ERR_REASON_UNSCHEDULABLE)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[Status | None]:
        return filter_flagged(nodes, "unschedulable", lambda ni: ni.node is not None and ni.node.unschedulable,
                              lambda ni: self.filter(state, pod, ni))


PLUGINS = [NodeUnschedulable]
