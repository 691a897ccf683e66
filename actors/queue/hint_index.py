"""Which unschedulable pods a cluster event can move, found from an index instead of
offering the event to every pod in the pool (upstream offers it to every pod; the
pods that move are the same, the ones skipped here are the ones isPodWorthRequeuing
would have answered QueueSkip for).

The index files the pool's plain entries (those the pool offers one by one: not in an
equivalence class, not gated by SchedulingGates) by what the registrations say, never
by plugin names of its own:
- by rejector plugin: a pod none of whose rejectors (unschedulable or pending
  plugins) has a registration matching the event is skipped by isPodWorthRequeuing;
- by hint key (ClusterEventWithHint.event_keys / pod_keys, framework/events.py): when
  every registration of plugin P matching the event gives event keys, only P's pods
  filed under one of those keys can get Queue from P.
A pod with no rejectors moves on any event, so it is always a candidate, as is a pod
whose `pod_keys` raised.

An entry is filed when an event first asks (`candidates`), not when it is added: the
pod object and its rejectors are kept as they were at `add`, and filing them later
gives the same keys, `pod_keys` being a pure function of the pod (framework/events.py)
and the pod's hint map its profile's. A DRA pod is added gated, added again with its
status recording the claim, then moved to activeQ: filed once if an event asked in
between, else never (two filings and two unfilings a pod before).
"""
from __future__ import annotations

import logging
from typing import AbstractSet, Any, Callable, Hashable, Iterable

from actors.queue.interest import HintMap
from framework.api.objects import Pod
from framework.interface import ClusterEvent, QueuedPodInfo
from framework.events import EventKeysFn

log = logging.getLogger("ksched.queue")

# plugin -> the event-key functions of its registrations matching an event (None: some
# matching registration has none, so every pod that plugin rejected is a candidate)
Plan = tuple[tuple[str, tuple[EventKeysFn, ...] | None], ...]
Filed = tuple[tuple[str, ...], tuple[tuple[str, Hashable], ...]]


class HintIndex:
    def __init__(self, hints_for: Callable[[Pod], HintMap], hint_maps: Iterable[HintMap]) -> None:
        self._hints_for = hints_for
        self._maps = tuple(hint_maps)
        self._always: set[str] = set()
        self._by_plugin: dict[str, set[str]] = {}
        self._by_key: dict[tuple[str, Hashable], set[str]] = {}
        self._filed: dict[str, Filed] = {}
        self._plans: dict[ClusterEvent, Plan] = {}
        # entries added since the last event asked, not filed yet: key -> (the pod, its
        # rejectors), as they were at `add` (in add order: filed in that order)
        self._unfiled: dict[str, tuple[Pod, AbstractSet[str]]] = {}

    def __len__(self) -> int:
        self._file_all()  # (tests: the count as filing at add gave it)
        return len(self._filed) + len(self._always)

    # --- entries ----------------------------------------------------------------------------------

    def add(self, key: str, qpi: QueuedPodInfo) -> None:
        unfiled = self._unfiled
        if key in unfiled:
            del unfiled[key]  # (so the entry is filed in this add's order, as discard-then-add did)
        elif key in self._filed or key in self._always:
            self.discard(key)
        unfiled[key] = (qpi.pod, qpi.unschedulable_plugins | qpi.pending_plugins)  # (a new set: as it is now)

    def _file_all(self) -> None:
        unfiled = self._unfiled
        if unfiled:
            self._unfiled = {}
            for key, (pod, rejectors) in unfiled.items():
                self._file(key, pod, rejectors)

    def _file(self, key: str, pod: Pod, rejected_by: AbstractSet[str]) -> None:
        rejectors = tuple(sorted(rejected_by))
        if not rejectors:
            self._always.add(key)
            return
        hints = self._hints_for(pod)
        keys: list[tuple[str, Hashable]] = []
        for plugin in rejectors:
            self._by_plugin.setdefault(plugin, set()).add(key)
            for reg in hints.get(plugin, ()):
                if reg.pod_keys is None:
                    continue
                try:
                    keys.extend((plugin, k) for k in reg.pod_keys(pod))
                except Exception as e:  # noqa: BLE001 - then every event reaches the pod
                    log.error("pod %s: pod_keys of plugin %s failed: %s", key, plugin, e)
                    self._always.add(key)
        for k in keys:
            self._by_key.setdefault(k, set()).add(key)
        self._filed[key] = (rejectors, tuple(keys))

    def discard(self, key: str) -> None:
        if self._unfiled.pop(key, None) is not None:
            return  # (never filed: add took it out of the index first)
        self._always.discard(key)
        filed = self._filed.pop(key, None)
        if filed is None:
            return
        plugins, keys = filed
        for plugin in plugins:
            _drop(self._by_plugin, plugin, key)
        for k in keys:
            _drop(self._by_key, k, key)

    # --- events -----------------------------------------------------------------------------------

    def candidates(self, event: ClusterEvent, old: Any, new: Any) -> set[str] | None:
        """The pool entries `event` may move (a superset), or None: every entry."""
        if event.resource == "*":
            return None
        self._file_all()
        out = set(self._always)
        for plugin, key_fns in self._plan(event):
            keys = _event_keys(key_fns, old, new)
            if keys is None:
                out |= self._by_plugin.get(plugin, set())
                continue
            for k in keys:
                out |= self._by_key.get((plugin, k), set())
        return out

    def _plan(self, event: ClusterEvent) -> Plan:
        plan = self._plans.get(event)
        if plan is None:
            matching: dict[str, list[Any]] = {}
            for hint_map in self._maps:
                for plugin, regs in hint_map.items():
                    for reg in regs:
                        if reg.event.matches(event):
                            matching.setdefault(plugin, []).append(reg)
            plan = self._plans[event] = tuple(
                (plugin, tuple(r.event_keys for r in regs)
                 if all(r.event_keys is not None and r.pod_keys is not None for r in regs) else None)
                for plugin, regs in matching.items())
        return plan


def _event_keys(key_fns: tuple[EventKeysFn, ...] | None, old: Any, new: Any) -> set[Hashable] | None:
    if key_fns is None:
        return None
    keys: set[Hashable] = set()
    for fn in key_fns:
        try:
            got = fn(old, new)
        except Exception as e:  # noqa: BLE001 - no narrowing: every pod of the plugin is offered
            log.error("event_keys failed: %s", e)
            return None
        if got is None:
            return None
        keys |= got
    return keys


def _drop(index: dict[Any, set[str]], k: Any, key: str) -> None:
    bucket = index.get(k)
    if bucket is not None:
        bucket.discard(key)
        if not bucket:
            del index[k]
