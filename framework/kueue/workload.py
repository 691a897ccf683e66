"""The Workload: pod sets with per-pod requests, its admission and its conditions
(apis/kueue/v1beta2/workload_types.go, pkg/workload/workload.go)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from framework.api.errors import ValidationError
from framework.api.resources import parse_resource_list, pod_requests
from framework.api.timeutil import parse_time
from framework.api.timeutil import format_time
from framework.kueue.amount import FR, add, quantity_text, request_value
from framework.kueue.api import _list, _map, _name

MAX_POD_SETS = 18  # pkg/controller/jobframework/constants.go: MaxPodSets


@dataclass
class PodSet:
    name: str
    count: int
    requests: dict[str, int]  # per pod, canonical units (cpu in millicores)
    min_count: int | None = None
    spec: Mapping[str, Any] = field(default_factory=dict)  # the pod template's spec

    def total(self, count: int | None = None) -> dict[str, int]:
        n = self.count if count is None else count
        return {r: v * n if v * n < 2**63 else 2**63 - 1 for r, v in self.requests.items()}


@dataclass
class PodSetAssignment:
    name: str
    flavors: dict[str, str]
    resource_usage: dict[str, int]  # totals for the pod set
    count: int


@dataclass
class Admission:
    cluster_queue: str
    pod_set_assignments: list[PodSetAssignment]

    def usage(self) -> dict[FR, int]:
        out: dict[FR, int] = {}
        for psa in self.pod_set_assignments:
            for res, flavor in psa.flavors.items():
                fr = (flavor, res)
                out[fr] = add(out.get(fr, 0), psa.resource_usage.get(res, 0))
        return out


@dataclass
class Condition:
    type: str
    status: str
    reason: str
    message: str
    time: int = 0  # ns

    def to_dict(self) -> dict[str, str]:
        return {"type": self.type, "status": self.status, "reason": self.reason, "message": self.message}


@dataclass
class WorkloadInfo:
    namespace: str
    name: str
    queue_name: str = ""
    priority: int = 0
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    creation: int = 0  # ns
    pod_sets: list[PodSet] = field(default_factory=list)
    active: bool = True
    admission: Admission | None = None
    conditions: dict[str, Condition] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def cond_true(self, t: str) -> bool:
        c = self.conditions.get(t)
        return c is not None and c.status == "True"

    @property
    def evicted(self) -> bool:
        return self.cond_true("Evicted")

    @property
    def holds_quota(self) -> bool:
        """Counted in the quota cache: admitted and not finished."""
        return self.admission is not None and not self.cond_true("Finished")

    @property
    def has_quota(self) -> bool:
        return self.admission is not None and self.cond_true("QuotaReserved")

    def quota_reserved_time(self, now: int) -> int:
        c = self.conditions.get("QuotaReserved")
        return c.time if c is not None and c.status == "True" else now

    def queue_order_time(self) -> int:
        """Ordering.GetQueueOrderTimestamp: creation, or the eviction time after a
        PodsReady timeout (requeuingStrategy.timestamp=Eviction) or admission check."""
        c = self.conditions.get("Evicted")
        if c is not None and c.status == "True" and c.reason in ("PodsReadyTimeout", "AdmissionCheck"):
            return c.time
        return self.creation

    def usage(self) -> dict[FR, int]:
        return self.admission.usage() if self.admission is not None else {}

    def set_condition(self, c: Condition) -> None:
        old = self.conditions.get(c.type)
        if old is not None and old.status == c.status:
            c.time = old.time if c.time == 0 else c.time
        self.conditions[c.type] = c


def _pod_requests(spec: Mapping[str, Any], f: str) -> dict[str, int]:
    containers = [parse_resource_list(_map(_map(c, f"{f}.containers[{i}]").get("resources"), "").get("requests"),
                                      f"{f}.containers[{i}].resources.requests")
                  for i, c in enumerate(_list(spec.get("containers"), f"{f}.containers"))]
    inits = [(parse_resource_list(_map(_map(c, "").get("resources"), "").get("requests"),
                                  f"{f}.initContainers[{i}].resources.requests"), _map(c, "").get("restartPolicy") == "Always")
             for i, c in enumerate(_list(spec.get("initContainers"), f"{f}.initContainers"))]
    overhead = parse_resource_list(spec.get("overhead"), f"{f}.overhead")
    total = pod_requests(containers or [{}], inits, overhead)
    return {r: request_value(r, q) for r, q in total.items()}


def parse_workload(obj: Mapping[str, Any], strict: bool = True) -> WorkloadInfo:
    """A Workload from its API form, defaults applied (pod set name `main`, count 1)."""
    meta = _map(obj.get("metadata"), "metadata")
    name = _name(meta.get("name"), "metadata.name", strict)
    ns = meta.get("namespace")
    ns = "default" if ns is None else ns
    spec = _map(obj.get("spec"), "spec")
    raw_sets = _list(spec.get("podSets"), "spec.podSets")
    if strict and not 1 <= len(raw_sets) <= MAX_POD_SETS:
        raise ValidationError("spec.podSets", f"must have 1 to {MAX_POD_SETS} items")
    pod_sets: list[PodSet] = []
    names: set[str] = set()
    with_min = 0
    for i, ps in enumerate(raw_sets):
        f = f"spec.podSets[{i}]"
        ps = _map(ps, f)
        psname = ps.get("name") or "main"
        if psname in names:
            raise ValidationError(f"{f}.name", f"Duplicate value: {psname!r}")
        names.add(psname)
        count = ps.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValidationError(f"{f}.count", "must be an integer greater than or equal to 0")
        mc = ps.get("minCount")
        if mc is not None:
            with_min += 1
            if isinstance(mc, bool) or not isinstance(mc, int) or not 0 < mc <= count:
                raise ValidationError(f"{f}.minCount", "must be greater than 0 and at most count")
        tspec = _map(_map(ps.get("template"), f"{f}.template").get("spec"), f"{f}.template.spec")
        pod_sets.append(PodSet(psname, count, _pod_requests(tspec, f"{f}.template.spec"), mc, tspec))
    if strict and with_min > 1:
        raise ValidationError("spec.podSets", "minCount may be set on at most one pod set")
    prio = spec.get("priority")
    if prio is not None and (isinstance(prio, bool) or not isinstance(prio, int)):
        raise ValidationError("spec.priority", "must be an int32")
    queue = spec.get("queueName") or ""
    if not isinstance(queue, str):
        raise ValidationError("spec.queueName", "must be a string")
    labels = dict(_map(meta.get("labels"), "metadata.labels"))
    created = meta.get("creationTimestamp")
    wl = WorkloadInfo(ns, name, queue, prio or 0, str(meta.get("uid") or ""), labels,
                  0 if created is None else parse_time(created, "metadata.creationTimestamp"), pod_sets,
                  spec.get("active", True) is not False)
    status = _map(obj.get("status"), "status")
    for i, c in enumerate(_list(status.get("conditions"), "status.conditions")):
        c = _map(c, f"status.conditions[{i}]")
        t = c.get("lastTransitionTime")
        wl.conditions[str(c.get("type"))] = Condition(str(c.get("type")), str(c.get("status")), str(c.get("reason") or ""),
                                                      str(c.get("message") or ""), 0 if t is None else parse_time(t, f"status.conditions[{i}].lastTransitionTime"))
    adm = status.get("admission")
    if adm is not None:
        adm = _map(adm, "status.admission")
        psas = []
        for i, a in enumerate(_list(adm.get("podSetAssignments"), "status.admission.podSetAssignments")):
            f = f"status.admission.podSetAssignments[{i}]"
            a = _map(a, f)
            usage = {r: request_value(r, q) for r, q in parse_resource_list(a.get("resourceUsage"), f"{f}.resourceUsage").items()}
            ps = next((p for p in pod_sets if p.name == a.get("name")), None)
            count = a.get("count")
            psas.append(PodSetAssignment(str(a.get("name")), dict(_map(a.get("flavors"), f"{f}.flavors")), usage,
                                         count if isinstance(count, int) else (ps.count if ps else 1)))
        wl.admission = Admission(_name(adm.get("clusterQueue"), "status.admission.clusterQueue", False), psas)
    return wl


def status_of(wl: WorkloadInfo) -> dict[str, Any]:
    """The Workload's status in its API form (what the admission actor stores)."""
    out: dict[str, Any] = {"conditions": [dict(c.to_dict(), lastTransitionTime=format_time(c.time))
                                          for c in wl.conditions.values()]}
    if wl.admission is not None:
        out["admission"] = {"clusterQueue": wl.admission.cluster_queue, "podSetAssignments": [
            {"name": a.name, "flavors": dict(a.flavors), "count": a.count,
             "resourceUsage": {r: quantity_text(r, v) for r, v in a.resource_usage.items()}}
            for a in wl.admission.pod_set_assignments]}
    return out
