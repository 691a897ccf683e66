"""Kueue's two served versions, kueue.x-k8s.io/v1beta2 (the storage version) and
v1beta1, and the conversion between them (apis/kueue/v1beta1/*_conversion.go and
the generated conversions beside them). An object is stored once, in v1beta2, and
served in the version a client asks for. No I/O.

What differs between the versions for the kinds ksched stores:
- ClusterQueue: v1beta1 `spec.cohort` is v1beta2 `spec.cohortName`; v1beta1's
  `spec.admissionChecks` (names) becomes `spec.admissionChecksStrategy` with one
  rule per name; v1beta1's deprecated flavorFungibility policies `Borrow` and
  `Preempt` are v1beta2's `MayStopSearch`; v1beta1's `status.pendingWorkloadsStatus`
  has no v1beta2 field and is dropped.
- LocalQueue: v1beta1 `status.flavorUsage` is v1beta2 `status.flavorsUsage`;
  v1beta1's `status.flavors` has no v1beta2 field and is dropped.
- Workload: v1beta1 `spec.priorityClassSource` + `spec.priorityClassName` are
  v1beta2 `spec.priorityClassRef` {group, kind, name}; v1beta1's misspelled
  `status.accumulatedPastExexcutionTimeSeconds` is v1beta2's
  `accumulatedPastExecutionTimeSeconds`.
- ResourceFlavor, Cohort, WorkloadPriorityClass: the same fields in both.
Topology-aware assignments (`topologyAssignment`, out of ksched's scope) are not
converted. Every function returns a new object and leaves its argument unchanged.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

GROUP = "kueue.x-k8s.io"
V1BETA1 = f"{GROUP}/v1beta1"
V1BETA2 = f"{GROUP}/v1beta2"
STORAGE_VERSION = V1BETA2
SERVED_VERSIONS = (V1BETA2, V1BETA1)  # the preferred version first, as discovery lists them

# v1beta1's spec.priorityClassSource values and the v1beta2 reference each stands for
_SOURCES = {
    "kueue.x-k8s.io/workloadpriorityclass": ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    "scheduling.k8s.io/priorityclass": ("scheduling.k8s.io", "PriorityClass"),
}
_DEPRECATED_FUNGIBILITY = {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}

Raw = dict[str, Any]


def _section(raw: Mapping[str, Any], key: str) -> Raw | None:
    v = raw.get(key)
    return dict(v) if isinstance(v, dict) else None


def _rename(section: Raw, old: str, new: str) -> None:
    if old in section:
        v = section.pop(old)
        if v not in (None, ""):
            section[new] = v


def _cluster_queue_up(obj: Raw) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        _rename(spec, "cohort", "cohortName")
        checks = spec.pop("admissionChecks", None)
        if isinstance(checks, list) and checks:
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": n} for n in checks]}
        ff = _section(spec, "flavorFungibility")
        if ff is not None:
            for key, old in _DEPRECATED_FUNGIBILITY.items():
                if ff.get(key) == old:
                    ff[key] = "MayStopSearch"
            spec["flavorFungibility"] = ff
        obj["spec"] = spec
    status = _section(obj, "status")
    if status is not None:
        status.pop("pendingWorkloadsStatus", None)
        obj["status"] = status


def _cluster_queue_down(obj: Raw) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        _rename(spec, "cohortName", "cohort")
        obj["spec"] = spec


def _local_queue_up(obj: Raw) -> None:
    status = _section(obj, "status")
    if status is not None:
        _rename(status, "flavorUsage", "flavorsUsage")
        status.pop("flavors", None)
        obj["status"] = status


def _local_queue_down(obj: Raw) -> None:
    status = _section(obj, "status")
    if status is not None:
        _rename(status, "flavorsUsage", "flavorUsage")
        obj["status"] = status


def _workload_up(obj: Raw) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        source = spec.pop("priorityClassSource", None)
        name = spec.pop("priorityClassName", None)
        ref = _SOURCES.get(source) if isinstance(source, str) else None
        if ref is not None:
            spec["priorityClassRef"] = {"group": ref[0], "kind": ref[1], "name": name or ""}
        obj["spec"] = spec
    status = _section(obj, "status")
    if status is not None:
        _rename(status, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")
        obj["status"] = status


def _workload_down(obj: Raw) -> None:
    spec = _section(obj, "spec")
    if spec is not None:
        ref = spec.pop("priorityClassRef", None)
        if isinstance(ref, dict):
            for source, (group, kind) in _SOURCES.items():
                if ref.get("group") == group and ref.get("kind") == kind:
                    spec["priorityClassSource"] = source
                    spec["priorityClassName"] = ref.get("name") or ""
        obj["spec"] = spec
    status = _section(obj, "status")
    if status is not None:
        _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
        obj["status"] = status


_UP: dict[str, Callable[[Raw], None]] = {
    "ClusterQueue": _cluster_queue_up, "LocalQueue": _local_queue_up, "Workload": _workload_up}
_DOWN: dict[str, Callable[[Raw], None]] = {
    "ClusterQueue": _cluster_queue_down, "LocalQueue": _local_queue_down, "Workload": _workload_down}


def is_v1beta1(raw: Any) -> bool:
    return isinstance(raw, dict) and raw.get("apiVersion") == V1BETA1


def to_storage(raw: Raw) -> Raw:
    """A v1beta1 object as v1beta2 (anything else is returned as it is)."""
    if not is_v1beta1(raw):
        return raw
    out = dict(raw)
    out["apiVersion"] = V1BETA2
    up = _UP.get(str(raw.get("kind")))
    if up is not None:
        up(out)
    return out


def to_version(raw: Raw, version: str) -> Raw:
    """A stored (v1beta2) object as `version` asks (v1beta1 or v1beta2)."""
    if version == V1BETA1 and raw.get("apiVersion") != V1BETA1:
        out = dict(raw)
        out["apiVersion"] = V1BETA1
        down = _DOWN.get(str(raw.get("kind")))
        if down is not None:
            down(out)
        return out
    if version == V1BETA2 and is_v1beta1(raw):
        return to_storage(raw)
    return raw
