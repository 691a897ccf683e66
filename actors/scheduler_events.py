"""Cluster changes in the Scheduler actor's loop: a store watch event updates the
cache, the informer view (objects), the pending pods and the nominator between
cycles, and is offered to the queue (AddPod/UpdatePod/DeletePod, or Move with the
cluster event; a pending pod bound sends one DeletePod carrying its AssignedPodAdd
Move); plugins' Activate requests go to the queue too.

A part of the Scheduler (actors/scheduler.py), given the Scheduler's own queue ref,
cache, informer view, nominator, profiles, pending pods and attempts (the same
objects, which the Scheduler never rebinds); only the Scheduler's loop calls it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from actors.base import ActorRef
from actors.events import event_for
from actors.queue.actor import Activate, AddPod, DeletePod, Move, QueueMsg, UpdatePod
from actors.queue.nominator import Nominator
from actors.quiet_events import QuietEvents
from actors.store import WatchEvent
from framework.api.objects import Pod
from framework.cache import Cache
from framework.handle import InMemoryObjects
from framework.preemption_inflight import VictimsInFlight
from framework.runtime import Framework

if TYPE_CHECKING:
    from actors.scheduler_views import Attempt


class ClusterEvents:
    def __init__(self, *, queue: ActorRef[QueueMsg], cache: Cache, objects: InMemoryObjects, nominator: Nominator,
                 frameworks: dict[str, Framework], pending: dict[str, Pod], attempts: "dict[str, Attempt]",
                 reject_waiting: Callable[[str, str, str], object], victims_in_flight: VictimsInFlight) -> None:
        self.queue = queue
        self.cache = cache
        self.objects = objects
        self.nominator = nominator
        self.frameworks = frameworks
        self.pending = pending
        self.attempts = attempts
        self.reject_waiting = reject_waiting
        self.victims_in_flight = victims_in_flight
        # Set by the Pipeline with the queue's hint maps: events that move no pod are not sent.
        self.quiet: QuietEvents | None = None

    def activate(self, pods: list[Pod]) -> None:
        self.queue.try_tell(Activate(pods=tuple(pods)))

    # --- cluster events ----------------------------------------------------------------------------

    def offer(self, msg: QueueMsg) -> None:
        self.queue.try_tell(msg)

    def on_store_change(self, ev: WatchEvent) -> None:
        if ev.kind == "Pod":
            self._on_pod_change(ev)
            return
        if ev.type == "DELETED":
            self.objects.delete(ev.kind, ev.obj.key)
        else:
            self.objects.put(ev.obj)
        if ev.kind == "Node":
            if ev.type == "DELETED":
                self.cache.remove_node(ev.obj.name)
            else:
                self.cache.add_node(ev.obj)  # type: ignore[arg-type]
        new = None if ev.type == "DELETED" else ev.obj
        cluster_event = event_for(ev.kind, ev.type, ev.old, new)
        if cluster_event is not None and (self.quiet is None or not self.quiet.moves_none(cluster_event, ev.old, new)):
            self.offer(Move(event=cluster_event, old=ev.old, new=new))

    def _on_pod_change(self, ev: WatchEvent) -> None:
        pod: Pod = ev.obj  # type: ignore[assignment]
        old: Pod | None = ev.old  # type: ignore[assignment]
        # offer()'s work, the queue ref read now (a ref a test swaps in is followed): a frame
        # fewer for each of a pod's two events (its creation's AddPod, its binding's DeletePod).
        tell = self.queue.try_tell
        if ev.type == "DELETED":
            self.victims_in_flight.discard(pod.uid)
            self.objects.delete("Pod", pod.key)
            self._not_pending(pod.key)
            self.attempts.pop(pod.key, None)
            self.nominator.delete(pod)
            self.reject_waiting(pod.uid, "", "pod deleted")
            if pod.node_name:
                self.cache.remove_pod(pod)
                tell(Move(event=event_for("Pod", "DELETED", pod, None), old=pod, new=None))
            else:
                tell(DeletePod(pod=pod))  # type: ignore[arg-type]
            return
        self.objects.put(pod)
        if pod.node_name:
            was_pending = self._not_pending(pod.key)
            if pod.is_terminal:
                self.victims_in_flight.discard(pod.uid)
                self.cache.remove_pod(pod)
                tell(Move(event=event_for("Pod", "DELETED", pod, None), old=pod, new=None))
                return
            assigned_before = old is not None and bool(old.node_name)
            self.cache.add_pod(pod) if not assigned_before else self.cache.update_pod(pod)
            if was_pending:
                self.nominator.delete(pod)
            if not assigned_before:
                added = Move(event=event_for("Pod", "ADDED", None, pod), old=None, new=pod, cross_topology_only=True)
                # a pending pod bound: out of the queue, then the AssignedPodAdd move, in one message
                tell(DeletePod(pod=pod, then=added) if was_pending else added)  # type: ignore[arg-type]
            else:
                if was_pending:
                    tell(DeletePod(pod=pod))  # type: ignore[arg-type]
                ce = event_for("Pod", "MODIFIED", old, pod)
                if ce is not None:
                    scale_down = bool(ce.action & ce.action.UpdatePodScaleDown)
                    tell(Move(event=ce, old=old, new=pod, cross_topology_only=not scale_down))
            return
        if pod.scheduler_name not in self.frameworks or pod.is_terminal:
            return
        known = pod.key in self.pending
        self.pending[pod.key] = pod
        if self.quiet is not None:
            self.quiet.pending(pod)
        if pod.nominated_node_name:
            self.nominator.add(pod, pod.nominated_node_name)
        elif old is not None and old.nominated_node_name and self.nominator.node_of(pod) == old.nominated_node_name:
            self.nominator.delete(pod)  # cleared in the store (asynchronous preemption clears it there)
        if known:
            tell(UpdatePod(old=old, new=pod))  # type: ignore[arg-type]
        else:
            tell(AddPod(pod=pod))  # type: ignore[arg-type]

    def _not_pending(self, key: str) -> bool:
        """Whether the pod was pending (it is not now)."""
        if self.quiet is not None:
            self.quiet.gone(key)
        return self.pending.pop(key, None) is not None
