"""Kueue's kinds (kueue.x-k8s.io/v1beta2) as stored objects: each parses and validates
through framework.kueue (errors name the field) and is registered in KINDS, so the
store keeps, serves and watches them like every other kind."""
from __future__ import annotations

from typing import Any, Callable, Mapping

from framework.api.errors import ValidationError
from framework.api.objects import KINDS, KubeObject
from framework.kueue import api as kapi
from framework.kueue.workload import parse_workload


class _KueueObject(KubeObject):
    __slots__ = ("spec",)
    namespaced = False
    parse: Callable[[Mapping[str, Any]], Any]

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        version = raw.get("apiVersion")
        if version is not None and version != kapi.API_VERSION:
            raise ValidationError("apiVersion", f"must be {kapi.API_VERSION}, got {version!r}")
        self.spec = type(self).parse(raw)


class ResourceFlavor(_KueueObject):
    __slots__ = ()
    kind = "ResourceFlavor"
    parse = staticmethod(kapi.parse_resource_flavor)


class ClusterQueue(_KueueObject):
    __slots__ = ()
    kind = "ClusterQueue"
    parse = staticmethod(kapi.parse_cluster_queue)


class Cohort(_KueueObject):
    __slots__ = ()
    kind = "Cohort"
    parse = staticmethod(kapi.parse_cohort)


class WorkloadPriorityClass(_KueueObject):
    __slots__ = ()
    kind = "WorkloadPriorityClass"
    parse = staticmethod(kapi.parse_workload_priority_class)


class LocalQueue(_KueueObject):
    __slots__ = ()
    kind = "LocalQueue"
    namespaced = True
    parse = staticmethod(kapi.parse_local_queue)


class Workload(_KueueObject):
    __slots__ = ()
    kind = "Workload"
    namespaced = True
    parse = staticmethod(parse_workload)


KUEUE_KINDS: dict[str, type[KubeObject]] = {
    c.kind: c for c in (ResourceFlavor, ClusterQueue, Cohort, LocalQueue, Workload, WorkloadPriorityClass)}
KINDS.update(KUEUE_KINDS)
