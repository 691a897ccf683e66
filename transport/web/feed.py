"""What the page is fed, computed on the server with the scheduler's own parsing so
the page shows the numbers `ksched get nodes` shows. Pure functions and one small
ring of samples; no I/O."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Mapping

from framework.api.errors import ValidationError
from framework.api.objects import POD_GROUP_LABEL, Node, Pod
from transport.web.columns import frame_columns, row_of, taint_strings, unflatten
from transport.web.devices_feed import VIEWS as DEVICE_VIEWS
from transport.web.queues_feed import VIEWS as QUEUE_VIEWS


def pod_view(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A pod's requests as NodeResourcesFit counts them (containers, init
    containers, overhead): {"cpu": milli-CPU, "memory": bytes}; {"invalid": why}
    for a pod the scheduler cannot parse."""
    try:
        return _pod_fields(Pod(raw))
    except ValidationError as err:
        return {"invalid": str(err)}


def _pod_fields(pod: Pod) -> dict[str, Any]:
    return {"cpu": pod.resource.milli_cpu, "memory": pod.resource.memory, "terminal": pod.is_terminal}


def node_view(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A node's allocatable (milli-CPU, bytes, pods), taints as `key=value:Effect`
    and whether it is cordoned."""
    try:
        return _node_fields(Node(raw))
    except ValidationError as err:
        return {"invalid": str(err)}


def _node_fields(node: Node) -> dict[str, Any]:
    alloc = node.allocatable
    return {
        "cpu": alloc.milli_cpu,
        "memory": alloc.memory,
        "pods": alloc.allowed_pod_number,
        "taints": taint_strings(node),
        "unschedulable": node.unschedulable,
    }


def view_of_object(kind: str, obj: Any) -> dict[str, Any] | None:
    """view_of for an object the store already parsed (no second parse)."""
    if isinstance(obj, Pod):
        return _pod_fields(obj)
    if isinstance(obj, Node):
        return _node_fields(obj)
    return view_of(kind, obj.raw)  # PodGroups and Kueue's kinds: their views read the manifest


_META = ("name", "namespace", "labels", "creationTimestamp", "deletionTimestamp")


def _some(raw: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    if type(raw) is not dict:  # noqa: E721 - stored manifests are dicts; anything else is not shown
        return {}
    return {k: raw[k] for k in keys if k in raw}


def page_object(kind: str, obj: Any) -> dict[str, Any]:
    """The fields of a stored object (parsed) the page shows; the rest (containers,
    images, managed fields) stays on the server. Pods and nodes as their columns
    (columns.py); what the page needs beyond these comes in `view`."""
    return page_item(kind, obj)["object"]


def page_item(kind: str, obj: Any) -> dict[str, Any]:
    """{"object": page_object, "view": the view}: one row of columns.py read back, so
    an event says of an object exactly what the first snapshot said."""
    return unflatten(frame_columns(kind), row_of(kind, obj, whole_row))


def whole_row(kind: str, obj: Any) -> list[Any]:
    """The row of a kind without columns: PodGroups, Kueue's queues and workloads
    (the page reads their spec and status), DRA's slices and claims (metadata and
    their view: devices_feed.py)."""
    raw = obj.raw
    if kind in DEVICE_VIEWS:  # the view says all the page shows of them
        return [{"metadata": _some(raw.get("metadata"), _META)}, DEVICE_VIEWS[kind](raw)]
    return [{"metadata": _some(raw.get("metadata"), _META), "spec": raw.get("spec") or {},
             "status": raw.get("status") or {}}, view_of_object(kind, obj)]


def view_of(kind: str, raw: Mapping[str, Any]) -> dict[str, Any] | None:
    if kind == "Pod":
        return pod_view(raw)
    if kind == "Node":
        return node_view(raw)
    if kind in QUEUE_VIEWS:
        return QUEUE_VIEWS[kind](raw)
    if kind in DEVICE_VIEWS:
        return DEVICE_VIEWS[kind](raw)
    return None


@dataclass(frozen=True, slots=True)
class Waiter:
    """One pod held at Permit: its key, its gang ("namespace/name", "" if none),
    its node and the wall time its earliest Permit deadline falls."""

    pod: str
    group: str
    node: str
    deadline: float

    def to_json(self) -> dict[str, Any]:
        return {"pod": self.pod, "group": self.group, "node": self.node, "deadline": self.deadline}


def waiters(waiting_pods: Iterable[Any], clock_now: float, wall_now: float) -> list[Waiter]:
    """The waiting room's snapshots (actors.waiting_room.WaitingSnapshot) as the page shows it.
    Deadlines are on the scheduler's clock; they are moved to wall time so the
    browser can count down on its own."""
    out = []
    for wp in waiting_pods:
        label = wp.pod.labels.get(POD_GROUP_LABEL)
        group = f"{wp.pod.namespace}/{label}" if label else ""
        out.append(Waiter(wp.pod.key, group, wp.node_name, wall_now + wp.deadline - clock_now))
    return sorted(out, key=lambda w: w.pod)


@dataclass(frozen=True, slots=True)
class Sample:
    """One throughput sample: wall time, pods bound so far (scheduler_schedule_attempts_total
    with result="scheduled", every profile) and pods pending (scheduler_pending_pods, every queue)."""

    t: float
    scheduled: float
    pending: float

    def to_json(self) -> dict[str, float]:
        return {"t": self.t, "scheduled": self.scheduled, "pending": self.pending}


def sample_metrics(registry: Any, now: float) -> Sample:
    """Read the two series from a prometheus_client registry."""
    scheduled = pending = 0.0
    for family in registry.collect():
        for s in family.samples:
            if s.name == "scheduler_schedule_attempts_total" and s.labels.get("result") == "scheduled":
                scheduled += s.value
            elif s.name == "scheduler_pending_pods":
                pending += s.value
    return Sample(now, scheduled, pending)


class SampleRing:
    """The last `keep` samples, oldest first."""

    def __init__(self, keep: int) -> None:
        self._samples: deque[Sample] = deque(maxlen=keep)

    def add(self, sample: Sample) -> None:
        self._samples.append(sample)

    def to_json(self) -> list[dict[str, float]]:
        return [s.to_json() for s in self._samples]


WaitingSource = Callable[[], Awaitable[list[Waiter]]]
