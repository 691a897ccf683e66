"""Kueue's kinds (kueue.x-k8s.io/v1beta2) as stored objects: each parses and validates
through framework.kueue (errors name the field) and is registered in KINDS, so the
store keeps, serves and watches them like every other kind."""
from __future__ import annotations

import importlib
from typing import Any, Mapping

from framework.api.errors import ValidationError
from framework.api.objects import KINDS, KubeObject

API_VERSION = "kueue.x-k8s.io/v1beta2"


class _KueueObject(KubeObject):
    __slots__ = ("spec",)
    namespaced = False
    parser = ""  # "module:function" in framework.kueue, imported on first use (framework.kueue imports framework.api)

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw)
        version = raw.get("apiVersion")
        if version is not None and version != API_VERSION:
            raise ValidationError("apiVersion", f"must be {API_VERSION}, got {version!r}")
        module, fn = type(self).parser.split(":")
        self.spec = getattr(importlib.import_module(module), fn)(raw)


class ResourceFlavor(_KueueObject):
    __slots__ = ()
    kind = "ResourceFlavor"
    parser = "framework.kueue.api:parse_resource_flavor"


class ClusterQueue(_KueueObject):
    __slots__ = ()
    kind = "ClusterQueue"
    parser = "framework.kueue.api:parse_cluster_queue"


class Cohort(_KueueObject):
    __slots__ = ()
    kind = "Cohort"
    parser = "framework.kueue.api:parse_cohort"


class WorkloadPriorityClass(_KueueObject):
    __slots__ = ()
    kind = "WorkloadPriorityClass"
    parser = "framework.kueue.api:parse_workload_priority_class"


class LocalQueue(_KueueObject):
    __slots__ = ()
    kind = "LocalQueue"
    namespaced = True
    parser = "framework.kueue.api:parse_local_queue"


class Workload(_KueueObject):
    __slots__ = ()
    kind = "Workload"
    namespaced = True
    parser = "framework.kueue.workload:parse_workload"


KUEUE_KINDS: dict[str, type[KubeObject]] = {
    c.kind: c for c in (ResourceFlavor, ClusterQueue, Cohort, LocalQueue, Workload, WorkloadPriorityClass)}
KINDS.update(KUEUE_KINDS)
