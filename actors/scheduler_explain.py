"""Explain requests in the Scheduler actor's loop: a dry run of one pod on the
live cache, between two cycles, through the runtime a cycle uses
(framework/explain.py), with the configured extenders' verdicts beside the plugins'. Nothing is assumed, reserved or written.

A part of the Scheduler (actors/scheduler.py), given the Scheduler's cache, snapshot,
profiles and extenders; only the Scheduler's loop calls it.
"""
from __future__ import annotations

import asyncio
from typing import Sequence

from actors.base import reject, resolve
from actors.explain_unbound import without_pod
from framework.explain import explain
from framework.api.objects import Pod
from framework.cache import Cache, Snapshot
from framework.extender import Extender
from framework.runtime import Framework


class Explaining:
    def __init__(self, cache: Cache, snapshot: Snapshot, frameworks: dict[str, Framework],
                 extenders: Sequence[Extender]) -> None:
        self.cache = cache
        self.snapshot = snapshot
        self.frameworks = frameworks
        self.extenders = extenders

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
        resolve(reply, report)
