"""Kinds named by group: the store's key for a kind whose bare name another group
also uses. scheduling.k8s.io's Workload and PodGroup (Kubernetes' own gang API) share
their names with Kueue's Workload (kueue.x-k8s.io) and Coscheduling's PodGroup
(scheduling.x-k8s.io); those keep their bare names as keys, and the scheduling.k8s.io
kinds are keyed `<Kind>.<group>`, as kubectl names a resource (`workloads.scheduling.k8s.io`).
Every edge (decode, REST, CLI, msgpack) resolves a manifest's key from its apiVersion
and kind with `kind_key`. No I/O."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SCHEDULING_GROUP = "scheduling.k8s.io"
WORKLOAD_KEY = f"Workload.{SCHEDULING_GROUP}"
POD_GROUP_KEY = f"PodGroup.{SCHEDULING_GROUP}"
# ksched's preferred topology level of a scheduling.k8s.io PodGroup (a node label key;
# docs/gangs.md "Topology"); validated with the PodGroup (framework/api/schema/workload.py)
PREFERRED_TOPOLOGY_ANNOTATION = "scheduling.ksched.io/preferred-topology-key"
# (group, kind) -> the store's key, for the kinds whose bare name is taken by another group
QUALIFIED: dict[tuple[str, str], str] = {
    (SCHEDULING_GROUP, "Workload"): WORKLOAD_KEY,
    (SCHEDULING_GROUP, "PodGroup"): POD_GROUP_KEY,
}


def group_of(api_version: Any) -> str:
    """`scheduling.k8s.io` of `scheduling.k8s.io/v1alpha2`; "" for the core group or no string."""
    return api_version.rpartition("/")[0] if isinstance(api_version, str) else ""


_QUALIFIED_KINDS = frozenset(kind for _, kind in QUALIFIED)


def kind_key(raw: Any) -> str | None:
    """The store's key of a manifest's kind (its bare kind unless QUALIFIED names it);
    None when it has no string kind. Called several times per object on every write
    path: a plain dict skips the ABC check, and a kind no group shares skips the group."""
    if type(raw) is not dict and not isinstance(raw, Mapping):
        return None
    kind = raw.get("kind")
    if not isinstance(kind, str):
        return None
    if kind not in _QUALIFIED_KINDS:
        return kind
    return QUALIFIED.get((group_of(raw.get("apiVersion")), kind), kind)


def api_kind(key: str) -> str:
    """The kind a manifest writes for a store key: `Workload` of `Workload.scheduling.k8s.io`."""
    return key.partition(".")[0]


__all__ = ["POD_GROUP_KEY", "PREFERRED_TOPOLOGY_ANNOTATION", "QUALIFIED", "SCHEDULING_GROUP", "WORKLOAD_KEY", "api_kind", "group_of", "kind_key"]
