"""What in-tree plugins declare to the speed-ups (framework/interface.py's
SignPlugin, MonotoneEventsPlugin, FilterReadsPlugin): the fragments and events
several of them share."""
from __future__ import annotations

from typing import Hashable, Mapping

from framework.api.objects import Pod
from framework.interface import ActionType, ClusterEvent

# The fragment of a plugin that reads nothing of the pod beyond the common
# signature (scheduler name, namespace, labels, annotations, owner references, spec).
ALL_SIGNED: Hashable = ()

# A pod placed on a node: the one event more pods can only make a filter reject more.
POD_ADDED = ClusterEvent("Pod", ActionType.Add)
# Any pod event: nothing a node-only filter (FilterReads.NODE) reads.
ANY_POD_EVENT = ClusterEvent("Pod", ActionType.All)


def signed_unless_claims(pod: Pod) -> Hashable | None:
    """The volume plugins' fragment: they read claims by name, and a generic
    ephemeral volume's claim is named after the pod, so a pod with a claim (to
    stay plain, any claim) is not signed."""
    for v in pod.volumes:
        if isinstance(v, Mapping) and ("persistentVolumeClaim" in v or "ephemeral" in v):
            return None
    return ALL_SIGNED
