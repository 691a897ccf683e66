"""Which unschedulable pods form one equivalence class (pod_classes.py) and which
events a class sleeps through, from the profiles' own plugin declarations
(framework/interface.py: SignPlugin for SignPurpose.FAILURE, MonotoneEventsPlugin).

A class key is (profile, signature, unschedulable plugins, pending plugins): pods
of a profile whose every PreFilter, Filter and PostFilter plugin signed them, with
the same signature, rejected by the same plugins, all of which signed. A pod with
a nominated node, a pod no plugin rejected (an Error) and a pod rejected at
Reserve, Permit or an extender is alone, as in upstream's queue.
"""
from __future__ import annotations

from typing import Any, Hashable, Mapping

from framework.failure_memo import FAILURE_POINTS, ProfileSigner
from framework.interface import ClusterEvent, MonotoneEventsPlugin, QueuedPodInfo

CLASSES_GATE = "QueueEquivalenceClasses"  # ksched's own feature gate (framework/features.py)


class ClassRules:
    """`class_key` and `monotone` for SchedulingQueue, over every profile."""

    def __init__(self, frameworks: Mapping[str, Any], has_extenders: bool) -> None:
        self._signers: dict[str, ProfileSigner] = {}
        self._signed: dict[str, frozenset[str]] = {}
        self._monotone: dict[str, dict[str, MonotoneEventsPlugin]] = {}
        for profile, fwk in frameworks.items():
            signer = ProfileSigner(fwk, has_extenders)
            if not signer.enabled:
                continue
            self._signers[profile] = signer
            self._signed[profile] = frozenset(pl.name for point in FAILURE_POINTS for pl in fwk.plugins_at(point))
            self._monotone[profile] = {pl.name: pl for point in FAILURE_POINTS for pl in fwk.plugins_at(point)
                                       if isinstance(pl, MonotoneEventsPlugin)}

    def class_key(self, qpi: QueuedPodInfo) -> Hashable | None:
        profile = qpi.pod.scheduler_name
        signer = self._signers.get(profile)
        rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
        if signer is None or not rejectors or not rejectors <= self._signed[profile]:
            return None
        signature = signer.sign(qpi.pod, nominated=False)  # refuses a pod with a nominated node
        if signature is None:
            return None
        return (profile, signature, frozenset(qpi.unschedulable_plugins), frozenset(qpi.pending_plugins))

    def monotone(self, qpi: QueuedPodInfo, event: ClusterEvent) -> bool:
        """Whether every plugin that rejected the pod declares `event` monotone for it."""
        declared = self._monotone.get(qpi.pod.scheduler_name, {})
        for plugin in qpi.unschedulable_plugins | qpi.pending_plugins:
            pl = declared.get(plugin)
            if pl is None or not any(e.matches(event) for e in pl.monotone_events(qpi.pod)):
                return False
        return True
