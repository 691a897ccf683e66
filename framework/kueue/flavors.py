"""Flavor assignment with fungibility (pkg/scheduler/flavorassigner/flavorassigner.go).

For each pod set and resource group, try the group's flavors in order; a flavor is
eligible when the pod tolerates its taints and matches its labels; its mode per
resource comes from the quota tree (Fit, borrowing level, or preemption as the
oracle answers). whenCanBorrow/whenCanPreempt decide whether to keep looking.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from framework.api.labels import LabelSelector, NodeSelector, Taint, Toleration, find_untolerated_taint
from framework.kueue.amount import FR, add, format_amount, sub
from framework.kueue.api import Fungibility, ResourceFlavorSpec
from framework.kueue.quota import height_of_lowest_subtree_that_fits
from framework.kueue.snapshot import ClusterQueue
from framework.kueue.workload import WorkloadInfo

# FlavorAssignmentMode (worst first)
NO_FIT, PREEMPT, FIT = 0, 1, 2
MODE_NAMES = {NO_FIT: "NoFit", PREEMPT: "Preempt", FIT: "Fit"}
# preemptionMode inside the assigner (worst first)
G_NOFIT, G_NO_CANDIDATES, G_PREEMPT, G_RECLAIM, G_FIT = range(5)
_TO_MODE = {G_NOFIT: NO_FIT, G_NO_CANDIDATES: PREEMPT, G_PREEMPT: PREEMPT, G_RECLAIM: PREEMPT, G_FIT: FIT}
POSSIBILITY = {"NoCandidates": G_NO_CANDIDATES, "Preempt": G_PREEMPT, "Reclaim": G_RECLAIM}
_SEVERITY = {"": 0, "TopologyPlacementFailed": 1, "WaitingForQuota": 2, "ExceedsMaxQuota": 3, "NoMatchingFlavor": 4}
MAX_INT = 2**62

# (cq, workload, fr, quantity) -> (possibility name, borrowing level after preemption)
Oracle = Callable[[ClusterQueue, WorkloadInfo, FR, int], tuple[str, int]]


def most_severe(a: str, b: str) -> str:
    return a if _SEVERITY.get(a, 0) >= _SEVERITY.get(b, 0) else b


@dataclass
class FlavorAssignment:
    name: str
    mode: int
    borrow: int = 0


@dataclass
class PodSetFlavors:
    name: str
    count: int
    requests: dict[str, int]
    flavors: dict[str, FlavorAssignment] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    error: str = ""
    attempts: dict[str, tuple[int, str]] = field(default_factory=dict)  # flavor -> (mode, noFitReason)

    @property
    def fit(self) -> bool:
        return not self.error and not self.reasons

    def representative_mode(self) -> int:
        if self.fit:
            return FIT
        if self.error or not self.flavors:
            return NO_FIT
        return min(f.mode for f in self.flavors.values())


@dataclass
class Assignment:
    pod_sets: list[PodSetFlavors] = field(default_factory=list)
    usage: dict[FR, int] = field(default_factory=dict)
    borrowing: int = 0
    no_fit_reason: str = ""
    _mode: int | None = None

    def representative_mode(self) -> int:
        if not self.pod_sets:
            return NO_FIT
        if self._mode is not None:
            return self._mode
        return min(ps.representative_mode() for ps in self.pod_sets)

    def message(self) -> str:
        parts = []
        for ps in self.pod_sets:
            if ps.fit:
                continue
            if ps.error:
                return f"failed to assign flavors to pod set {ps.name}: {ps.error}"
            parts.append(f"couldn't assign flavors to pod set {ps.name}: {', '.join(sorted(ps.reasons))}")
        return "; ".join(parts)

    def frs_need_preemption(self) -> set[FR]:
        return {(fa.name, r) for ps in self.pod_sets for r, fa in ps.flavors.items() if fa.mode == PREEMPT}


def _is_preferred(a: tuple[int, int], b: tuple[int, int], fung: Fungibility) -> bool:
    if a[0] == G_NOFIT:
        return False
    if b[0] == G_NOFIT:
        return True
    if (a[0] == G_NO_CANDIDATES) != (b[0] == G_NO_CANDIDATES):
        return a[0] != G_NO_CANDIDATES
    if fung.preference == "PreemptionOverBorrowing":
        if a[1] != b[1]:
            return a[1] < b[1]
        return a[0] > b[0]
    if a[0] != b[0]:
        return a[0] > b[0]
    return a[1] < b[1]


def _should_try_next(mode: tuple[int, int], fung: Fungibility) -> bool:
    if mode[0] in (G_NOFIT, G_NO_CANDIDATES):
        return True
    if mode[0] in (G_PREEMPT, G_RECLAIM) and fung.when_can_preempt == "TryNextFlavor":
        return True
    return mode[1] != 0 and fung.when_can_borrow == "TryNextFlavor"


def _taint(raw: Mapping[str, Any]) -> Taint:
    return Taint(str(raw.get("key", "")), str(raw.get("value", "")), str(raw.get("effect", "")))


def _toleration(raw: Mapping[str, Any]) -> Toleration:
    return Toleration(str(raw.get("key", "")), str(raw.get("operator", "") or "Equal"), str(raw.get("value", "")),
                      str(raw.get("effect", "")))


def _go_taint(t: Taint) -> str:
    return f"{{{t.key} {t.value} {t.effect} <nil>}}"


def _matches_flavor(spec: Mapping[str, Any], flavor: ResourceFlavorSpec) -> bool:
    """flavorSelector: the pod's required node selector and affinity, restricted to
    the flavor's own label keys, against the flavor's labels."""
    keys = set(flavor.node_labels)
    labels = flavor.node_labels
    sel = {k: v for k, v in (spec.get("nodeSelector") or {}).items() if k in keys}
    if any(labels.get(k) != v for k, v in sel.items()):
        return False
    req = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if not req:
        return True
    terms = []
    for t in req.get("nodeSelectorTerms") or []:
        exprs = [e for e in t.get("matchExpressions") or [] if e.get("key") in keys]
        if not exprs:
            return True  # an emptied term: the affinity matches anything
        terms.append({"matchExpressions": exprs})
    if not terms:
        return True
    return NodeSelector.parse({"nodeSelectorTerms": terms}, "affinity").matches(labels, "")


class FlavorAssigner:
    def __init__(self, wl: WorkloadInfo, cq: ClusterQueue, flavors: Mapping[str, ResourceFlavorSpec],
                 oracle: Oracle, fair_sharing: bool = False) -> None:
        self.wl, self.cq, self.flavors, self.oracle, self.fair_sharing = wl, cq, flavors, oracle, fair_sharing

    def assign(self, counts: list[int] | None = None) -> Assignment:
        a = Assignment()
        covers_pods = self.cq.rg_by_resource("pods") is not None
        for i, ps in enumerate(self.wl.pod_sets):
            count = ps.count if counts is None else counts[i]
            reqs = ps.total(count)
            if covers_pods:
                reqs["pods"] = count
            psa = PodSetFlavors(ps.name, count, reqs)
            group_flavors: dict[str, FlavorAssignment] | None = {}
            failed_status: list[str] | None = None
            for res in sorted(reqs):
                qty = reqs[res]
                if self.cq.rg_by_resource(res) is None and qty == 0:
                    continue
                if res in group_flavors:
                    continue
                flavors, reasons, fit = self._find_flavor(i, reqs, res, a.usage, psa)
                if not flavors and reqs:
                    group_flavors, failed_status = None, reasons
                    break
                group_flavors.update(flavors)
                if not fit:
                    psa.reasons.extend(reasons)
            if group_flavors is None:
                psa.flavors = {}
                psa.reasons = failed_status or []
            else:
                psa.flavors = {r: f for r, f in group_flavors.items() if r in reqs}
            a.pod_sets.append(psa)
            for r, fa in psa.flavors.items():
                a.borrowing = max(a.borrowing, fa.borrow)
                fr = (fa.name, r)
                a.usage[fr] = add(a.usage.get(fr, 0), reqs.get(r, 0))
            if group_flavors is None:
                self._resolve_no_fit(a)
                return a
        if a.representative_mode() == NO_FIT:
            self._resolve_no_fit(a)
        return a

    def _find_flavor(self, ps_idx: int, reqs: dict[str, int], res: str, assigned: dict[FR, int],
                     psa: PodSetFlavors) -> tuple[dict[str, FlavorAssignment], list[str], bool]:
        group = self.cq.rg_by_resource(res)
        if group is None:
            return {}, [f"resource {res} unavailable in ClusterQueue"], False
        reasons: list[str] = []
        group_reqs = {r: v for r, v in sorted(reqs.items()) if r in group.covered}
        spec = self.wl.pod_sets[ps_idx].spec
        best: dict[str, FlavorAssignment] = {}
        best_mode = (G_NOFIT, MAX_INT)
        fung = self.cq.fungibility
        for fq in group.flavors:
            fname = fq.name
            bad = self._check_flavor(fname, spec)
            if bad:
                reasons.append(bad)
                self._attempt(psa, fname, NO_FIT, "NoMatchingFlavor")
                continue
            assignments: dict[str, FlavorAssignment] = {}
            mode = (G_FIT, 0)
            no_fit_reason = ""
            for r, val in group_reqs.items():
                fr = (fname, r)
                pmode, borrow, msgs, nfr = self._fits_quota(fr, assigned.get(fr, 0), val)
                reasons.extend(msgs)
                no_fit_reason = most_severe(no_fit_reason, nfr)
                m = (pmode, borrow)
                if _is_preferred(mode, m, fung):
                    mode = m
                if mode[0] == G_NOFIT:
                    continue
                assignments[r] = FlavorAssignment(fname, _TO_MODE[pmode], borrow)
            self._attempt(psa, fname, _TO_MODE[mode[0]], no_fit_reason)
            if not _should_try_next(mode, fung):
                best, best_mode = assignments, mode
                break
            if _is_preferred(mode, best_mode, fung):
                best, best_mode = assignments, mode
        fit = best_mode[0] == G_FIT
        return best, ([] if fit else reasons), fit

    @staticmethod
    def _attempt(psa: PodSetFlavors, flavor: str, mode: int, reason: str) -> None:
        old = psa.attempts.get(flavor)
        if old is not None:
            mode, reason = min(mode, old[0]), most_severe(old[1], reason)
        psa.attempts[flavor] = (mode, reason)

    def _check_flavor(self, name: str, spec: Mapping[str, Any]) -> str:
        flavor = self.flavors.get(name)
        if flavor is None:
            return f"flavor {name} not found"
        taints = [_taint(t) for t in flavor.node_taints]
        tols = [_toleration(t) for t in list(spec.get("tolerations") or []) + list(flavor.tolerations)]
        t = find_untolerated_taint(taints, tols, ("NoSchedule", "NoExecute"))
        if t is not None:
            return f"untolerated taint {_go_taint(t)} in flavor {name}"
        if not _matches_flavor(spec, flavor):
            return f"flavor {name} doesn't match node affinity"
        return ""

    def _fits_quota(self, fr: FR, assumed: int, request: int) -> tuple[int, int, list[str], str]:
        cq = self.cq
        avail = cq.available(fr)
        max_cap = cq.potential_available(fr)
        val = add(assumed, request)
        res = fr[1]
        if val > max_cap:
            return G_NOFIT, 0, [
                f"insufficient quota for {res} in flavor {fr[0]}, previously considered podsets requests "
                f"({format_amount(res, assumed)}) + current podset request ({format_amount(res, request, False)}) > "
                f"maximum capacity ({format_amount(res, max_cap)})"], "ExceedsMaxQuota"
        borrow, may_reclaim = height_of_lowest_subtree_that_fits(cq, fr, val)
        if val <= avail:
            return G_FIT, borrow, [], ""
        msgs = [f"insufficient unused quota for {res} in flavor {fr[0]}, {format_amount(res, sub(val, avail))} more needed"]
        if cq.quota_for(fr).nominal >= val or may_reclaim or self._can_preempt_while_borrowing():
            possibility, after = self.oracle(cq, self.wl, fr, val)
            return POSSIBILITY[possibility], after, msgs, ""
        return G_NOFIT, borrow, msgs, "WaitingForQuota"

    def _can_preempt_while_borrowing(self) -> bool:
        p = self.cq.preemption
        return p.borrow_within_cohort != "Never" or (self.fair_sharing and p.reclaim_within_cohort != "Never")

    def _resolve_no_fit(self, a: Assignment) -> None:
        if a.representative_mode() != NO_FIT:
            return
        overall = ""
        for ps in a.pod_sets:
            if ps.representative_mode() != NO_FIT:
                continue
            if not ps.attempts:
                overall = most_severe(overall, "NoMatchingFlavor")
                continue
            per_group: dict[int, str] = {}
            for i, (flavor, (mode, reason)) in enumerate(sorted(ps.attempts.items())):
                if mode != NO_FIT:
                    continue
                idxs = [gi for gi, g in enumerate(self.cq.spec.resource_groups) if any(f.name == flavor for f in g.flavors)]
                for gi in idxs or [-1 - i]:
                    if gi not in per_group or _SEVERITY.get(reason, 0) < _SEVERITY.get(per_group[gi], 0):
                        per_group[gi] = reason
            ps_reason = ""
            for r in per_group.values():
                ps_reason = most_severe(ps_reason, r)
            overall = most_severe(overall, ps_reason)
        a.no_fit_reason = overall
