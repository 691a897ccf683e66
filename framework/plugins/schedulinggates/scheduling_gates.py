"""SchedulingGates: a pod with spec.schedulingGates stays out of activeQ."""
from __future__ import annotations

from typing import Any

from framework.api.objects import Pod
from framework.plugins.helper.hints import as_objects
from framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    Handle,
    QueueingHint,
    Status,
)


class SchedulingGates:
    name = "SchedulingGates"

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "SchedulingGates":
        return cls()

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.scheduling_gates:
            return None
        # Go's %v of a []string: "[a b]".
        gates = " ".join(pod.scheduling_gates)
        return Status(Code.UnschedulableAndUnresolvable, f"waiting for scheduling gates: [{gates}]")

    def pre_enqueue_reads_pod_only(self, pod: Pod) -> bool:
        """PodOnlyPreEnqueuePlugin: the pod's own spec.schedulingGates, nothing else."""
        return True

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.UpdatePodSchedulingGatesEliminated),
                self.is_schedulable_after_update_pod_scheduling_gates_eliminated,
            )
        ]

    def is_schedulable_after_update_pod_scheduling_gates_eliminated(self, pod: Pod, old: Any,
                                                                     new: Any) -> QueueingHint:
        """The pending pod's own gates were all removed (the event says so)."""
        _, new = as_objects(Pod, old, new)
        return QueueingHint.Queue if new is not None and new.uid == pod.uid else QueueingHint.QueueSkip


PLUGINS = [SchedulingGates]
