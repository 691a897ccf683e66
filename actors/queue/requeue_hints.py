"""What a cluster event means for one unschedulable pod (upstream's
isPodWorthRequeuing, with QueueingHints): skip it, move it after its backoff, or
move it to activeQ at once. A part the SchedulingQueue (scheduling_queue.py) holds,
given the profiles' hint maps; pure, no clock.
"""
from __future__ import annotations

import enum
import logging
from typing import Any, Callable, Iterable

from actors.queue.interest import HintMap
from framework.api.objects import Pod
from framework.cache import PodInfo
from framework.interface import ActionType, ClusterEvent, QueuedPodInfo, QueueingHint

log = logging.getLogger("ksched.queue")
FORCE_ACTIVATE = ClusterEvent("*", ActionType.All, "ForceActivate")


class Strategy(enum.IntEnum):
    """What a cluster event means for one unschedulable pod (queueingStrategy)."""

    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


class RequeueDecisions:
    """The queue's requeue decisions over `hints_for` (a pod's profile's hint map) and
    `gate_holds` ((pod, plugin) -> whether PreEnqueue would gate the pod by that
    plugin again: Framework.pre_enqueue_gate_holds; None: not known)."""

    __slots__ = ("_hints_for", "_gate_holds")

    def __init__(self, hints_for: Callable[[Pod], HintMap],
                 gate_holds: Callable[[Pod, str], bool] | None = None) -> None:
        self._hints_for = hints_for
        self._gate_holds = gate_holds

    def regated_in_place(self, qpi: QueuedPodInfo, runs_pre_enqueue: bool) -> bool:
        """Whether moving the gated pod `qpi` would only put it back in the pool gated
        by the same plugin: its gate holds, and the move would run PreEnqueue
        (`runs_pre_enqueue`: not parked in backoffQ on the way). Such a pod is left
        where it is, so a victim's deletion moves only the preemptor whose
        preemption it ends, not every preemptor still held (DefaultPreemption)."""
        return (runs_pre_enqueue and self._gate_holds is not None and bool(qpi.gating_plugin)
                and self._gate_holds(qpi.pod, qpi.gating_plugin))

    def worth_requeuing(self, qpi: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> Strategy:
        """isPodWorthRequeuing: what `event` means for the unschedulable pod `qpi`."""
        rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
        if not rejectors:
            return Strategy.AFTER_BACKOFF
        if event.resource == "*":
            if event is FORCE_ACTIVATE and isinstance(new, Pod) and new.key != qpi.pod.key:
                return Strategy.SKIP
            return Strategy.AFTER_BACKOFF
        hints = self._hints_for(qpi.pod)
        strategy = Strategy.SKIP
        for plugin, registered in hints.items():  # registration order, as upstream's hint map
            if plugin not in rejectors:
                continue
            for reg in registered:
                if not reg.event.matches(event):
                    continue
                if reg.hint is None:
                    hint = QueueingHint.Queue
                else:
                    try:
                        hint = reg.hint(qpi.pod, old, new)
                    except Exception as e:  # noqa: BLE001 - upstream treats a failing hint as Queue
                        log.error("pod %s: QueueingHintFn of plugin %s for %s failed: %s",
                                  qpi.pod.key, plugin, event.label, e)
                        hint = QueueingHint.Queue
                if hint != QueueingHint.Queue:
                    continue
                if plugin in qpi.pending_plugins:
                    return Strategy.IMMEDIATELY
                if not qpi.pending_plugins:
                    return Strategy.AFTER_BACKOFF  # nothing could make it queueImmediately
                strategy = Strategy.AFTER_BACKOFF
        return strategy

    def after_events(self, qpi: QueuedPodInfo, events: Iterable[tuple[int, ClusterEvent, Any, Any]],
                     since: int | None) -> Strategy:
        """The strongest strategy among the events recorded after sequence number
        `since` (the pod's pop) while it was in flight: every one is asked, as
        upstream's determineSchedulingHintForInFlightPod; none without `since`."""
        strategy = Strategy.SKIP
        if since is None:
            return strategy
        worth = self.worth_requeuing
        for seq, event, old, new in events:
            if seq > since:
                strategy = max(strategy, worth(qpi, event, old, new))
        return strategy


def gate_removed(qpi: QueuedPodInfo, new: Any) -> bool:
    """The event is the pod itself with its scheduling gates gone."""
    return isinstance(new, Pod) and new.key == qpi.pod.key and not new.scheduling_gates


def cross_topology(qpi: QueuedPodInfo, assigned: Any) -> bool:
    """upstream's getUnschedulablePodsWithCrossTopologyTerm: an assigned pod's add or
    update can help a pod PodTopologySpread rejected in the same namespace, or one
    with a required affinity term the assigned pod matches."""
    if not isinstance(assigned, Pod):
        return qpi.pod.has_pod_affinity or "PodTopologySpread" in qpi.unschedulable_plugins
    if "PodTopologySpread" in qpi.unschedulable_plugins and assigned.namespace == qpi.pod.namespace:
        return True
    if not qpi.pod.has_pod_affinity:
        return False
    return any(t.matches(assigned, None) for t in PodInfo(qpi.pod).required_affinity_terms)
