"""Explain requests in the Scheduler actor's loop: a dry run of one pod on the
live cache, between two cycles (framework.algorithm.explain), with the configured
extenders' verdicts beside the plugins'. Nothing is assumed, reserved or written.

A mixin of the Scheduler (actors/scheduler.py), over its state.
"""
from __future__ import annotations

import asyncio
from typing import Any, Sequence

from actors.base import reject, resolve
from actors.explain_unbound import without_pod
from actors.extenders import explain_extenders
from framework.algorithm import explain
from framework.api.objects import Pod
from framework.cache import Cache, Snapshot
from framework.extender import Extender
from framework.runtime import Framework


class Explaining:
    cache: Cache
    snapshot: Snapshot
    frameworks: dict[str, Framework]
    extenders: Sequence[Extender]

    async def _explain(self, pod: Pod, reply: asyncio.Future) -> None:
        """The cache as the next cycle would see it, on the profile's own Framework,
        without the pod itself (actors/explain_unbound.py); then each interested
        extender's verdicts and scores beside the plugins'."""
        try:
            with without_pod(self.cache, pod.key):
                report = self._explain_report(pod, reply)
                if report is None:
                    return
                if self.extenders:
                    await explain_extenders(report, self.extenders, pod, self.snapshot)
        except Exception as e:  # noqa: BLE001 - the asker gets the failure; the actor carries on
            reject(reply, e)
            return
        finally:
            self.cache.update_snapshot(self.snapshot)
        resolve(reply, report)

    def _explain_report(self, pod: Pod, reply: asyncio.Future) -> dict[str, Any] | None:
        fwk = self.frameworks.get(pod.scheduler_name)
        if fwk is None:
            reject(reply, KeyError(f"no profile named {pod.scheduler_name!r}"))
            return None
        # A bound (or assumed) pod is explained as if it were not bound yet: it is
        # taken off its node for this dry run and put back before any other message
        # (nothing here awaits); its node is dirty, so the next cycle's snapshot has it.
        placed = self.cache.get_pod(pod.key)
        assumed = placed is not None and self.cache.is_assumed(placed)
        if placed is not None:
            self.cache.remove_pod(placed)
        self.cache.update_snapshot(self.snapshot)
        previous = fwk.handle.snapshot()
        try:
            # An exception fails this ask only (actors.base): the cache is only read.
            return explain(fwk, pod, self.snapshot)
        finally:
            fwk.handle.set_snapshot(previous)
            if placed is not None:
                if assumed:
                    self.cache.assume_pod(placed, placed.node_name)
                else:
                    self.cache.add_pod(placed)
