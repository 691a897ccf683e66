"""Explain requests in the Scheduler actor's loop: a dry run of one pod on the
live cache, between two cycles, through the runtime a cycle uses
(framework/explain.py), with the configured extenders' verdicts beside the plugins'. Nothing is assumed, reserved or written.

A part of the Scheduler (actors/scheduler.py), given the Scheduler's cache, snapshot,
profiles and extenders; only the Scheduler's loop calls it.
"""
from __future__ import annotations

import asyncio
from typing import Mapping, Sequence

from actors.base import reject, resolve
from actors.explain_unbound import without_pod
from framework.explain import explain
from framework.api.objects import Pod
from framework.cache import Cache, Snapshot
from framework.extender import Extender
from framework.runtime import Framework
from framework.workload.topology import TopologyResult


class Explaining:
    def __init__(self, cache: Cache, snapshot: Snapshot, frameworks: dict[str, Framework],
                 extenders: Sequence[Extender], *,
                 group_choices: Mapping[tuple[str, str], TopologyResult] | None = None) -> None:
        self.cache = cache
        self.snapshot = snapshot
        self.frameworks = frameworks
        self.extenders = extenders
        # (namespace, group) -> the gang's last topology choice (actors/group_topology.py's)
        self.group_choices = group_choices if group_choices is not None else {}

    async def explain(self, pod: Pod, reply: asyncio.Future) -> None:
        """The cache as the next cycle would see it, without the pod itself
        (actors/explain_unbound.py), through the profile's own Framework and the
        configured extenders, as a cycle runs them (framework/explain.py); the
        nominated pods are the nominator's, as in a cycle."""
        fwk = self.frameworks.get(pod.scheduler_name)
        if fwk is None:
            reject(reply, KeyError(f"no profile named {pod.scheduler_name!r}"))
            return
        previous = fwk.handle.snapshot()
        try:  # an exception fails this ask only (actors.base): the cache is only read
            with without_pod(self.cache, pod.key):
                self.cache.update_snapshot(self.snapshot)
                report = await explain(fwk, pod, self.snapshot, self.extenders)
        finally:
            fwk.handle.set_snapshot(previous)
            self.cache.update_snapshot(self.snapshot)
        group = pod.scheduling_group
        if group:
            report["podGroup"] = self._group_topology(pod.namespace, group)
        resolve(reply, report)

    def _group_topology(self, namespace: str, group: str) -> dict[str, object]:
        """The last topology choice of the pod's gang (actors/group_topology.py), for
        explain: which domains were tried and why each was not taken."""
        choice = self.group_choices.get((namespace, group))
        out: dict[str, object] = {"name": group}
        if choice is not None:
            out["topology"] = choice.view()
        return out
