"""DynamicResources' queueing hints (upstream's EventsToRegister and isSchedulableAfter*):
which claim, pod and slice events can make a pod that DynamicResources rejected
schedulable, with hint keys so the queue offers a claim event only to the pods that may
use that claim (hint_keys.py)."""
from __future__ import annotations

from typing import Any, Callable, Hashable

from framework.api.dra_kinds import ResourceClaim
from framework.api.objects import Pod
from framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from framework.plugins.dynamicresources.claims import ClaimsNotReady, pod_claims
from framework.plugins.dynamicresources.hint_keys import claim_event_keys, claim_names_used, pod_event_keys, pod_keys

ClaimLookup = Callable[[str, str], "ResourceClaim | None"]


class ClaimHints:
    """The plugin's hints, over its claim lookup (namespace, name) and its reading of a
    pod's claims (which raises ClaimsNotReady while one is missing)."""

    def __init__(self, claim: ClaimLookup, claims_of: Callable[[Pod], list[ResourceClaim]]) -> None:
        self._claim = claim
        self._claims_of = claims_of
        # pod uid -> (the pod object, the claim names it may use, their hint keys)
        self._names: dict[str, tuple[Pod, frozenset[str], frozenset[Hashable]]] = {}

    def events(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("Node", ActionType.Add | ActionType.UpdateNodeLabel
                                              | ActionType.UpdateNodeTaint)),
            ClusterEventWithHint(ClusterEvent("ResourceClaim", ActionType.Add | ActionType.Update),
                                 self.after_claim_change, claim_event_keys, self.claim_keys),
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.UpdatePodGeneratedResourceClaim),
                                 self.after_pod_change, pod_event_keys, pod_keys),
            ClusterEventWithHint(ClusterEvent("DeviceClass", ActionType.Add | ActionType.Update)),
            ClusterEventWithHint(ClusterEvent("ResourceSlice", ActionType.Add | ActionType.Update),
                                 self.after_slice_change),
        ]

    def after_claim_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, ResourceClaim):
            return QueueingHint.Queue
        deallocated = isinstance(old, ResourceClaim) and old.allocated is not None and new.allocated is None
        if not deallocated and not self._may_be_the_pods(pod, new):
            return QueueingHint.QueueSkip  # what the full reading below answers for a claim not the pod's
        try:
            uses = any(c.uid == new.uid for c in self._claims_of(pod))
        except ClaimsNotReady:
            return QueueingHint.QueueSkip
        if isinstance(old, ResourceClaim) and old.allocated is not None and new.allocated is None:
            return QueueingHint.Queue  # deallocated: its devices are free for anyone
        if not uses:
            return QueueingHint.QueueSkip
        if old is None:
            return QueueingHint.Queue
        return QueueingHint.QueueSkip if getattr(old, "status", None) == new.status else QueueingHint.Queue

    def _may_be_the_pods(self, pod: Pod, claim: ResourceClaim) -> bool:
        """Whether the claim's name is one the pod uses (a cheap test before reading its claims)."""
        if claim.namespace != pod.namespace:
            return False
        return claim.name in self._names_used(pod)

    def _known(self, pod: Pod) -> tuple[Pod, frozenset[str], frozenset[Hashable]]:
        known = self._names.get(pod.uid)
        if known is None or known[0] is not pod:
            if len(self._names) >= 10_000:
                self._names.clear()
            names = claim_names_used(pod)
            keys = set()
            for n in names:  # (a loop: no generator frame)
                keys.add(("claim", pod.namespace, n))
            known = self._names[pod.uid] = (pod, names, frozenset(keys))
        return known

    def _names_used(self, pod: Pod) -> frozenset[str]:
        return self._known(pod)[1]

    def claim_keys(self, pod: Pod) -> frozenset[Hashable]:
        """Hint keys: the claims the pod may use; the claim hint skips any other claim
        unless one was deallocated (claim_event_keys). Worked out with the names, once
        per pod object (the queue asks twice for each: the known answer read here)."""
        known = self._names.get(pod.uid)
        return known[2] if known is not None and known[0] is pod else self._known(pod)[2]

    def after_pod_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, Pod) or new.uid != pod.uid:
            return QueueingHint.QueueSkip
        try:
            pod_claims(new, self._claim)
        except ClaimsNotReady:
            return QueueingHint.QueueSkip
        return QueueingHint.Queue

    def after_slice_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        # new devices may satisfy a pod whose claims exist; one still waiting for them does not care
        try:
            return QueueingHint.Queue if self._claims_of(pod) else QueueingHint.QueueSkip
        except ClaimsNotReady:
            return QueueingHint.QueueSkip
