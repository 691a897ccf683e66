"""The admission state one owner keeps (the admission actor; tests): Kueue objects,
Workloads, the per-ClusterQueue queues and the quota cache, and the cycle applied to
them (Kueue's queue Manager + scheduler cache + scheduler, without the API server).
Pure: callers persist what `schedule` reports before acting on it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from framework.kueue import queues as rq
from framework.kueue.api import ClusterQueueSpec, CohortSpec, LocalQueueSpec, ResourceFlavorSpec
from framework.kueue.conditions import (release_after_eviction, set_evicted, set_preempted, set_quota_reservation,
                                        unset_quota_reservation)
from framework.kueue.cycle import Config, CycleResult, AdmissionCycle
from framework.kueue.snapshot import QuotaSnapshot
from framework.kueue.workload import Condition, WorkloadInfo


@dataclass
class Report:
    """What one cycle changed: persist `changed` (admissions first), then act."""
    admitted: list[WorkloadInfo] = field(default_factory=list)
    evicted: list[WorkloadInfo] = field(default_factory=list)
    changed: list[WorkloadInfo] = field(default_factory=list)
    preempted_by: dict[str, tuple[str, str]] = field(default_factory=dict)  # victim key -> (preemptor's CQ, reason)
    heads: int = 0


class AdmissionState:
    def __init__(self, config: Config = Config()) -> None:
        self.config = config
        self.flavors: dict[str, ResourceFlavorSpec] = {}
        self.cluster_queues: dict[str, ClusterQueueSpec] = {}
        self.cohorts: dict[str, CohortSpec] = {}
        self.local_queues: dict[tuple[str, str], LocalQueueSpec] = {}
        self.namespaces: dict[str, dict[str, str]] = {}
        self.workloads: dict[str, WorkloadInfo] = {}
        self.queues: dict[str, rq.ClusterQueueQueue] = {}
        self.cache = QuotaSnapshot()
        self.admitted_total: dict[str, int] = {}
        self.parked: set[str] = set()

    # --- objects ---
    def set_objects(self, flavors: Iterable[ResourceFlavorSpec] = (), cluster_queues: Iterable[ClusterQueueSpec] = (),
                    cohorts: Iterable[CohortSpec] = (), local_queues: Iterable[LocalQueueSpec] = ()) -> None:
        """Replace the queue objects and rebuild the cache from the workloads holding quota."""
        self.flavors = {f.name: f for f in flavors}
        self.cluster_queues = {c.name: c for c in cluster_queues}
        self.cohorts = {c.name: c for c in cohorts}
        self.local_queues = {(q.namespace, q.name): q for q in local_queues}
        self._rebuild()

    def _rebuild(self) -> None:
        holding = [w for w in self.workloads.values() if w.holds_quota]
        self.cache = QuotaSnapshot.build(self.cluster_queues.values(), self.cohorts.values(), self.flavors.values(), holding)
        old = self.queues
        self.queues = {n: rq.ClusterQueueQueue(n, s.queueing_strategy) for n, s in self.cluster_queues.items()}
        for n, q in old.items():
            if n in self.queues:
                self.queues[n].sticky = q.sticky
        for w in self.workloads.values():
            self._enqueue(w)

    def cluster_queue_of(self, wl: WorkloadInfo) -> str | None:
        lq = self.local_queues.get((wl.namespace, wl.queue_name))
        return lq.cluster_queue if lq is not None else None

    def _enqueue(self, wl: WorkloadInfo) -> None:
        if wl.admission is not None or not wl.active or wl.cond_true("Finished") or wl.key in self.parked:
            return
        cq = self.cluster_queue_of(wl)
        if cq in self.queues:
            self.queues[cq].push(wl)

    # --- workloads ---
    def add_workload(self, wl: WorkloadInfo) -> None:
        """A new or changed Workload (one that holds quota is charged to the cache)."""
        old = self.workloads.get(wl.key)
        if old is not None:
            self.delete_workload(old.key)
        self.workloads[wl.key] = wl
        if wl.holds_quota and wl.admission.cluster_queue in self.cache.cluster_queues:
            self.cache.add_workload(wl)
        self._enqueue(wl)

    def delete_workload(self, key: str) -> WorkloadInfo | None:
        wl = self.workloads.pop(key, None)
        if wl is None:
            return None
        for q in self.queues.values():
            q.delete(key)
        if wl.admission is not None and wl.key in self.cache.cluster_queues.get(wl.admission.cluster_queue, _NO_CQ).workloads:
            self.cache.remove_workload(wl)
            self._requeue_inadmissible(wl.admission.cluster_queue)
        return wl

    def finish(self, key: str, now: int) -> WorkloadInfo | None:
        """The workload's pods completed: its quota is free, it never queues again."""
        wl = self.delete_workload(key)
        if wl is not None:
            wl.conditions["Finished"] = Condition("Finished", "True", "Succeeded", "Job finished successfully", now)
            self.workloads[key] = wl
        return wl

    def evict(self, key: str, reason: str, message: str, now: int) -> WorkloadInfo | None:
        """Mark an admitted workload Evicted (it keeps its quota until `release`)."""
        wl = self.workloads.get(key)
        if wl is None or wl.admission is None:
            return None
        set_evicted(wl, reason, message, now)
        return wl

    def release(self, key: str, now: int) -> WorkloadInfo | None:
        """An evicted workload's pods are gone: free its quota and queue it again."""
        wl = self.workloads.get(key)
        if wl is None or wl.admission is None:
            return None
        cq = wl.admission.cluster_queue
        if wl.key in self.cache.cluster_queues.get(cq, _NO_CQ).workloads:
            self.cache.remove_workload(wl)
        release_after_eviction(wl, now)
        self._enqueue(wl)
        self._requeue_inadmissible(cq)
        return wl

    def park(self, key: str) -> None:
        """Keep a pending workload out of its queue (requeue backoff) until `unpark`."""
        self.parked.add(key)
        for q in self.queues.values():
            q.delete(key)

    def unpark(self, key: str) -> None:
        self.parked.discard(key)
        wl = self.workloads.get(key)
        if wl is not None:
            self._enqueue(wl)

    def _requeue_inadmissible(self, cq_name: str) -> None:
        cq = self.cache.cluster_queues.get(cq_name)
        if cq is None:
            return
        names = [c.name for c in cq.root().subtree_cqs()] if cq.parent is not None else [cq_name]  # type: ignore[attr-defined]
        for n in names:
            if n in self.queues:
                self.queues[n].requeue_inadmissible()

    # --- the cycle ---
    def schedule(self, now: int) -> Report:
        heads = []
        for name, q in self.queues.items():
            cq = self.cache.cluster_queues.get(name)
            if cq is not None and cq.active:
                wl = q.pop()
                if wl is not None:
                    heads.append((wl, name))
        report = Report(heads=len(heads))
        if not heads:
            return report
        result: CycleResult = AdmissionCycle(self.config, now).run(self.cache.clone(), heads, self.namespaces)
        for ev in result.evictions:
            set_evicted(ev.victim, "Preempted", ev.message, now)
            set_preempted(ev.victim, ev.reason, ev.message, now)
            report.evicted.append(ev.victim)
            report.preempted_by[ev.victim.key] = (ev.preemptor_cq, ev.reason)
            report.changed.append(ev.victim)
        for d in result.decisions:
            if d.admission is not None:
                set_quota_reservation(d.workload, d.admission, now)
                self.cache.add_workload(d.workload)
                self.admitted_total[d.cluster_queue] = self.admitted_total.get(d.cluster_queue, 0) + 1
                report.admitted.append(d.workload)
                report.changed.append(d.workload)
                continue
            if d.cluster_queue in self.queues:
                self.queues[d.cluster_queue].requeue(d.workload, d.requeue_reason)
            if d.status in ("", "skipped"):
                unset_quota_reservation(d.workload, d.reason or "Pending", d.message, now)
                report.changed.append(d.workload)
        return report

    # --- reading ---
    def pending(self, cq: str) -> int:
        """Pending in `cq`: its active heap, its inadmissible list and the workloads
        waiting out a requeue backoff (parked), which Kueue's queue keeps inadmissible."""
        q = self.queues.get(cq)
        return q.pending() + self._parked_in(cq) if q is not None else 0

    def pending_inadmissible(self, cq: str) -> int:
        """Pending in `cq` but not in its active heap (Kueue's `inadmissible` status)."""
        q = self.queues.get(cq)
        return len(q.inadmissible) + self._parked_in(cq) if q is not None else 0

    def _parked_in(self, cq: str) -> int:
        return sum(1 for key in self.parked if (w := self.workloads.get(key)) is not None
                   and w.admission is None and self.cluster_queue_of(w) == cq)

    def active_pending(self) -> int:
        """Workloads in the ClusterQueues' active heaps (not parked as inadmissible):
        a cycle that parks one makes progress, the next head gets its turn."""
        return sum(q.pending() - len(q.inadmissible) for q in self.queues.values())

    def holding(self, cq: str) -> list[WorkloadInfo]:
        c = self.cache.cluster_queues.get(cq)
        return list(c.workloads.values()) if c is not None else []


_NO_CQ = type("_NoCQ", (), {"workloads": {}})()
