"""Kubernetes objects as the scheduler reads them (upstream JSON field names)."""
from framework.api.errors import ValidationError
from framework.api.quantity import parse_quantity
from framework.api.objects import (
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    parse_object,
    KINDS,
)

__all__ = [
    "ValidationError",
    "parse_quantity",
    "Node",
    "Pod",
    "PodGroup",
    "PriorityClass",
    "parse_object",
    "KINDS",
]

# Kueue's kinds register themselves in KINDS (framework.api.kueue_kinds).
from framework.api import kueue_kinds  # noqa: E402,F401
# core/v1 Event registers itself in KINDS (framework.api.event).
from framework.api import event  # noqa: E402,F401
# DRA's kinds (resource.k8s.io/v1) register themselves in KINDS (framework.api.dra_kinds).
from framework.api import dra_kinds  # noqa: E402,F401
# scheduling.k8s.io/v1alpha2 Workload and PodGroup register themselves, keyed by group (framework.api.workload_api).
from framework.api import workload_api  # noqa: E402,F401
