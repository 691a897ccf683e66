"""Kueue cases (../shared/conformance/incoming/kueue/cases.json, CASE_SCHEMA.md there)
run through framework/kueue, the code the admission actor runs: one admission cycle,
preemption targets, flavor assignment, share values. Only the case's inputs steer the
run; `expected` is compared afterwards (conformance/kueue_compare.py)."""
from __future__ import annotations

from typing import Any

from framework.kueue import queues as rq
from framework.kueue.amount import amount_of, parse_amount, quantity_text
from framework.kueue.conditions import set_evicted, set_preempted, set_quota_reservation, unset_quota_reservation
from framework.kueue.cycle import Config, AdmissionCycle
from framework.kueue.fairsharing import DEFAULT_STRATEGIES, dominant_resource_share
from framework.kueue.flavors import MODE_NAMES, FlavorAssigner
from framework.kueue.snapshot import QuotaSnapshot
from framework.api.quantity import parse_quantity
from conformance.kueue_objects import NOW, cluster_queues, cohorts, flavors, workload


def is_kueue_case(case: dict[str, Any]) -> bool:
    return "kueueCase" in case or (isinstance(case.get("operation"), dict) and "objects" in case and "id" in case)


def _config(case: dict[str, Any]) -> Config:
    fs = (case.get("config") or {}).get("fairSharing") or {}
    gates = case.get("featureGates") or {}
    return Config(fair_sharing=bool(fs.get("enable")),
                  strategies=tuple(fs.get("preemptionStrategies") or DEFAULT_STRATEGIES),
                  partial_admission=gates.get("PartialAdmission", True),
                  recompute_on_overlap=gates.get("RecomputeAssignmentUponPreemptionTargetsOverlap", True))


def _snapshot(case: dict[str, Any]) -> tuple[QuotaSnapshot, list]:
    admitted = [workload(w) for w in case.get("admitted") or []]
    return QuotaSnapshot.build(cluster_queues(case), cohorts(case), flavors(case), admitted), admitted


def _fr(key: str) -> tuple[str, str]:
    flavor, _, res = key.partition("/")
    return flavor, res


def _admission_out(adm) -> dict[str, Any]:
    return {"clusterQueue": adm.cluster_queue, "podSetAssignments": [
        {"name": p.name, "flavors": dict(p.flavors),
         "resourceUsage": {r: quantity_text(r, v) for r, v in p.resource_usage.items()}, "count": p.count}
        for p in adm.pod_set_assignments]}


def run_schedule(case: dict[str, Any]) -> dict[str, Any]:
    snap, admitted = _snapshot(case)
    namespaces = {n["name"]: n.get("labels") or {} for n in case["objects"].get("namespaces") or []}
    lqs = {(q["namespace"], q["name"]): q["clusterQueue"] for q in case["objects"].get("localQueues") or []}
    queues = {name: rq.ClusterQueueQueue(name, cq.spec.queueing_strategy) for name, cq in snap.cluster_queues.items()}
    pending = [workload(w) for w in case.get("pending") or []]
    for wl in pending:
        cq = lqs.get((wl.namespace, wl.queue_name))
        if cq in queues:
            queues[cq].push(wl)
    heads = []
    for name, q in queues.items():
        if snap.cluster_queues[name].active:
            wl = q.pop()
            if wl is not None:
                heads.append((wl, name))
    sched = AdmissionCycle(_config(case), NOW)
    result = sched.run(snap.clone(), heads, namespaces)
    for ev in result.evictions:
        set_evicted(ev.victim, "Preempted", ev.message, NOW)
        set_preempted(ev.victim, ev.reason, ev.message, NOW)
    for d in result.decisions:
        if d.admission is not None:
            set_quota_reservation(d.workload, d.admission, NOW)
            continue
        queues[d.cluster_queue].requeue(d.workload, d.requeue_reason) if d.cluster_queue in queues else None
        if d.status in ("", "skipped"):
            unset_quota_reservation(d.workload, d.reason or "Pending", d.message, NOW)
    holding = [w for w in admitted + pending if w.admission is not None]
    return {
        "assignments": {w.key: _admission_out(w.admission) for w in holding},
        "left": {n: q.active_keys() for n, q in queues.items() if q.active_keys()},
        "inadmissibleLeft": {n: sorted(q.inadmissible) for n, q in queues.items() if q.inadmissible},
        "workloadConditions": {w.key: [c.to_dict() for c in w.conditions.values()] for w in admitted + pending},
    }


def run_preemption_targets(case: dict[str, Any]) -> dict[str, Any]:
    op = case["operation"]
    snap, _ = _snapshot(case)
    pre = next(workload(w) for w in case.get("pending") or [] if w["name"] == op["preemptor"])
    cq = snap.cluster_queues[op["clusterQueue"]]
    frs, usage = set(), {}
    by_name = {ps.name: ps for ps in pre.pod_sets}
    for ps in op["assignment"]["podSets"]:
        per_pod = by_name[ps["name"]].requests
        for res, fa in ps["flavors"].items():
            fr = (fa["flavor"], res)
            if fa["mode"] == "Preempt":
                frs.add(fr)
            v = ps["count"] if res == "pods" and res not in per_pod else per_pod.get(res, 0) * ps["count"]
            if v:
                usage[fr] = usage.get(fr, 0) + v
    config = _config(case)
    targets = AdmissionCycle(config, NOW).targets(snap, pre, cq, frs, usage)
    from framework.kueue.preemption import preemption_message
    from framework.kueue.snapshot import cq_path
    victims = []
    for t in targets:
        v: dict[str, Any] = {"workload": t.workload.key, "reason": None if t.workload.evicted else t.reason}
        if not config.fair_sharing and not t.workload.evicted:
            msg = preemption_message(pre, t.reason, cq_path(cq), cq_path(t.cq))
            v["message"] = msg
            v["evictedCondition"] = {"type": "Evicted", "status": "True", "reason": "Preempted", "message": msg}
        victims.append(v)
    return {"victims": sorted(victims, key=lambda v: v["workload"]), "victimsOrdered": False,
            "preemptedCount": len(targets)}


def run_flavor_assignment(case: dict[str, Any]) -> dict[str, Any]:
    op = case["operation"]
    snap, _ = _snapshot(case)
    for cq_name, usage in (case.get("usage") or {}).items():
        snap.cluster_queues[cq_name].add_usage_map(
            {_fr(k): parse_amount(_fr(k)[1], v, f"usage.{cq_name}.{k}") for k, v in usage.items()})
    wl = next(workload(w) for w in case.get("pending") or [] if w["name"] == op["workload"])
    oracle_cfg = op.get("preemptionOracle") or {}
    default = oracle_cfg.get("default") or {"possibility": "Preempt", "borrowAfter": 0}

    def oracle(cq, w, fr, qty):
        o = (oracle_cfg.get("overrides") or {}).get(f"{fr[0]}/{fr[1]}", default)
        return o["possibility"], o.get("borrowAfter", 0)

    a = FlavorAssigner(wl, snap.cluster_queues[op["clusterQueue"]], snap.flavors, oracle,
                       _config(case).fair_sharing).assign()
    out: dict[str, Any] = {
        "representativeMode": MODE_NAMES[a.representative_mode()],
        "podSets": [{"name": ps.name, "count": ps.count,
                     "flavors": {r: {"flavor": f.name, "mode": MODE_NAMES[f.mode]} for r, f in ps.flavors.items()},
                     "requests": {r: quantity_text(r, v) for r, v in ps.requests.items()},
                     "statusReasons": sorted(ps.reasons)} for ps in a.pod_sets],
        "borrowing": a.borrowing,
        "usage": {f"{fr[0]}/{fr[1]}": quantity_text(fr[1], v) for fr, v in a.usage.items()},
    }
    if a.no_fit_reason:
        out["noFitReason"] = a.no_fit_reason
    return out


def run_share_values(case: dict[str, Any]) -> dict[str, Any]:
    snap, _ = _snapshot(case)
    extra = {_fr(k): amount_of(_fr(k)[1], parse_quantity(v, k)) for k, v in
             (case["operation"].get("extraRequest") or {}).items()}
    nodes = []
    for kind, group in (("ClusterQueue", snap.cluster_queues), ("Cohort", snap.cohorts)):
        for name, node in sorted(group.items()):
            d = dominant_resource_share(node, extra)
            nodes.append({"name": name, "kind": kind, "weightedShare": d.rounded(),
                          "dominantResource": d.dominant, "borrowing": d.borrowing})
    return {"nodes": nodes}


_OPS = {"schedule": run_schedule, "preemption_targets": run_preemption_targets,
        "flavor_assignment": run_flavor_assignment, "share_values": run_share_values}


def run_kueue_case(case: dict[str, Any]) -> dict[str, Any]:
    op = (case.get("operation") or {}).get("type")
    if op not in _OPS:
        from conformance.plugin_cases import CaseError
        raise CaseError(f"kueue operation {op!r} is not known to the runner")
    return _OPS[op](case)
