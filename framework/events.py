"""Cluster events a plugin registers interest in (upstream's ClusterEvent, ActionType
and QueueingHint): what EnqueueExtensions.events_to_register returns. Plugin authors
import them from framework.interface, the plugin contract."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Hashable

if TYPE_CHECKING:
    from framework.api.objects import Pod


class ActionType(enum.IntFlag):
    Add = 1
    Delete = 2
    UpdateNodeAllocatable = 4
    UpdateNodeLabel = 8
    UpdateNodeTaint = 16
    UpdateNodeCondition = 32
    UpdateNodeAnnotation = 64
    UpdatePodLabel = 128
    UpdatePodScaleDown = 256
    UpdatePodTolerations = 512
    UpdatePodSchedulingGatesEliminated = 1024
    UpdatePodGeneratedResourceClaim = 2048
    Update = (UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint | UpdateNodeCondition | UpdateNodeAnnotation
              | UpdatePodLabel | UpdatePodScaleDown | UpdatePodTolerations | UpdatePodSchedulingGatesEliminated
              | UpdatePodGeneratedResourceClaim | 4096)
    All = Add | Delete | Update


class QueueingHint(enum.IntEnum):
    QueueSkip = 0
    Queue = 1


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A change in the cluster. resource: "Pod", "AssignedPod", "UnschedulablePod",
    "Node", "PodGroup", "Service", ..., or "*" for any."""

    resource: str
    action: ActionType
    label: str = ""

    def matches(self, other: "ClusterEvent") -> bool:
        """Whether this registered event covers the event `other` that happened."""
        if self.resource == "*" or other.resource == "*":
            return bool(self.action & other.action) or other.action == ActionType.All or self.action == ActionType.All
        res_ok = self.resource == other.resource or (self.resource == "Pod" and other.resource in ("AssignedPod", "UnschedulablePod"))
        return res_ok and bool(self.action & other.action)


QueueingHintFn = Callable[["Pod", Any, Any], QueueingHint]
EventKeysFn = Callable[[Any, Any], "frozenset[Hashable] | None"]
PodKeysFn = Callable[["Pod"], "frozenset[Hashable]"]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """An event a plugin cares about and its QueueingHintFn (None: always Queue).

    Hint keys (optional, both or neither; a speed-up, not upstream's): a promise that
    lets the queue offer an event only to the pods its hint can answer Queue for.
    `event_keys(old, new)` names what the event is about (None: it may concern any
    pod); `pod_keys(pod)` names what the pod waits for. The promise: when
    `event_keys` gives a set, `hint(pod, old, new)` answers QueueSkip for every pod
    whose `pod_keys(pod)` shares no key with it. Both are pure functions of their
    arguments; `pod_keys` is read again whenever the queue's pod object changes."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None
    event_keys: EventKeysFn | None = None
    pod_keys: PodKeysFn | None = None
