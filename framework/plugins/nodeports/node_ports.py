"""NodePorts: a pod's host ports must be free on the node."""
from __future__ import annotations

from typing import Any, Hashable, Sequence

from framework.api.objects import ContainerPort, Pod
from framework.cache import NodeInfo
from framework.host_ports import HostPortInfo
from framework.plugins.helper import filter_flagged
from framework.plugins.helper.hints import as_objects
from framework.interface import (SKIP, ActionType, ClusterEvent, ClusterEventWithHint, Code, CycleState, Handle,
                                 QueueingHint, SignPurpose, Status)
from framework.plugins.helper.signing import ALL_SIGNED, POD_ADDED

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
PRE_FILTER_STATE_KEY = "PreFilterNodePorts"


def fits_ports(want: Sequence[ContainerPort], in_use: HostPortInfo) -> bool:
    for p in want:
        if in_use.check_conflict(p.host_ip, p.protocol, p.host_port):
            return False
    return True


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    """Whether none of the pod's host ports is taken on the node (upstream's nodeports.Fits)."""
    return fits_ports(pod.host_ports, node_info.used_ports)


class NodePorts:
    name = NAME

    def monotone_events(self, pod: Pod) -> Sequence[ClusterEvent]:
        """A pod added to a node only takes ports (MonotoneEventsPlugin)."""
        return (POD_ADDED,)

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """Reads nothing of the pod beyond the common signature (SignPlugin)."""
        return ALL_SIGNED

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "NodePorts":
        return cls()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Container ports are immutable, so pod updates never matter.
        return [
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.Delete), self.is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.Add)),
        ]

    def is_schedulable_after_pod_deleted(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """Only a deleted pod that was placed (or nominated) and held one of our ports can help."""
        old, _ = as_objects(Pod, old, None)
        if old is None:
            return QueueingHint.QueueSkip
        if not old.node_name and not old.nominated_node_name:
            return QueueingHint.QueueSkip
        freed = HostPortInfo()
        for p in old.host_ports:
            freed.add(p.host_ip, p.protocol, p.host_port)
        if len(freed) == 0 or fits_ports(pod.host_ports, freed):
            return QueueingHint.QueueSkip
        return QueueingHint.Queue

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[None, Status | None]:
        ports = pod.host_ports
        if not ports:
            return None, SKIP
        # Immutable for the cycle, so preemption's state clones may share it.
        state.write(PRE_FILTER_STATE_KEY, tuple(ports))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        try:
            want = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            return Status.error_of(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if not fits_ports(want, node_info.used_ports):
            return Status(Code.Unschedulable, ERR_REASON, plugin=NAME)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[Status | None]:
        # A node with no host port in use cannot conflict.
        return filter_flagged(nodes, "has_ports", lambda ni: bool(ni.used_ports.ports),
                              lambda ni: self.filter(state, pod, ni))


PLUGINS = [NodePorts]
