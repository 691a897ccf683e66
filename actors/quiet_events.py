"""Cluster events that can move no pod, told apart where they arise (the Scheduler's
store events), so that no Move is sent to the queue for them.

The queue offers a cluster event only to the pods its hint index names
(actors/queue/hint_index.py): when every registration matching the event gives hint
keys (ClusterEventWithHint.event_keys / pod_keys, framework/events.py), a pod can be
moved by it, or requeued by it after an attempt in flight, only if the pod's keys share
one with the event's; every other pod's hint answers QueueSkip. Every pod the queue
holds or has in flight is one of the Scheduler's pending pods (unbound, of its
profiles: it adds them, and drops them when bound or deleted), so QuietEvents files each
pending pod by the keys of those registrations, the union over every version of it seen
while it is pending (an attempt in flight asks about the version it popped). An event
whose keys name no pending pod would only have been recorded for the attempts in flight
and offered to no pod: it is dropped.

An event no registration of any profile matches (a PodGroup's status update: GangScheduling
registers PodGroup adds only) is dropped too: the queue's own EventInterest
(actors/queue/interest.py, over the same hint maps) would ignore it, neither offered nor
recorded for the attempts in flight, as upstream registers no informer handler for it.

Kept as the queue's own rules: an event of a wildcard resource, one some matching
registration gives no keys for, one whose keys cannot be read, and any keyed event while
a pending pod's keys cannot be read, go to the queue as before; so do every pod's own
events (the queue offers one to that pod whatever its keys). The Pipeline wires it with
the queue's own hint maps; without it the Scheduler sends every event (tests that build a
Scheduler alone).

DynamicResources is today's one plugin with hint keys: a claim's ADDED, made for a pod
whose status does not name it yet, names no pending pod and no longer costs a message
and a queue turn. (The allocation written with a pod's binding still goes: the pod being
bound is pending, and names the claim, until its binding's event.)"""
from __future__ import annotations

import logging
from typing import Any, Callable, Hashable, Iterable

from actors.queue.interest import HintMap
from framework.api.objects import Pod
from framework.events import EventKeysFn
from framework.interface import ClusterEvent

log = logging.getLogger("ksched.scheduler")

# per plugin whose registrations match an event, their event-key functions; None: some
# matching registration has no keys (the event may concern any pod that plugin rejected);
# (): no registration matches (the queue ignores the event)
Plan = tuple[tuple[str, tuple[EventKeysFn, ...]], ...] | None
_POD_RESOURCES = frozenset({"Pod", "AssignedPod", "UnschedulablePod"})


class QuietEvents:
    def __init__(self, hints_for: Callable[[Pod], HintMap], hint_maps: Iterable[HintMap]) -> None:
        self._hints_for = hints_for
        self._maps = tuple(hint_maps)
        # per hint map (by identity, the map held): the registrations `pending` files pods
        # by, in order; the profiles' maps are built once and never changed
        self._keyed: dict[int, tuple[HintMap, tuple[tuple[str, Any], ...]]] = {
            id(m): (m, _keyed_registrations(m)) for m in self._maps}
        self._plans: dict[ClusterEvent, Plan] = {}
        self._by_key: dict[tuple[str, Hashable], set[str]] = {}  # (plugin, key) -> pending pods filed under it
        self._filed: dict[str, set[tuple[str, Hashable]]] = {}  # pending pod -> its (plugin, key)s
        self._unread: set[str] = set()  # pending pods whose keys could not be read
        self.dropped = 0  # events not sent (tests, profile)

    # --- pending pods -----------------------------------------------------------------------------

    def pending(self, pod: Pod) -> None:
        """`pod` (a new version, or a new pod) is pending: its keys are added to those
        of its earlier versions."""
        key = pod.key
        filed = self._filed.setdefault(key, set())
        hints = self._hints_for(pod)
        kept = self._keyed.get(id(hints))
        for plugin, pod_keys in kept[1] if kept is not None and kept[0] is hints else _keyed_registrations(hints):
            try:
                keys = pod_keys(pod)
            except Exception as e:  # noqa: BLE001 - then every event goes to the queue
                log.error("pod %s: pod_keys of plugin %s failed: %s", key, plugin, e)
                self._unread.add(key)
                continue
            for k in keys:
                if (plugin, k) not in filed:
                    filed.add((plugin, k))
                    self._by_key.setdefault((plugin, k), set()).add(key)

    def gone(self, key: str) -> None:
        """The pod is no longer pending (bound or deleted)."""
        self._unread.discard(key)
        for k in self._filed.pop(key, ()):
            bucket = self._by_key.get(k)
            if bucket is not None:
                bucket.discard(key)
                if not bucket:
                    del self._by_key[k]

    # --- events -----------------------------------------------------------------------------------

    def moves_none(self, event: ClusterEvent, old: Any, new: Any) -> bool:
        """Whether the queue would move no pod for `event`, now or for an attempt in flight."""
        if event.resource == "*" or event.resource in _POD_RESOURCES:
            return False  # (a pod's own events: the queue offers them to that pod as well)
        plan = self._plan(event)
        if plan is None:
            return False
        if not plan:  # no registration matches: the queue would neither offer nor record it
            self.dropped += 1
            return True
        if self._unread:
            return False
        for plugin, key_fns in plan:
            for fn in key_fns:
                try:
                    keys = fn(old, new)
                except Exception:  # noqa: BLE001 - the queue logs it and offers the event to every pod
                    return False
                if keys is None or any((plugin, k) in self._by_key for k in keys):
                    return False
        self.dropped += 1
        return True

    def _plan(self, event: ClusterEvent) -> Plan:
        if event in self._plans:
            return self._plans[event]
        matching: dict[str, list[Any]] = {}
        for hint_map in self._maps:
            for plugin, regs in hint_map.items():
                matching.setdefault(plugin, []).extend(r for r in regs if r.event.matches(event))
        keyed = []
        for plugin, regs in matching.items():
            if not regs:
                continue
            if any(r.event_keys is None or r.pod_keys is None for r in regs):
                self._plans[event] = None
                return None
            keyed.append((plugin, tuple(r.event_keys for r in regs)))
        plan = self._plans[event] = tuple(keyed)  # () when no registration matches
        return plan


def _keyed_registrations(hints: HintMap) -> tuple[tuple[str, Any], ...]:
    """(plugin, pod_keys) of each registration in `hints` that gives pod keys, in order;
    pods' own events are not judged here."""
    return tuple((plugin, reg.pod_keys) for plugin, regs in hints.items() for reg in regs
                 if reg.pod_keys is not None and reg.event.resource not in _POD_RESOURCES)
