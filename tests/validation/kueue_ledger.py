"""What a client watching Workloads and Pods sees, checked at every event.

The kill -9 loop of tests/validation/test_kill_kueue.py feeds every watch event of
every daemon it starts into one Ledger. After each event the Ledger checks the state
a client could observe at that moment:
- quota: per ClusterQueue, the cpu of the Workloads holding quota (status.admission
  set, Finished not True) is at most nominal + borrowingLimit (nominal + the rest of
  the cohort without a limit), and the cohort's sum at most the cohort's nominal;
- the same bound over the bound, unfinished pods of each queue (a pod released
  without its Workload's quota would show here);
- binding: a pod's spec.nodeName, once set, never changes for the same uid.
"""
from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from framework.api.quantity import milli_value, parse_quantity
from transport.client.tcp import WatchEvent

from tests.validation.kill_loops import Acks

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


@dataclass(frozen=True)
class QueueLimit:
    """One ClusterQueue of the cohort: its LocalQueue's name, cpu quota in milli-cpu."""
    local_queue: str
    nominal: int
    borrowing_limit: int | None


def milli_cpu(text: str) -> int:
    return milli_value(parse_quantity(text))


def pod_milli_cpu(raw: Mapping[str, Any]) -> int:
    return sum(milli_cpu(str(((c.get("resources") or {}).get("requests") or {}).get("cpu", "0")))
               for c in (raw.get("spec") or {}).get("containers") or [])


def _cond_true(raw: Mapping[str, Any], type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True"
               for c in (raw.get("status") or {}).get("conditions") or [])


def workload_usage(raw: Mapping[str, Any]) -> tuple[str, int] | None:
    """(ClusterQueue, milli-cpu) of a Workload holding quota, else None."""
    admission = (raw.get("status") or {}).get("admission")
    if not admission or _cond_true(raw, "Finished"):
        return None
    cpu = sum(milli_cpu(str((a.get("resourceUsage") or {}).get("cpu", "0")))
              for a in admission.get("podSetAssignments") or [])
    return admission["clusterQueue"], cpu


@dataclass
class Ledger:
    limits: dict[str, QueueLimit]  # ClusterQueue name -> its limit
    lock: threading.Lock = field(default_factory=threading.Lock)
    workloads: dict[str, tuple[str, int] | None] = field(default_factory=dict)  # key -> holding usage
    bound_pods: dict[str, tuple[str, int]] = field(default_factory=dict)  # uid -> (CQ, milli-cpu) bound, unfinished
    node_of: dict[str, str] = field(default_factory=dict)  # pod uid -> the node it was first seen bound to
    violations: list[str] = field(default_factory=list)
    figures: Counter[str] = field(default_factory=Counter)
    admissions: Acks = field(default_factory=Acks)  # Workload keys, as each is seen taking quota
    admitted: set[tuple[str, str | None]] = field(default_factory=set)  # (key, QuotaReserved time) seen

    def __post_init__(self) -> None:
        self.cq_of_queue = {lim.local_queue: cq for cq, lim in self.limits.items()}
        self.cohort_nominal = sum(lim.nominal for lim in self.limits.values())

    def cap(self, cq: str) -> int:
        lim = self.limits[cq]
        if lim.borrowing_limit is None:
            return self.cohort_nominal
        return min(lim.nominal + lim.borrowing_limit, self.cohort_nominal)

    def reset_view(self) -> None:
        """A new watch starts (a restarted daemon): it lists every object again."""
        with self.lock:
            self.workloads.clear()
            self.bound_pods.clear()

    def see(self, ev: WatchEvent) -> None:
        with self.lock:
            kind = ev.object.get("kind")
            if kind == "Workload":
                self._see_workload(ev)
            elif kind == "Pod":
                self._see_pod(ev)
            else:
                return
            self._check(ev.resource_version)

    def _see_workload(self, ev: WatchEvent) -> None:
        m = ev.object["metadata"]
        key = f"{m.get('namespace')}/{m['name']}"
        usage = None if ev.type == "DELETED" else workload_usage(ev.object)
        reserved = next((c.get("lastTransitionTime") for c in (ev.object.get("status") or {}).get("conditions") or []
                         if c.get("type") == "QuotaReserved" and c.get("status") == "True"), None)
        if usage is not None and (key, reserved) not in self.admitted:  # a restarted watch lists it again
            self.admitted.add((key, reserved))
            self.figures["admissions observed"] += 1
            self.admissions.add([key])
        if usage is None and self.workloads.get(key) is not None and _cond_true(ev.object, "Evicted"):
            self.figures["evictions observed"] += 1
        self.workloads[key] = usage

    def _see_pod(self, ev: WatchEvent) -> None:
        raw = ev.object
        uid = raw["metadata"]["uid"]
        node = (raw.get("spec") or {}).get("nodeName") or ""
        if node:
            first = self.node_of.setdefault(uid, node)
            if first != node:
                self.violations.append(f"pod {raw['metadata']['name']} (uid {uid}) moved from {first} to {node}")
        self.bound_pods.pop(uid, None)
        phase = (raw.get("status") or {}).get("phase")
        queue = (raw["metadata"].get("labels") or {}).get(QUEUE_LABEL)
        if ev.type != "DELETED" and node and phase not in ("Succeeded", "Failed") and queue in self.cq_of_queue:
            self.bound_pods[uid] = (self.cq_of_queue[queue], pod_milli_cpu(raw))

    def _check(self, rv: int) -> None:
        self.figures["states checked"] += 1
        for what, holders in (("admitted Workloads", self.workloads.values()), ("bound pods", self.bound_pods.values())):
            per_cq = _sum_by_cq(h for h in holders if h is not None)
            for cq, used in per_cq.items():
                if used > self.cap(cq):
                    self.violations.append(f"at resourceVersion {rv}: {what} of {cq} use {used}m cpu > {self.cap(cq)}m")
            if sum(per_cq.values()) > self.cohort_nominal:
                self.violations.append(f"at resourceVersion {rv}: {what} of the cohort use {sum(per_cq.values())}m "
                                       f"cpu > {self.cohort_nominal}m")


def _sum_by_cq(holders: Iterable[tuple[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for cq, cpu in holders:
        out[cq] = out.get(cq, 0) + cpu
    return out
