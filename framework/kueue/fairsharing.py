"""Fair sharing: dominant resource share (pkg/cache/scheduler/fair_sharing.go), the
admission tournament (pkg/scheduler/fair_sharing_iterator.go) and fair preemption
with Kueue's strategies (preemption.go: fairPreemptions; preemption/fairsharing/)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from framework.kueue.amount import FR, MAX_INT64, add, sub
from framework.kueue.preemption import (FAIR_SHARING, IN_CQ, RECLAMATION, Context, Target, candidate_key, cq_of,
                                        fill_back, restore, satisfies_policy, uses_resources, workload_fits)
from framework.kueue.quota import CohortNode, Node
from framework.kueue.snapshot import ClusterQueue
from framework.kueue.workload import WorkloadInfo

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
DEFAULT_STRATEGIES = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)
VALID_STRATEGIES = ((LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,), (LESS_THAN_INITIAL_SHARE,), DEFAULT_STRATEGIES)


@dataclass(frozen=True)
class DRS:
    weight: float = 1.0
    ratio: float = 0.0
    dominant: str = ""
    borrowing: bool = False
    borrowed_frs: tuple[FR, ...] = ()

    def precise(self) -> float:
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0

    def rounded(self) -> int:
        return MAX_INT64 if self.zero_weight_borrows() else int(math.ceil(self.precise()))

    def borrowing_on(self, requested: Mapping[FR, int]) -> bool:
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed_frs)


NEGATIVE = DRS(1.0, -1.0)


def compare(a: DRS, b: DRS) -> int:
    def cmp(x: float, y: float) -> int:
        return (x > y) - (x < y)
    za, zb = a.zero_weight_borrows(), b.zero_weight_borrows()
    if za and zb:
        return cmp(a.ratio, b.ratio)
    if za:
        return 1
    if zb:
        return -1
    return cmp(a.precise(), b.precise())


def _lendable(node: Node) -> dict[str, int]:
    root = node.root()
    out: dict[str, int] = {}
    for fr in root.subtree:
        out[fr[1]] = add(out.get(fr[1], 0), node.potential_available(fr))
    return out


def dominant_resource_share(node: Node, extra: Mapping[FR, int] | None = None) -> DRS:
    if node.parent is None:
        return DRS(node.weight)
    extra = extra or {}
    borrowed: dict[str, int] = {}
    frs: list[FR] = []
    for fr, quota in node.subtree.items():
        b = sub(add(extra.get(fr, 0), node.usage.get(fr, 0)), quota)
        if b > 0:
            borrowed[fr[1]] = add(borrowed.get(fr[1], 0), b)
            frs.append(fr)
    if not borrowed:
        return DRS(node.weight)
    lendable = _lendable(node.parent)
    ratio, dom = 0.0, ""
    for res, b in borrowed.items():
        lr = lendable.get(res, 0)
        if lr > 0:
            r = float(b) * 1000.0 / float(lr)
            if r > ratio or (r == ratio and res < dom):
                ratio, dom = r, res
    return DRS(node.weight, ratio, dom, True, tuple(frs))


# --- admission order (the tournament) ---
@dataclass
class Entry:
    """What the tournament needs of a nominated workload."""
    workload: WorkloadInfo
    cq: ClusterQueue
    usage: dict[FR, int]
    payload: object = None


def _less(a: Entry, b: Entry, drs: dict[tuple[str, str], DRS], cohort: str) -> bool:
    da, db = drs[(cohort, a.workload.key)], drs[(cohort, b.workload.key)]
    ba, bb = da.borrowing_on(a.usage), db.borrowing_on(b.usage)
    if ba != bb:
        return not ba
    c = compare(da, db)
    if c != 0:
        return c == -1
    if a.workload.priority != b.workload.priority:
        return a.workload.priority > b.workload.priority
    return a.workload.queue_order_time() < b.workload.queue_order_time()


def _tournament(cohort: CohortNode, by_cq: dict[str, Entry], drs: dict[tuple[str, str], DRS]) -> Entry | None:
    cands = [e for c in cohort.child_cohorts if (e := _tournament(c, by_cq, drs)) is not None]
    cands += [by_cq[cq.name] for cq in cohort.child_cqs if cq.name in by_cq]
    if not cands:
        return None
    best = cands[0]
    for cur in cands[1:]:
        if _less(cur, best, drs, cohort.name):
            best = cur
    return best


def fair_sharing_order(entries: Sequence[Entry]) -> list[Entry]:
    """Entries in the order the fair sharing iterator pops them."""
    by_cq = {e.cq.name: e for e in entries}
    out: list[Entry] = []
    while by_cq:
        cq = next(iter(by_cq.values())).cq
        if cq.parent is None:
            out.append(by_cq.pop(cq.name))
            continue
        root = cq.root()
        drs: dict[tuple[str, str], DRS] = {}
        for sub_cq in root.subtree_cqs():  # type: ignore[attr-defined]
            e = by_cq.get(sub_cq.name)
            if e is None:
                continue
            sub_cq.add_usage_map(e.usage)
            share = dominant_resource_share(sub_cq)
            for anc in sub_cq.path_parent_to_root():
                drs[(anc.name, e.workload.key)] = share
                share = dominant_resource_share(anc)
            sub_cq.remove_usage_map(e.usage)
        winner = _tournament(root, by_cq, drs)  # type: ignore[arg-type]
        assert winner is not None
        out.append(by_cq.pop(winner.cq.name))
    return out


# --- fair preemption ---
Strategy = Callable[[DRS, DRS, DRS], bool]
STRATEGIES: dict[str, Strategy] = {
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE: lambda pn, to, tn: compare(pn, tn) <= 0,
    LESS_THAN_INITIAL_SHARE: lambda pn, to, tn: compare(pn, to) < 0,
}


@dataclass
class _Ordering:
    ctx: Context
    by_cq: dict[str, list[WorkloadInfo]]
    ancestors: set[str] = field(default_factory=set)
    pruned_cqs: set[str] = field(default_factory=set)
    pruned_cohorts: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.ancestors = {a.name for a in self.ctx.cq.path_parent_to_root()}

    def has(self, cq: Node) -> bool:
        return bool(self.by_cq.get(cq.name))

    def targets(self):
        pcq = self.ctx.cq
        if pcq.parent is None:
            while pcq.name not in self.pruned_cqs and self.has(pcq):
                yield pcq
            return
        root = pcq.root()
        while root.name not in self.pruned_cohorts:
            t = self._next(root)  # type: ignore[arg-type]
            if t is not None:
                yield t

    def _next(self, cohort: CohortNode) -> ClusterQueue | None:
        best_cq, best_cq_drs = None, NEGATIVE
        for cq in cohort.child_cqs:
            if cq.name in self.pruned_cqs:
                continue
            d = dominant_resource_share(cq)
            if (not d.borrowing and cq is not self.ctx.cq) or not self.has(cq):
                self.pruned_cqs.add(cq.name)
            elif best_cq is not None and compare(d, best_cq_drs) == 0:
                new = candidate_key(self.by_cq[cq.name][0], self.ctx.cq.name, self.ctx.now)
                cur = candidate_key(self.by_cq[best_cq.name][0], self.ctx.cq.name, self.ctx.now)
                if new < cur:
                    best_cq = cq
            elif compare(d, best_cq_drs) == 1:
                best_cq, best_cq_drs = cq, d
        best_co, best_co_drs = None, NEGATIVE
        for co in cohort.child_cohorts:
            if co.name in self.pruned_cohorts:
                continue
            d = dominant_resource_share(co)
            if not d.borrowing and co.name not in self.ancestors:
                self.pruned_cohorts.add(co.name)
            elif compare(d, best_co_drs) >= 0:
                best_co, best_co_drs = co, d
        if best_co is None and best_cq is None:
            self.pruned_cohorts.add(cohort.name)
            return None
        if compare(best_co_drs, best_cq_drs) >= 0:
            return self._next(best_co)  # type: ignore[arg-type]
        return best_cq  # type: ignore[return-value]

    def pop(self, cq: Node) -> WorkloadInfo:
        return self.by_cq[cq.name].pop(0)

    def _almost_lcas(self, target: Node) -> tuple[Node, Node]:
        lca = next(a for a in target.path_parent_to_root() if a.name in self.ancestors)

        def almost(cq: Node) -> Node:
            node: Node = cq
            for a in cq.path_parent_to_root():
                if a is lca:
                    return node
                node = a
            raise AssertionError("no almost-LCA")
        return almost(self.ctx.cq), almost(target)

    def shares(self, target: Node) -> tuple[DRS, DRS]:
        p, t = self._almost_lcas(target)
        return dominant_resource_share(p), dominant_resource_share(t)

    def share_after_removal(self, target: ClusterQueue, wl: WorkloadInfo) -> DRS:
        u = wl.usage()
        target.remove_usage_map(u)
        try:
            return dominant_resource_share(self._almost_lcas(target)[1])
        finally:
            target.add_usage_map(u)


def _fits_fs(ctx: Context) -> bool:
    ctx.cq.remove_usage_map(ctx.usage)
    try:
        return workload_fits(ctx, True)
    finally:
        ctx.cq.add_usage_map(ctx.usage)


def _group(cands: list[WorkloadInfo]) -> dict[str, list[WorkloadInfo]]:
    out: dict[str, list[WorkloadInfo]] = {}
    for w in cands:
        out.setdefault(cq_of(w), []).append(w)
    return out


def _take(ctx: Context, targets: list[Target], wl: WorkloadInfo, reason: str) -> bool:
    ctx.snapshot.remove_workload(wl)
    targets.append(Target(wl, reason, ctx.snapshot.cluster_queues[cq_of(wl)]))
    return _fits_fs(ctx)


def _first(ctx: Context, cands: list[WorkloadInfo], strategy: Strategy) -> tuple[bool, list[Target], list[WorkloadInfo]]:
    order = _Ordering(ctx, _group(cands))
    targets: list[Target] = []
    retry: list[WorkloadInfo] = []
    within_nominal = not any(ctx.cq.borrowing(fr) for fr in ctx.frs)
    for cq in order.targets():
        if cq is ctx.cq:
            if _take(ctx, targets, order.pop(cq), IN_CQ):
                return True, targets, []
            continue
        if within_nominal:
            if _take(ctx, targets, order.pop(cq), RECLAMATION):
                return True, targets, []
            continue
        pnew, told = order.shares(cq)
        if math.isinf(pnew.precise()) and not math.isinf(told.precise()):
            while order.has(cq):
                retry.append(order.pop(cq))
            continue
        while order.has(cq):
            wl = order.pop(cq)
            if strategy(pnew, told, order.share_after_removal(cq, wl)):
                if _take(ctx, targets, wl, FAIR_SHARING):
                    return True, targets, []
                break
            retry.append(wl)
    return False, targets, retry


def _second(ctx: Context, retry: list[WorkloadInfo], targets: list[Target]) -> bool:
    order = _Ordering(ctx, _group(retry))
    for cq in order.targets():
        pnew, told = order.shares(cq)
        wl = order.pop(cq)
        if STRATEGIES[LESS_THAN_INITIAL_SHARE](pnew, told, DRS()):
            if _take(ctx, targets, wl, FAIR_SHARING):
                return True
        order.pruned_cqs.add(cq.name)
    return False


def fair_targets(ctx: Context, strategies: Sequence[str] = DEFAULT_STRATEGIES) -> list[Target]:
    cq = ctx.cq
    p = cq.preemption
    cands: list[WorkloadInfo] = []
    if p.within_cluster_queue != "Never":
        cands += [w for w in cq.workloads.values()
                  if satisfies_policy(ctx.preemptor, w, p.within_cluster_queue) and uses_resources(w, ctx.frs)]
    if cq.parent is not None and p.reclaim_within_cohort != "Never":
        for other in cq.root().subtree_cqs():  # type: ignore[attr-defined]
            if other is cq or not any(other.borrowing(fr) for fr in ctx.frs):
                continue
            cands += [w for w in other.workloads.values()
                      if satisfies_policy(ctx.preemptor, w, p.reclaim_within_cohort) and uses_resources(w, ctx.frs)]
    if not cands:
        return []
    cands.sort(key=lambda w: candidate_key(w, cq.name, ctx.now))
    strategies = list(strategies) or list(DEFAULT_STRATEGIES)
    cq.add_usage_map(ctx.usage)
    fits, targets, retry = _first(ctx, cands, STRATEGIES[strategies[0]])
    if not fits and len(strategies) > 1:
        fits = _second(ctx, retry, targets)
    cq.remove_usage_map(ctx.usage)
    if not fits:
        restore(ctx.snapshot, targets)
        return []
    targets = fill_back(ctx, targets, True)
    restore(ctx.snapshot, targets)
    return targets
