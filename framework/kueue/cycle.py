"""One admission cycle over the heads of the ClusterQueues (pkg/scheduler/scheduler.go:
schedule, nominate, processEntry). Pure: it works on a Snapshot and returns what to
do (admit, preempt, requeue with a status); the owner applies it. Cost: one flavor
assignment (and at most one preemption search) per head, so O(ClusterQueues)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from framework.api.labels import LabelSelector
from framework.kueue import queues as rq
from framework.kueue.amount import FR, add, sub
from framework.kueue.fairsharing import DEFAULT_STRATEGIES, Entry, fair_sharing_order, fair_targets
from framework.kueue.flavors import FIT, NO_FIT, PREEMPT, Assignment, FlavorAssigner
from framework.kueue.preemption import Context, Target, classical_targets, cq_of, preemption_message
from framework.kueue.quota import height_of_lowest_subtree_that_fits
from framework.kueue.snapshot import ClusterQueue, QuotaSnapshot, cq_path
from framework.kueue.workload import Admission, PodSetAssignment, WorkloadInfo

DEFERRED_FIT = 3


@dataclass(frozen=True)
class Config:
    fair_sharing: bool = False
    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    partial_admission: bool = True
    recompute_on_overlap: bool = True


@dataclass
class Decision:
    """What became of one head."""
    workload: WorkloadInfo
    cluster_queue: str
    status: str = ""  # "" not nominated (its status is written), "skipped", "nominated" (admitted)
    assignment: Assignment | None = None
    targets: list[Target] = field(default_factory=list)
    message: str = ""
    reason: str = ""  # granular QuotaReserved=False reason
    requeue_reason: str = rq.GENERIC
    admission: Admission | None = None
    mode: int = NO_FIT


@dataclass
class Eviction:
    victim: WorkloadInfo
    reason: str
    message: str
    preemptor_cq: str = ""


@dataclass
class CycleResult:
    decisions: list[Decision]
    evictions: list[Eviction]

    @property
    def admitted(self) -> list[Decision]:
        return [d for d in self.decisions if d.admission is not None]


class AdmissionCycle:
    def __init__(self, config: Config = Config(), now: int = 0) -> None:
        self.config = config
        self.now = now

    # --- preemption as the assigner and the cycle ask for it ---
    def targets(self, snap: QuotaSnapshot, wl: WorkloadInfo, cq: ClusterQueue, frs: set[FR], usage: dict[FR, int]) -> list[Target]:
        ctx = Context(wl, cq, snap, frs, usage, self.now)
        if self.config.fair_sharing:
            return fair_targets(ctx, self.config.strategies)
        return classical_targets(ctx)

    def oracle_for(self, snap: QuotaSnapshot):
        def oracle(cq: ClusterQueue, wl: WorkloadInfo, fr: FR, qty: int) -> tuple[str, int]:
            found = self.targets(snap, wl, cq, {fr}, {fr: qty})
            if not found:
                return "NoCandidates", height_of_lowest_subtree_that_fits(cq, fr, qty)[0]
            for t in found:
                snap.remove_workload(t.workload)
            borrow = height_of_lowest_subtree_that_fits(cq, fr, qty)[0]
            for t in found:
                snap.add_workload(t.workload)
            return ("Preempt" if any(cq_of(t.workload) == cq.name for t in found) else "Reclaim"), borrow
        return oracle

    def assignments(self, snap: QuotaSnapshot, wl: WorkloadInfo, cq: ClusterQueue) -> tuple[Assignment, list[Target]]:
        """getInitialAssignments: full counts, then partial admission by binary search."""
        assigner = FlavorAssigner(wl, cq, snap.flavors, self.oracle_for(snap), self.config.fair_sharing)
        full = assigner.assign()
        mode = full.representative_mode()
        if mode == FIT:
            return full, []
        if mode == PREEMPT:
            t = self.targets(snap, wl, cq, full.frs_need_preemption(), full.usage)
            if t:
                return full, t
        deltas = [ps.count - (ps.min_count if ps.min_count is not None else ps.count) for ps in wl.pod_sets]
        total = sum(deltas)
        if self.config.partial_admission and total > 0:
            found: tuple[Assignment, list[Target]] | None = None
            lo, hi = 0, total + 1
            while lo < hi:
                mid = (lo + hi) // 2
                counts = [ps.count - (d * mid) // total for ps, d in zip(wl.pod_sets, deltas)]
                a = assigner.assign(counts)
                m = a.representative_mode()
                ok: tuple[Assignment, list[Target]] | None = None
                if m == FIT:
                    ok = (a, [])
                elif m == PREEMPT:
                    t = self.targets(snap, wl, cq, a.frs_need_preemption(), a.usage)
                    if t:
                        ok = (a, t)
                if ok is not None:
                    found, hi = ok, mid
                else:
                    lo = mid + 1
            if found is not None:
                return found
        return full, []

    # --- the cycle ---
    def run(self, snap: QuotaSnapshot, heads: Sequence[tuple[WorkloadInfo, str]],
            namespaces: Mapping[str, Mapping[str, str]] | None = None) -> CycleResult:
        entries: list[Decision] = []
        others: list[Decision] = []
        for wl, cq_name in heads:
            d = Decision(wl, cq_name)
            cq = snap.cluster_queues.get(cq_name)
            if cq is not None and not cq.active:
                d.message, d.reason = f"ClusterQueue {cq_name} is inactive", "Suspended"
            elif cq is None:
                d.message, d.reason = f"ClusterQueue {cq_name} not found", "Misconfigured"
            elif not _selects(cq.spec.namespace_selector, (namespaces or {}).get(wl.namespace, {})):
                d.message, d.reason = "workload namespace doesn't match ClusterQueue selector", "Misconfigured"
                d.requeue_reason = rq.NAMESPACE_MISMATCH
            else:
                d.assignment, d.targets = self.assignments(snap, wl, cq)
                d.message = d.assignment.message()
                entries.append(d)
                continue
            others.append(d)
        evictions: list[Eviction] = []
        claimed: dict[str, WorkloadInfo] = {}
        for d in self._order(snap, entries):
            self._process(snap, d, claimed, evictions)
        for d in entries:
            if d.status == "skipped" and d.requeue_reason == rq.GENERIC:
                d.requeue_reason = rq.FAILED_AFTER_NOMINATION
        return CycleResult(entries + others, evictions)

    def _order(self, snap: QuotaSnapshot, entries: list[Decision]) -> list[Decision]:
        if self.config.fair_sharing:
            fs = [Entry(d.workload, snap.cluster_queues[d.cluster_queue], d.assignment.usage, d) for d in entries]
            return [e.payload for e in fair_sharing_order(fs)]  # type: ignore[misc]
        return sorted(entries, key=lambda d: (not d.workload.has_quota, d.assignment.borrowing,
                                              -d.workload.priority, d.workload.queue_order_time()))

    def _fits(self, snap: QuotaSnapshot, cq: ClusterQueue, usage: dict[FR, int], claimed: dict[str, WorkloadInfo],
              targets: list[Target]) -> bool:
        merged = dict(claimed)
        for t in targets:
            merged[t.workload.key] = t.workload
        for w in merged.values():
            snap.remove_workload(w)
        try:
            return cq.fits(usage)
        finally:
            for w in merged.values():
                snap.add_workload(w)

    def _process(self, snap: QuotaSnapshot, d: Decision, claimed: dict[str, WorkloadInfo], evictions: list[Eviction]) -> None:
        cq = snap.cluster_queues[d.cluster_queue]
        a = d.assignment
        assert a is not None
        usage = a.usage
        fits = self._fits(snap, cq, usage, claimed, d.targets)
        mode = a.representative_mode()
        if self.config.recompute_on_overlap and any(t.workload.key in claimed for t in d.targets):
            for w in claimed.values():
                snap.remove_workload(w)
            d.assignment, d.targets = self.assignments(snap, d.workload, cq)
            d.message = d.assignment.message()
            for w in claimed.values():
                snap.add_workload(w)
            a = d.assignment
            usage = a.usage
            mode = a.representative_mode()
            if mode == FIT:
                mode = DEFERRED_FIT
            fits = self._fits(snap, cq, usage, claimed, d.targets)
        d.mode = mode
        if mode == NO_FIT:
            d.requeue_reason, d.reason = rq.NO_FIT, a.no_fit_reason
            return
        if mode == PREEMPT and not d.targets:
            d.requeue_reason, d.reason = rq.PREEMPTION_NO_CANDIDATES, "WaitingForQuota"
            if cq.preemption.reclaim_within_cohort != "Any":
                cq.add_usage_map(self._to_reserve(a, cq))
            return
        if mode == DEFERRED_FIT:
            d.message = ("Workload has overlapping preemption targets with another workload, "
                         "but will fit after these preemptions complete")
            d.reason, d.requeue_reason = "WaitingForPreemptedWorkloads", rq.PENDING_PREEMPTION
            cq.add_usage_map(usage)
            return
        if any(t.workload.key in claimed for t in d.targets):
            d.status, d.message, d.reason = "skipped", "Workload has overlapping preemption targets with another workload", "WaitingForQuota"
            return
        if not fits:
            d.status, d.message, d.reason = "skipped", "Workload no longer fits after processing another workload", "WaitingForQuota"
            return
        for t in d.targets:
            claimed[t.workload.key] = t.workload
        cq.add_usage_map(usage)
        if mode == PREEMPT:
            d.reason = "WaitingForPreemptedWorkloads"
            path = cq_path(cq)
            for t in d.targets:
                if not t.workload.evicted:
                    msg = preemption_message(d.workload, t.reason, path, cq_path(t.cq))
                    evictions.append(Eviction(t.workload, t.reason, msg, cq.name))
            d.message += f". Pending the preemption of {len(d.targets)} workload(s)"
            d.requeue_reason = rq.PENDING_PREEMPTION
            return
        d.status = "nominated"
        d.admission = Admission(cq.name, [
            PodSetAssignment(ps.name, {r: f.name for r, f in ps.flavors.items()},
                             {r: ps.requests.get(r, 0) for r in ps.flavors}, ps.count) for ps in a.pod_sets])

    @staticmethod
    def _to_reserve(a: Assignment, cq: ClusterQueue) -> dict[FR, int]:
        out: dict[FR, int] = {}
        for fr, v in a.usage.items():
            q = cq.quota_for(fr)
            u = cq.usage.get(fr, 0)
            if a.borrowing > 0:
                out[fr] = v if q.borrowing_limit is None else min(v, sub(add(q.nominal, q.borrowing_limit), u))
            else:
                out[fr] = max(0, min(v, sub(q.nominal, u)))
        return out


def _selects(selector: LabelSelector | None, namespace_labels: Mapping[str, str]) -> bool:
    """A ClusterQueue's namespaceSelector: nil selects no namespace, {} every one
    (metav1.LabelSelectorAsSelector, pkg/cache/scheduler/clusterqueue.go)."""
    return selector is not None and selector.matches(namespace_labels)
