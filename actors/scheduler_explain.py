"""Explain requests in the Scheduler actor's loop: a dry run of one pod on the
live cache, between two cycles, through the runtime a cycle uses
(framework/explain.py), with the configured extenders' verdicts beside the plugins'. Nothing is assumed, reserved or written.

A mixin of the Scheduler (actors/scheduler.py), over its state.
"""
from __future__ import annotations

import asyncio
from typing import Sequence

from actors.base import reject, resolve
from actors.explain_unbound import without_pod
from actors.group_cycle import GroupCycle
from actors.group_topology import TopologyPlacement
from framework.explain import explain
from framework.api.objects import Pod
from framework.cache import Cache, Snapshot
from framework.extender import Extender
from framework.runtime import Framework


class Explaining:
    cache: Cache
    snapshot: Snapshot
    frameworks: dict[str, Framework]
    extenders: Sequence[Extender]
    group_cycle: GroupCycle

    async def _explain(self, pod: Pod, reply: asyncio.Future) -> None:
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
        placement = self.group_cycle.placement
        choice = placement.choices.get((namespace, group)) if isinstance(placement, TopologyPlacement) else None
        out: dict[str, object] = {"name": group}
        if choice is not None:
            out["topology"] = choice.view()
        return out
