"""The page's objects as rows of columns: the fields of a pod or a node the page
shows, one list per object, so the first picture of a large cluster is one array
of rows per kind rather than 55,000 objects with their keys repeated.

A column is a dotted path ("object.metadata.name", "view.cpu"). A row holds one
value per column, None where the object has none, and may stop early (the
columns after its end are None). `unflatten` (and the page's
app.js, the same way) turns a row back into {"object": ..., "view": ...}: every
container a column names is made, then each value that is not None is set, so a
pod always has metadata, spec and status, even when they are empty. Rows are read
from the store's parsed objects (attributes, not the manifest's dicts). Kinds
without columns (PodGroups of both groups, Kueue's kinds: few, and the page reads their spec and
status) are one row of two columns, "object" and "view". Pure functions; no I/O."""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Sequence

from framework.api.objects import DEFAULT_NAMESPACE, POD_GROUP_LABEL, Node, Pod

# Columns most rows have come first: a row ends at its last value (None after it is
# left off), so a bound pod is [name, node, cpu, memory].
POD_COLUMNS = ("object.metadata.name", "object.spec.nodeName", "view.cpu", "view.memory", "view.terminal",
               "object.metadata.namespace", "object.metadata.labels", "object.spec.priority",
               "object.metadata.deletionTimestamp", "object.spec.schedulingGates", "object.metadata.creationTimestamp",
               "object.status.nominatedNodeName", "object.status.conditions", "object.spec.schedulingGroup")
NODE_COLUMNS = ("object.metadata.name", "view.cpu", "view.memory", "view.pods", "view.taints", "object.metadata.labels",
                "view.unschedulable", "object.metadata.deletionTimestamp")
WHOLE_COLUMNS = ("object", "view")


def _trimmed(row: list[Any]) -> list[Any]:
    while row and row[-1] is None:
        row.pop()
    return row


def pod_row(pod: Pod) -> list[Any]:
    """POD_COLUMNS of a stored pod. Of its labels only the gang's (the page shows no
    other). What the pending table shows (creation time, nomination, the
    PodScheduled condition: why it is pending) only while it is unbound: a binding
    is never undone, and each change sends the pod again. Times as the manifest
    writes them; requests as NodeResourcesFit counts them. False and the namespace
    "default" are left out: the page reads a missing value as false or "default"."""
    raw_meta = pod.raw["metadata"]
    group = pod.labels.get(POD_GROUP_LABEL)
    node = pod.node_name
    r = pod.resource
    if node and group is None and pod.namespace == DEFAULT_NAMESPACE and not pod.priority \
            and pod.meta.deletion_timestamp is None and not pod.scheduling_gates \
            and "schedulingGroup" not in pod.spec:  # most pods: no list to trim
        row = [pod.name, node, r.milli_cpu, r.memory]
        if pod.is_terminal:
            row.append(True)
        return row
    created = nominated = conditions = None
    if not node:
        created, nominated = raw_meta.get("creationTimestamp"), pod.nominated_node_name or None
        if pod.conditions:
            conditions = [c for c in pod.conditions
                          if type(c) is dict and c.get("type") == "PodScheduled"] or None  # noqa: E721
    return _trimmed([pod.name, node or None, r.milli_cpu, r.memory, pod.is_terminal or None,
                     pod.namespace if pod.namespace != DEFAULT_NAMESPACE else None,
                     {POD_GROUP_LABEL: group} if group is not None else None, pod.priority or None,
                     raw_meta.get("deletionTimestamp") if pod.meta.deletion_timestamp is not None else None,
                     pod.spec.get("schedulingGates") if pod.scheduling_gates else None, created, nominated, conditions,
                     pod.spec.get("schedulingGroup")])


def node_row(node: Node) -> list[Any]:
    """NODE_COLUMNS of a stored node: allocatable as the scheduler parsed it (milli-CPU,
    bytes, pods), taints as `key=value:Effect`, labels, and whether it is cordoned."""
    alloc = node.allocatable
    deleting = node.raw["metadata"].get("deletionTimestamp") if node.meta.deletion_timestamp is not None else None
    return _trimmed([node.name, alloc.milli_cpu, alloc.memory, alloc.allowed_pod_number, taint_strings(node),
                     node.labels or None, node.unschedulable or None, deleting])


def taint_strings(node: Node) -> list[str]:
    return [f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}" for t in node.taints]


def frame_columns(kind: str) -> tuple[str, ...]:
    return POD_COLUMNS if kind == "Pod" else NODE_COLUMNS if kind == "Node" else WHOLE_COLUMNS


WholeRow = Callable[[str, Any], list[Any]]


def row_of(kind: str, obj: Any, whole: WholeRow) -> list[Any]:
    """One stored object (a parsed KubeObject: the store keeps a Pod as a Pod) as a
    row of frame_columns(kind); `whole` makes the row of a kind without columns
    ([object, view])."""
    if kind == "Pod":
        return pod_row(obj)
    if kind == "Node":
        return node_row(obj)
    return whole(kind, obj)


@lru_cache(maxsize=16)
def _paths(columns: tuple[str, ...]) -> tuple[tuple[tuple[str, ...], str], ...]:
    return tuple((tuple(c.split(".")[:-1]), c.rsplit(".", 1)[-1]) for c in columns)


def unflatten(columns: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    """A row back as nested dicts (what app.js does with a snapshot frame)."""
    out: dict[str, Any] = {}
    for i, (parents, leaf) in enumerate(_paths(tuple(columns))):
        value = row[i] if i < len(row) else None
        at = out
        for p in parents:
            at = at.setdefault(p, {})
        if value is not None:
            at[leaf] = value
    return out

