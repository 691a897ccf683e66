"""NodeInfo and PodInfo: one node and its pods as the scheduler sees them, with what
plugins precompute once (requested resources, used host ports, image states,
affinity terms).

Upstream: pkg/scheduler/framework/types.go (NodeInfo, PodInfo). Pure data; the
scheduler Cache (cache.py) keeps one per node and its Snapshot copies those whose
generation moved.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from framework.api.affinity import PodAffinityTerms
from framework.api.objects import Node, Pod
from framework.api.resources import Resource
from framework.host_ports import HostPortInfo

_generation = itertools.count(1)


def next_generation() -> int:
    return next(_generation)


class PodInfo:
    """A pod plus what plugins precompute from it once (affinity terms)."""

    __slots__ = ("pod", "__dict__")

    def __init__(self, pod: Pod) -> None:
        self.pod = pod

    @property
    def affinity_terms(self) -> PodAffinityTerms:
        return self.pod.pod_affinity_terms

    @property
    def required_affinity_terms(self):  # noqa: ANN201 - tuple of AffinityTerm
        return self.affinity_terms.required_affinity

    @property
    def required_anti_affinity_terms(self):  # noqa: ANN201
        return self.affinity_terms.required_anti_affinity

    @property
    def preferred_affinity_terms(self):  # noqa: ANN201
        return self.affinity_terms.preferred_affinity

    @property
    def preferred_anti_affinity_terms(self):  # noqa: ANN201
        return self.affinity_terms.preferred_anti_affinity

    def __repr__(self) -> str:
        return f"PodInfo({self.pod.key})"


@dataclass(slots=True)
class ImageStateSummary:
    size: int
    num_nodes: int


def normalized_image_name(name: str) -> str:
    """Append ":latest" when an image reference has neither tag nor digest."""
    if name.rfind(":") <= name.rfind("/") and "@" not in name:
        return name + ":latest"
    return name


_new_node_info = _new_pod_info = object.__new__


class NodeInfo:
    """One node with the pods on it and the sums the plugins need. Of its fields only
    the pod list is changed in place (by its own methods); the sums, host ports, claim
    counts, affinity lists and image states are replaced when they change, so copies
    (clone) share them."""

    __slots__ = ("node", "name", "pods", "pods_with_affinity", "pods_with_required_anti_affinity", "used_ports",
                 "requested", "non_zero_requested", "allocatable", "image_states", "generation", "pvc_ref_counts")

    def __init__(self, node: Node | None = None) -> None:
        self.node: Node | None = None
        self.name = ""
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.used_ports = HostPortInfo()
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.image_states: dict[str, ImageStateSummary] = {}
        self.pvc_ref_counts: dict[str, int] = {}
        self.generation = next_generation()
        if node is not None:
            self.set_node(node)

    def set_node(self, node: Node) -> None:
        self.node = node
        self.name = node.name
        self.allocatable = node.allocatable.clone()
        self.generation = next_generation()

    def add_pod(self, pod: Pod | PodInfo) -> None:
        if isinstance(pod, PodInfo):
            pi, p = pod, pod.pod
        else:  # PodInfo(pod) without its __init__'s frame
            pi, p = _new_pod_info(PodInfo), pod
            pi.pod = pod
        self.pods.append(pi)
        if p.has_pod_affinity:  # new lists, not appended to: a clone may share them
            self.pods_with_affinity = [*self.pods_with_affinity, pi]
            if p.has_required_anti_affinity:
                self.pods_with_required_anti_affinity = [*self.pods_with_required_anti_affinity, pi]
        self._update(p, +1)
        self.generation = next_generation()

    def remove_pod(self, pod: Pod) -> bool:
        """Remove the pod with this pod's key; False when it is not here."""
        key = pod.key
        for i, pi in enumerate(self.pods):
            if pi.pod.key == key:
                del self.pods[i]
                self.pods_with_affinity = [x for x in self.pods_with_affinity if x.pod.key != key]
                self.pods_with_required_anti_affinity = [x for x in self.pods_with_required_anti_affinity if x.pod.key != key]
                self._update(pi.pod, -1)
                self.generation = next_generation()
                return True
        return False

    def replace_last(self, old: Pod, new: Pod) -> bool:
        """remove_pod(old) then add_pod(new), done as one replacement where that leaves
        everything as those two calls would: `old` is the last pod here (so the lists'
        orders come out the same), `new` shares its requests (the same Resource: the
        sums' subtraction and addition cancel) and its affinity flags, and neither holds
        host ports or volumes (whose maps a removal may empty and re-order). Takes
        two generations as the two calls do. False (nothing changed) otherwise."""
        pods = self.pods
        if (not pods or pods[-1].pod is not old or new.resource is not old.resource
                or new.non_zero_cpu != old.non_zero_cpu or new.non_zero_memory != old.non_zero_memory
                or old.host_ports or new.host_ports or old.volumes or new.volumes):
            return False
        affinity = old.has_pod_affinity
        if new.has_pod_affinity != affinity:
            return False
        # Required anti-affinity is pod affinity too (Pod.has_pod_affinity counts podAntiAffinity).
        anti = affinity and old.has_required_anti_affinity
        if affinity and new.has_required_anti_affinity != anti:
            return False
        if ((affinity and self.pods_with_affinity[-1].pod is not old)
                or (anti and self.pods_with_required_anti_affinity[-1].pod is not old)):
            return False
        pi = PodInfo(new)
        if affinity:
            self.pods_with_affinity = [*self.pods_with_affinity[:-1], pi]
        if anti:
            self.pods_with_required_anti_affinity = [*self.pods_with_required_anti_affinity[:-1], pi]
        pods[-1] = pi
        next_generation()  # remove_pod's
        self.generation = next_generation()
        return True

    def _update(self, pod: Pod, sign: int) -> None:
        # The sums, ports and claim counts are replaced, never changed in place: a clone
        # shares them (see clone).
        self.requested = self.requested.plus(pod.resource, sign)
        self.non_zero_requested = self.non_zero_requested.plus_cpu_memory(sign * pod.non_zero_cpu,
                                                                          sign * pod.non_zero_memory)
        if pod.host_ports:
            ports = self.used_ports.clone()
            for port in pod.host_ports:
                if sign > 0:
                    ports.add(port.host_ip, port.protocol, port.host_port)
                else:
                    ports.remove(port.host_ip, port.protocol, port.host_port)
            self.used_ports = ports
        counts = None
        for v in pod.volumes:
            claim = (v.get("persistentVolumeClaim") or {}).get("claimName") if isinstance(v, dict) else None
            if claim:
                if counts is None:
                    counts = dict(self.pvc_ref_counts)
                k = f"{pod.namespace}/{claim}"
                counts[k] = counts.get(k, 0) + sign
                if counts[k] <= 0:
                    del counts[k]
        if counts is not None:
            self.pvc_ref_counts = counts

    def clone(self) -> "NodeInfo":
        """A copy whose changes (add_pod, remove_pod, replace_last) leave this one as it is.
        Only the pod list is copied: every other field is replaced, never changed in
        place, by those methods (set_node puts a new allocatable, _refresh_images new
        image states), so the copy shares them until one of them replaces its own."""
        c = _new_node_info(NodeInfo)
        c.node = self.node
        c.name = self.name
        c.pods = self.pods.copy()
        c.pods_with_affinity = self.pods_with_affinity
        c.pods_with_required_anti_affinity = self.pods_with_required_anti_affinity
        c.used_ports = self.used_ports
        c.requested = self.requested
        c.non_zero_requested = self.non_zero_requested
        c.allocatable = self.allocatable
        c.image_states = self.image_states
        c.pvc_ref_counts = self.pvc_ref_counts
        c.generation = self.generation
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"
