"""Kueue's plain-pod and pod-group integration, pure (pkg/controller/jobs/pod/):
defaulting of a new pod that names a LocalQueue, the Workload for a pod or a group,
and what admission and eviction do to the pods."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Iterable

from framework.api.errors import ValidationError
from framework.kueue.api import API_VERSION, ResourceFlavorSpec
from framework.kueue.workload import Admission, WorkloadInfo

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
GATE = "kueue.x-k8s.io/admission"
GROUP_NAME = "kueue.x-k8s.io/pod-group-name"
GROUP_TOTAL = "kueue.x-k8s.io/pod-group-total-count"
ROLE_HASH = "kueue.x-k8s.io/role-hash"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
IS_GROUP = "kueue.x-k8s.io/is-group-workload"
KSCHED_POD_GROUP = "scheduling.x-k8s.io/pod-group"  # ksched's PodGroup label (framework.api.objects)


def _meta(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    return raw.get("metadata") or {}


def queue_name(raw: Mapping[str, Any]) -> str:
    return str((_meta(raw).get("labels") or {}).get(QUEUE_LABEL) or "")


def group_name(raw: Mapping[str, Any]) -> str:
    """GetPodGroupName: the annotation first, the label as fallback; ksched's PodGroup label last."""
    m = _meta(raw)
    ann, labels = m.get("annotations") or {}, m.get("labels") or {}
    return str(ann.get(GROUP_NAME) or labels.get(GROUP_NAME) or labels.get(KSCHED_POD_GROUP) or "")


def shape(spec: Mapping[str, Any]) -> dict[str, Any]:
    """SpecShape: what makes two pods of a group interchangeable."""
    def containers(key: str) -> list[dict[str, Any]]:
        return [{"requests": (c.get("resources") or {}).get("requests"), "ports": c.get("ports")}
                for c in spec.get(key) or []]
    return {"initContainers": containers("initContainers"), "containers": containers("containers"),
            **{k: spec.get(k) for k in ("nodeSelector", "affinity", "tolerations", "runtimeClassName", "priority",
                                        "topologySpreadConstraints", "overhead", "resources")}}


def role_hash(spec: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(shape(spec), sort_keys=True).encode()).hexdigest()[:8]


def with_group_queue(raw: Mapping[str, Any], group_labels: Mapping[str, str] | None) -> Mapping[str, Any]:
    """A pod of a ksched PodGroup that names a LocalQueue (the group's queue-name label)
    is queued with its group: it takes the label when it has none."""
    if queue_name(raw) or not group_labels or not group_labels.get(QUEUE_LABEL):
        return raw
    meta = dict(_meta(raw))
    meta["labels"] = {**(meta.get("labels") or {}), QUEUE_LABEL: group_labels[QUEUE_LABEL]}
    return {**raw, "metadata": meta}


def default_new_pod(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod webhook's defaulting on create: a pod naming a LocalQueue is managed,
    gated and carries its role hash; group metadata must come whole."""
    if not queue_name(raw):
        return raw
    meta = dict(_meta(raw))
    labels, ann = dict(meta.get("labels") or {}), dict(meta.get("annotations") or {})
    name = ann.get(GROUP_NAME) or labels.get(GROUP_NAME)
    total = ann.get(GROUP_TOTAL)
    if bool(name) != bool(total):
        field = f"metadata.annotations[{GROUP_TOTAL}]" if name else f"metadata.labels[{GROUP_NAME}]"
        raise ValidationError(field, "Required value: both the pod group name and total count must be set")
    if total is not None and (not str(total).isdigit() or int(total) < 1):
        raise ValidationError(f"metadata.annotations[{GROUP_TOTAL}]", f"Invalid value: {total!r}: must be an integer >= 1")
    if labels.get(MANAGED_LABEL, "true") != "true":
        raise ValidationError(f"metadata.labels[{MANAGED_LABEL}]", "Invalid value: only \"true\" is allowed")
    spec = dict(raw.get("spec") or {})
    labels[MANAGED_LABEL] = "true"
    ann[ROLE_HASH] = role_hash(spec)
    gates = list(spec.get("schedulingGates") or [])
    if not any(isinstance(g, Mapping) and g.get("name") == GATE for g in gates):
        gates.append({"name": GATE})
    spec["schedulingGates"] = gates
    meta["labels"], meta["annotations"] = labels, ann
    return {**raw, "metadata": meta, "spec": spec}


def kueue_may_default(pod: Mapping[str, Any]) -> bool:
    """Whether `kueue_pod_defaults` could change `pod` (the store leaves it out otherwise): only a pod
    labelled with a LocalQueue or a ksched PodGroup; any other is returned as it is."""
    labels = (pod.get("metadata") or {}).get("labels")
    return bool(labels) and bool(labels.get(QUEUE_LABEL) or labels.get(KSCHED_POD_GROUP))


def kueue_pod_defaults(raw: Mapping[str, Any], pod_groups: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the store does to a new pod for Kueue (after priority admission): the queue of
    its ksched PodGroup (`pod_groups`: stored PodGroups by namespace/name), then Kueue's
    pod webhook defaulting."""
    meta = _meta(raw)
    group = (meta.get("labels") or {}).get(KSCHED_POD_GROUP)
    pg = pod_groups.get(f"{meta.get('namespace') or 'default'}/{group}") if group else None
    return default_new_pod(with_group_queue(raw, pg.labels if pg is not None else None))


def workload_for_pods(name: str, namespace: str, pods: list[Mapping[str, Any]], total: int | None,
                      priority: tuple[int, str], group: bool) -> dict[str, Any]:
    """The Workload (API form) for a pod (one pod set `main`) or a group (one pod set per
    role hash, named by it, sorted by name); `total` caps a group's count."""
    first = pods[0]
    if not group:
        sets = [{"name": "main", "count": 1, "template": {"spec": dict(first.get("spec") or {})}}]
    else:
        by_hash: dict[str, list[Mapping[str, Any]]] = {}
        for p in pods:
            by_hash.setdefault(role_hash(p.get("spec") or {}), []).append(p)
        sets = [{"name": h, "count": len(ps), "template": {"spec": dict(ps[0].get("spec") or {})}}
                for h, ps in sorted(by_hash.items())]
        if len(sets) > 18:
            raise ValidationError("spec.podSets", "a pod group may have at most 18 distinct pod shapes")
    for s in sets:  # the template carries no gates: they are the pods' own
        s["template"]["spec"].pop("schedulingGates", None)
        s["template"]["spec"].pop("nodeName", None)
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if group:
        meta["annotations"] = {IS_GROUP: "true"}
    spec: dict[str, Any] = {"queueName": queue_name(first), "priority": priority[0], "podSets": sets}
    if priority[1]:
        spec["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": priority[1]}
    return {"apiVersion": API_VERSION, "kind": "Workload", "metadata": meta, "spec": spec}


def made_from_pods(workload: Mapping[str, Any] | None) -> bool:
    """Whether a stored Workload is one the pod integration made (a group's, annotated
    is-group-workload, or a single pod's, named pod-<name>-<hash>), which goes when its
    pods do; not one a client wrote."""
    meta = _meta(workload or {})
    return (meta.get("annotations") or {}).get(IS_GROUP) == "true" or str(meta.get("name", "")).startswith("pod-")


def admitted_pod(raw: Mapping[str, Any], wl: WorkloadInfo, admission: Admission,
                 flavors: Mapping[str, ResourceFlavorSpec]) -> dict[str, Any]:
    """Pod.Run: the pod with its pod set's flavors' nodeSelector and tolerations merged
    and the admission gate removed."""
    spec = dict(raw.get("spec") or {})
    ps_name = "main"
    if len(admission.pod_set_assignments) > 1 or (admission.pod_set_assignments and
                                                   admission.pod_set_assignments[0].name != "main"):
        ps_name = str((_meta(raw).get("annotations") or {}).get(ROLE_HASH) or role_hash(spec))
    psa = next((a for a in admission.pod_set_assignments if a.name == ps_name), None)
    selector, tolerations = dict(spec.get("nodeSelector") or {}), list(spec.get("tolerations") or [])
    for fname in sorted(set(psa.flavors.values()) if psa else ()):
        f = flavors.get(fname)
        if f is None:
            continue
        for k, v in f.node_labels.items():
            if selector.get(k, v) != v:
                raise ValidationError("spec.nodeSelector", f"conflict for key {k!r}: the pod has {selector[k]!r}, "
                                                           f"flavor {fname} has {v!r}")
            selector[k] = v
        for t in f.tolerations:
            if dict(t) not in tolerations:
                tolerations.append(dict(t))
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    spec["schedulingGates"] = [g for g in spec.get("schedulingGates") or []
                               if not (isinstance(g, Mapping) and g.get("name") == GATE)]
    if not spec["schedulingGates"]:
        del spec["schedulingGates"]
    return {**raw, "spec": spec}


def regated_pod(raw: Mapping[str, Any], original_spec: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A fresh copy of an evicted pod, gated again, to be created after the old one is deleted."""
    meta = {k: v for k, v in _meta(raw).items() if k in ("name", "namespace", "labels", "annotations", "ownerReferences")}
    spec = dict(original_spec if original_spec is not None else (raw.get("spec") or {}))
    spec.pop("nodeName", None)
    spec["schedulingGates"] = [{"name": GATE}]
    return {"apiVersion": raw.get("apiVersion", "v1"), "kind": "Pod", "metadata": meta, "spec": spec}


def priority_of(pods: Iterable[Mapping[str, Any]], classes: Mapping[str, int] | None = None) -> tuple[int, str]:
    """ExtractPriority for pods: the WorkloadPriorityClass named by the label
    kueue.x-k8s.io/priority-class when it exists, else the first pod's priority (its
    PriorityClass, resolved by the store). (value, WorkloadPriorityClass name or "")."""
    for p in pods:
        wpc = str((_meta(p).get("labels") or {}).get(PRIORITY_CLASS_LABEL) or "")
        if wpc and classes is not None and wpc in classes:
            return classes[wpc], wpc
        return int((p.get("spec") or {}).get("priority") or 0), ""
    return 0, ""
