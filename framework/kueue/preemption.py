"""Choosing preemption victims: classic and hierarchical (pkg/scheduler/preemption/
preemption.go: classicalPreemptions; classical/*.go), the shared candidate order and
policies (preemption/common), and the messages victims get (IssuePreemptions)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from framework.kueue.amount import FR
from framework.kueue.snapshot import ClusterQueue, Cohort, QuotaSnapshot
from framework.kueue.workload import WorkloadInfo

IN_CQ = "InClusterQueue"
RECLAMATION = "InCohortReclamation"
FAIR_SHARING = "InCohortFairSharing"
WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
HUMAN_REASONS = {
    IN_CQ: "prioritization in the ClusterQueue",
    RECLAMATION: "reclamation within the cohort",
    FAIR_SHARING: "Fair Sharing within the cohort",
    WHILE_BORROWING: "reclamation within the cohort while borrowing",
}
# variants (classical/hierarchical_preemption.go)
NEVER, WITHIN_CQ, HIERARCHICAL, WITHOUT_BORROWING, WHILE_BORROWING_V = range(5)
_VARIANT_REASON = {WITHIN_CQ: IN_CQ, HIERARCHICAL: RECLAMATION, WITHOUT_BORROWING: RECLAMATION,
                   WHILE_BORROWING_V: WHILE_BORROWING}


@dataclass
class Target:
    workload: WorkloadInfo
    reason: str
    cq: ClusterQueue


@dataclass
class Context:
    preemptor: WorkloadInfo
    cq: ClusterQueue
    snapshot: QuotaSnapshot
    frs: set[FR]
    usage: dict[FR, int]
    now: int


def cq_of(wl: WorkloadInfo) -> str:
    return wl.admission.cluster_queue if wl.admission else ""


def satisfies_policy(preemptor: WorkloadInfo, candidate: WorkloadInfo, policy: str) -> bool:
    lower = preemptor.priority > candidate.priority
    if policy == "LowerPriority":
        return lower
    if policy == "LowerOrNewerEqualPriority":
        return lower or (preemptor.priority == candidate.priority and
                         preemptor.queue_order_time() < candidate.queue_order_time())
    return policy == "Any"


def uses_resources(wl: WorkloadInfo, frs: set[FR]) -> bool:
    return any(fr in frs for fr in wl.usage())


def candidate_key(wl: WorkloadInfo, preemptor_cq: str, now: int) -> tuple:
    """CandidatesOrdering: evicted first, other ClusterQueues first, lower priority,
    most recently reserved, then UID."""
    return (not wl.evicted, cq_of(wl) == preemptor_cq, wl.priority, -wl.quota_reserved_time(now), wl.uid)


def workload_fits(ctx: Context, allow_borrowing: bool) -> bool:
    for fr, v in ctx.usage.items():
        if not allow_borrowing and ctx.cq.borrowing_with(fr, v):
            return False
        if v > ctx.cq.available(fr):
            return False
    return True


@dataclass
class _Candidate:
    wl: WorkloadInfo
    lca: Cohort | None
    variant: int


def _classify(ctx: Context, wl: WorkloadInfo, advantage: bool) -> int:
    if not uses_resources(wl, ctx.frs):
        return NEVER
    p = ctx.cq.preemption
    same = cq_of(wl) == ctx.cq.name
    policy = p.within_cluster_queue if same else p.reclaim_within_cohort
    if not satisfies_policy(ctx.preemptor, wl, policy):
        return NEVER
    if same:
        return WITHIN_CQ
    if advantage:
        return HIERARCHICAL
    if p.borrow_within_cohort == "Never":
        return WITHOUT_BORROWING
    thr = p.max_priority_threshold
    if wl.priority >= ctx.preemptor.priority or (thr is not None and wl.priority > thr):
        return WITHOUT_BORROWING
    return WHILE_BORROWING_V


def _from_cq(ctx: Context, cq: ClusterQueue, lca: Cohort | None, advantage: bool) -> list[_Candidate]:
    out = []
    for wl in cq.workloads.values():
        v = _classify(ctx, wl, advantage)
        if v != NEVER:
            out.append(_Candidate(wl, lca, v))
    return out


def _in_subtree(ctx: Context, cohort: Cohort, root: Cohort, skip: Cohort | None, adv: bool, out: list) -> None:
    for child in cohort.child_cohorts:
        if child is skip or child.within_nominal(ctx.frs):
            continue
        _in_subtree(ctx, child, root, skip, adv, out)  # type: ignore[arg-type]
    for cq in cohort.child_cqs:
        if cq is ctx.cq:
            continue
        if not cq.within_nominal(ctx.frs):
            out.extend(_from_cq(ctx, cq, root, adv))  # type: ignore[arg-type]


def _hierarchical_candidates(ctx: Context) -> tuple[list[_Candidate], list[_Candidate]]:
    hier: list[_Candidate] = []
    prio: list[_Candidate] = []
    if ctx.cq.parent is None or ctx.cq.preemption.reclaim_within_cohort == "Never":
        return hier, prio
    adv, remaining = ctx.cq.fits_in_quota(ctx.usage)
    previous = None
    for node in ctx.cq.path_parent_to_root():
        _in_subtree(ctx, node, node, previous, adv, hier if adv else prio)  # type: ignore[arg-type]
        fits, remaining = node.fits_in_quota(remaining)
        adv = adv or fits
        previous = node
    return hier, prio


class _CandidateIterator:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        same = _from_cq(ctx, ctx.cq, None, False) if ctx.cq.preemption.within_cluster_queue != "Never" else []
        hier, prio = _hierarchical_candidates(ctx)
        key = lambda c: candidate_key(c.wl, ctx.cq.name, ctx.now)  # noqa: E731
        groups = [sorted(g, key=key) for g in (hier, prio, same)]
        self.candidates = [c for g in groups for c in g if c.wl.evicted] + \
                          [c for g in groups for c in g if not c.wl.evicted]
        self.no_other = not hier and not prio
        self.no_hier = not hier

    def valid(self, c: _Candidate, borrow: bool) -> bool:
        if cq_of(c.wl) == self.ctx.cq.name:
            return True
        if borrow and c.variant == WITHOUT_BORROWING:
            return False
        cq = self.ctx.snapshot.cluster_queues[cq_of(c.wl)]
        if cq.within_nominal(self.ctx.frs):
            return False
        for node in cq.path_parent_to_root():
            if node is c.lca:
                break
            if node.within_nominal(self.ctx.frs):
                return False
        return True


def _under_nominal(ctx: Context) -> bool:
    return all(ctx.cq.quota_for(fr).nominal > ctx.cq.usage.get(fr, 0) for fr in ctx.frs)


def classical_targets(ctx: Context) -> list[Target]:
    it = _CandidateIterator(ctx)
    forbidden = ctx.cq.preemption.borrow_within_cohort == "Never"
    if it.no_other or (forbidden and not _under_nominal(ctx)):
        attempts = [True]
    elif forbidden and it.no_hier:
        attempts = [False, True]
    else:
        attempts = [True, False]
    snap = ctx.snapshot
    for borrow in attempts:
        targets: list[Target] = []
        for c in it.candidates:
            if not it.valid(c, borrow):
                continue
            snap.remove_workload(c.wl)
            targets.append(Target(c.wl, _VARIANT_REASON[c.variant], snap.cluster_queues[cq_of(c.wl)]))
            if workload_fits(ctx, borrow):
                targets = fill_back(ctx, targets, borrow)
                restore(snap, targets)
                return targets
        restore(snap, targets)
    return []


def fill_back(ctx: Context, targets: list[Target], allow_borrowing: bool) -> list[Target]:
    for i in range(len(targets) - 2, -1, -1):
        ctx.snapshot.add_workload(targets[i].workload)
        if workload_fits(ctx, allow_borrowing):
            targets[i] = targets[-1]
            targets.pop()
        else:
            ctx.snapshot.remove_workload(targets[i].workload)
    return targets


def restore(snap: QuotaSnapshot, targets: Iterable[Target]) -> None:
    for t in targets:
        snap.add_workload(t.workload)


def preemption_message(preemptor: WorkloadInfo, reason: str, preemptor_path: str, preemptee_path: str) -> str:
    uid = preemptor.uid or "UNKNOWN"
    juid = preemptor.labels.get("kueue.x-k8s.io/job-uid") or "UNKNOWN"
    return (f"Preempted to accommodate a workload (UID: {uid}, JobUID: {juid}) due to "
            f"{HUMAN_REASONS.get(reason, 'UNKNOWN')}; preemptor path: {preemptor_path or 'UNKNOWN'}; "
            f"preemptee path: {preemptee_path or 'UNKNOWN'}")
