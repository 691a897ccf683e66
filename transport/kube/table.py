"""Server-side `Table` output (meta.k8s.io/v1), so `kubectl get` shows kube-apiserver's
columns: kubectl 1.32 has no client-side printers and prints only NAME AGE without
it. Columns of priority 0 are always shown, priority 1 with `-o wide`. The cell
texts reuse the CLI's (transport.cli.tables: age, pod status, the gang counts;
transport.cli.kueue_tables: Kueue's pending and admitted counts), so `ksched get`
and `kubectl get` agree.

Kueue's kinds have the columns of their CRDs' additionalPrinterColumns (the
+kubebuilder:printcolumn lines of Kueue's apis/kueue/v1beta2/*_types.go): a CRD
table is NAME then those columns, with no AGE unless one is listed; a CRD without
any (ResourceFlavor, Cohort) gets NAME AGE. Some columns need other objects (a
PodGroup's member pods, a queue's Workloads): `related_kinds` says which, and the
caller passes them as `related`.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from transport.cli.dra_tables import COLUMNS as DRA_COLUMNS, cells as dra_cells
from transport.cli.kueue_tables import counts as queue_counts
from transport.cli.tables import (
    EVENT_COLUMNS, age, event_cells, human_duration, pod_group_counts, pod_group_phase, pod_group_reason,
)

TABLE_ACCEPT = "as=Table"

Row = list[Any]
Columns = list[tuple[str, int]]  # (name, priority)
Related = Mapping[str, Sequence[Mapping[str, Any]]]  # kind -> the objects of it some columns count


def wants_table(accept: str) -> bool:
    """True when the Accept header asks for meta.k8s.io Table (what kubectl get sends first)."""
    return any("as=Table" in part and "g=meta.k8s.io" in part for part in accept.split(","))


def _meta(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    m = raw.get("metadata")
    return m if isinstance(m, Mapping) else {}


def _conds(raw: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    c = (raw.get("status") or {}).get("conditions")
    return [x for x in c if isinstance(x, Mapping)] if isinstance(c, list) else []


def pod_status(raw: Mapping[str, Any]) -> str:
    """The STATUS cell as upstream's printPod words it: the reason or phase (a bound pod
    stays Pending until a kubelet runs it), SchedulingGated, Terminating."""
    status = raw.get("status") or {}
    text = str(status.get("reason") or status.get("phase") or "Pending")
    gated = any(c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in _conds(raw))
    if gated or ((raw.get("spec") or {}).get("schedulingGates") and not (raw.get("spec") or {}).get("nodeName")):
        text = "SchedulingGated"
    if _meta(raw).get("deletionTimestamp"):
        text = "Terminating"
    return text


def _pod_row(raw: Mapping[str, Any], now: float, _: Any) -> Row:
    spec, status = raw.get("spec") or {}, raw.get("status") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for s in statuses if isinstance(s, Mapping) and s.get("ready"))
    restarts = sum(int(s.get("restartCount") or 0) for s in statuses if isinstance(s, Mapping))
    gates = spec.get("readinessGates") or []
    gate_text = "<none>"
    if gates:
        true = {c.get("type") for c in _conds(raw) if c.get("status") == "True"}
        gate_text = f"{sum(1 for g in gates if isinstance(g, Mapping) and g.get('conditionType') in true)}/{len(gates)}"
    return [_meta(raw).get("name", ""), f"{ready}/{len(containers)}", pod_status(raw), restarts, age(raw, now),
            status.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>", gate_text]


def _node_row(raw: Mapping[str, Any], now: float, _: Any) -> Row:
    ready = next((c for c in _conds(raw) if c.get("type") == "Ready"), None)
    state = "Unknown" if ready is None else ("Ready" if ready.get("status") == "True" else "NotReady")
    if (raw.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = _meta(raw).get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k)
    status = raw.get("status") or {}
    info = status.get("nodeInfo") or {}
    addrs = {a.get("type"): a.get("address") for a in status.get("addresses") or [] if isinstance(a, Mapping)}
    return [_meta(raw).get("name", ""), state, ",".join(roles) or "<none>", age(raw, now),
            info.get("kubeletVersion") or "", addrs.get("InternalIP") or "<none>", addrs.get("ExternalIP") or "<none>",
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


def _namespace_row(raw: Mapping[str, Any], now: float, _: Any) -> Row:
    return [_meta(raw).get("name", ""), (raw.get("status") or {}).get("phase") or "Active", age(raw, now)]


def _event_row(raw: Mapping[str, Any], now: float, _: Any) -> Row:
    return event_cells(raw, now)


def _podgroup_row(raw: Mapping[str, Any], now: float, related: Related) -> Row:
    pods = related.get("Pod", ())
    total, bound, done = pod_group_counts(raw, pods)
    return [_meta(raw).get("name", ""), pod_group_phase(raw, pods), int((raw.get("spec") or {}).get("minMember") or 0),
            total, bound, done, age(raw, now), pod_group_reason(raw) or "<none>"]


def _generic_row(raw: Mapping[str, Any], now: float, _: Any) -> Row:
    return [_meta(raw).get("name", ""), age(raw, now)]


QueueCounts = tuple[dict[str, list[int]], dict[tuple[str, str], list[int]]]  # [pending, admitted] per CQ, per LQ


def _queue_counts(related: Related) -> QueueCounts:
    return queue_counts(related.get("Workload", ()), related.get("LocalQueue", ()))


_COUNTED: dict[str, Callable[[Related], Any]] = {"ClusterQueue": _queue_counts, "LocalQueue": _queue_counts}


def _cluster_queue_row(raw: Mapping[str, Any], now: float, counted: QueueCounts) -> Row:
    name, spec = _meta(raw).get("name", ""), raw.get("spec") or {}
    pending, admitted = counted[0].get(name, [0, 0])
    # Kueue's CRD defaults queueingStrategy; ksched stores the object as it was sent
    return [name, spec.get("cohortName") or None, spec.get("queueingStrategy") or "BestEffortFIFO", pending, admitted]


def _local_queue_row(raw: Mapping[str, Any], now: float, counted: QueueCounts) -> Row:
    meta = _meta(raw)
    pending, admitted = counted[1].get((meta.get("namespace", "default"), meta.get("name", "")), [0, 0])
    return [meta.get("name", ""), (raw.get("spec") or {}).get("clusterQueue") or None, pending, admitted]


def _condition_status(raw: Mapping[str, Any], kind: str) -> str | None:
    return next((str(c.get("status")) for c in _conds(raw) if c.get("type") == kind), None)


def _workload_row(raw: Mapping[str, Any], now: float, _: Any) -> Row:
    admission = (raw.get("status") or {}).get("admission") or {}
    return [_meta(raw).get("name", ""), (raw.get("spec") or {}).get("queueName") or None,
            admission.get("clusterQueue") or None, _condition_status(raw, "Admitted"),
            _condition_status(raw, "Finished"), age(raw, now)]


def _priority_class_row(raw: Mapping[str, Any], now: float, _: Any) -> Row:
    return [_meta(raw).get("name", ""), raw.get("value")]


_PRINTERS: dict[str, tuple[Columns, Callable[[Mapping[str, Any], float, Any], Row]]] = {
    "Pod": ([("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0), ("IP", 1), ("Node", 1),
             ("Nominated Node", 1), ("Readiness Gates", 1)], _pod_row),
    "Node": ([("Name", 0), ("Status", 0), ("Roles", 0), ("Age", 0), ("Version", 0), ("Internal-IP", 1),
              ("External-IP", 1), ("OS-Image", 1), ("Kernel-Version", 1), ("Container-Runtime", 1)], _node_row),
    "Namespace": ([("Name", 0), ("Status", 0), ("Age", 0)], _namespace_row),
    "Event": (EVENT_COLUMNS, _event_row),
    "PodGroup": ([("Name", 0), ("Phase", 0), ("Min Member", 0), ("Pods", 0), ("Bound", 0), ("Finished", 0),
                  ("Age", 0), ("Reason", 1)], _podgroup_row),
    "ClusterQueue": ([("Name", 0), ("Cohort", 0), ("Strategy", 1), ("Pending Workloads", 0),
                      ("Admitted Workloads", 1)], _cluster_queue_row),
    "LocalQueue": ([("Name", 0), ("ClusterQueue", 0), ("Pending Workloads", 0), ("Admitted Workloads", 0)],
                   _local_queue_row),
    "Workload": ([("Name", 0), ("Queue", 0), ("Reserved in", 0), ("Admitted", 0), ("Finished", 0), ("Age", 0)],
                 _workload_row),
    "WorkloadPriorityClass": ([("Name", 0), ("Value", 0)], _priority_class_row),
    **{kind: (columns, lambda raw, now, _, kind=kind: dra_cells(kind, raw, now))
       for kind, columns in DRA_COLUMNS.items()},
}
_INTEGER_COLUMNS = frozenset({"Restarts", "Count", "Min Member", "Pending Workloads", "Admitted Workloads", "Value"})
_GENERIC: tuple[Columns, Callable[[Mapping[str, Any], float, Any], Row]] = ([("Name", 0), ("Age", 0)], _generic_row)


def related_kinds(kind: str) -> tuple[tuple[str, ...], bool]:
    """The kinds whose objects `kind`'s columns count, and whether only those in the
    listed objects' namespaces: a PodGroup counts its namespace's pods, a queue every
    Workload and LocalQueue."""
    if kind == "PodGroup":
        return ("Pod",), True
    if kind in _COUNTED:
        return ("Workload", "LocalQueue"), False
    return (), False


def to_table(kind: str, items: Sequence[Mapping[str, Any]], now: float, *, list_meta: Mapping[str, Any],
             include_object: str = "Metadata", related: Related | None = None,
             with_columns: bool = True) -> dict[str, Any]:
    columns, printer = _PRINTERS.get(kind, _GENERIC)
    extra = _COUNTED[kind](related or {}) if kind in _COUNTED else (related or {})  # counted once per table
    rows = []
    for raw in items:
        row: dict[str, Any] = {"cells": printer(raw, now, extra)}
        if include_object == "Object":
            row["object"] = raw
        elif include_object != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": dict(_meta(raw))}
        rows.append(row)
    out: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": dict(list_meta)}
    if with_columns:
        out["columnDefinitions"] = [
            {"name": name, "type": "integer" if name in _INTEGER_COLUMNS else "string",
             "format": "name" if name == "Name" else "", "description": name, "priority": prio}
            for name, prio in columns]
    out["rows"] = rows
    return out
