"""Preemption that never breaks a bound gang below its quorum.

Upstream's DefaultPreemption knows nothing of PodGroups and may evict bound gang
members one at a time, leaving a running job with fewer than minMember pods
(scheduler-plugins lists this as a known limitation). ksched promises never a
partial gang, so a bound member may be a victim only when the group keeps at
least minMember bound members without every member on that node. Members still
waiting at Permit stay eligible: rejecting one releases its whole group.
"""
from __future__ import annotations

from typing import Any, Callable

from framework.api.objects import POD_GROUP_LABEL, Pod
from framework.cache import NodeInfo, PodInfo

Eligible = Callable[[NodeInfo, PodInfo, Pod], bool]


def keeps_gangs_whole(handle: Any) -> Eligible:
    def eligible(node_info: NodeInfo, victim: PodInfo, preemptor: Pod) -> bool:
        pod = victim.pod
        group = pod.labels.get(POD_GROUP_LABEL)
        if not group:
            return True
        pg = handle.get_object("PodGroup", pod.namespace, group)
        if pg is None:
            return True
        stored = handle.get_object("Pod", pod.namespace, pod.name)
        if stored is None or not stored.node_name:
            return True  # assumed and waiting at Permit, not bound
        bound = [p for p in handle.list_objects_with_label("Pod", pod.namespace, POD_GROUP_LABEL, group)
                 if p.node_name and not p.is_terminal and not p.is_deleting]
        on_node = sum(1 for p in bound if p.node_name == node_info.name)
        return len(bound) - on_node >= pg.min_member

    return eligible
