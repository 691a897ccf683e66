"""What the feature gates change at the store's door, as kube-apiserver's
registry does: a kind of a gate that is off is not served (404), and a Pod's
spec.schedulingGroup is dropped while GenericWorkload is off unless the stored pod
already uses it (the pod strategy's dropDisabledFields); a PodGroup or Workload
template's schedulingConstraints is Forbidden while TopologyAwareWorkloadScheduling
is off, and its disruptionMode, priorityClassName and priority while
WorkloadAwarePreemption is off (their +k8s:ifDisabled=+k8s:forbidden tags)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from actors.store.messages import Invalid, NotFound
from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY
from framework.api.validation import forbidden
from framework.api.workload_api import (
    DISRUPTION_FIELDS, GENERIC_WORKLOAD, TOPOLOGY_AWARE, WORKLOAD_AWARE_PREEMPTION,
    gate_of, not_served_message,
)
from framework.features import FeatureGates


def gated(key: str | None, raw: Any, current: Mapping[str, Any] | None, features: FeatureGates) -> Any:
    """`raw`, of kind key `key` (the write chain's kind_key), as the gates let it in (a
    copy when a field is dropped); NotFound for a kind that is not served, Invalid for
    a forbidden field."""
    if key is None:
        return raw
    gate = gate_of(key)
    if gate is not None and not features.enabled(gate):
        raise NotFound(not_served_message(key))
    if key == "Pod" and not features.enabled(GENERIC_WORKLOAD):
        return _without_scheduling_group(raw, current)
    if key in (WORKLOAD_KEY, POD_GROUP_KEY):
        if not features.enabled(TOPOLOGY_AWARE):
            _refuse_new(key, raw, current, ("schedulingConstraints",), TOPOLOGY_AWARE)
        if not features.enabled(WORKLOAD_AWARE_PREEMPTION):
            _refuse_new(key, raw, current, DISRUPTION_FIELDS, WORKLOAD_AWARE_PREEMPTION)
    return raw


def _without_scheduling_group(raw: Mapping[str, Any], current: Mapping[str, Any] | None) -> Any:
    spec = raw.get("spec")
    if not isinstance(spec, Mapping) or "schedulingGroup" not in spec:
        return raw
    have = (current or {}).get("spec") or {}
    if isinstance(have, Mapping) and have.get("schedulingGroup") is not None:
        return raw  # in use before the gate went off: kept
    return {**raw, "spec": {k: v for k, v in spec.items() if k != "schedulingGroup"}}


def _refuse_new(key: str, raw: Mapping[str, Any], current: Mapping[str, Any] | None, fields: tuple[str, ...],
                gate: str) -> None:
    """Forbidden: one of `fields` set on the PodGroup (or a Workload's template) that the
    stored object did not already have."""
    spec = raw.get("spec") if isinstance(raw.get("spec"), Mapping) else {}
    have = (current or {}).get("spec") or {}
    places = [("spec", spec, have)] if key == POD_GROUP_KEY else [
        (f"spec.podGroupTemplates[{i}]", t, None) for i, t in enumerate(spec.get("podGroupTemplates") or [])
        if isinstance(t, Mapping)]
    for path, obj, old in places:
        for field in fields:
            if obj.get(field) not in (None, "") and (old is None or old.get(field) in (None, "")):
                err = forbidden(f"{path}.{field}", f"the {gate} feature gate is off")
                raise Invalid(str(err), err.field)
