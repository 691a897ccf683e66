"""`ksched bench Admission`: Kueue's admission layer at scale (issue 20).

100 ClusterQueues in 10 cohorts (nominal 10 cpu each, borrowing within the cohort),
10,000 pending one-pod workloads of 1 cpu: quota for a tenth of them. Cycles run
until nothing more fits; then admitted workloads complete a cycle's worth at a time,
freeing quota, until every workload has been admitted. Measured is the admission
actor's model (framework.kueue.manager.AdmissionState: queues, quota cache, the
cycle, status conditions), not the store writes or pod binding around it.

Reported: admissions_per_s (admissions over the time spent in cycles and
completions), and the cost of one admission cycle: the median cycle time at
(ClusterQueues, pending) = (10, 1,000), (10, 10,000), (100, 1,000), (100, 10,000)
with every queue's head unable to fit — so each cycle does the full work of
nominating every head — to show it grows with ClusterQueues, not pending workloads.
"""
from __future__ import annotations

import statistics
import time
from typing import Any

from bench.measure import peak_rss_mb
from framework.kueue.api import parse_cluster_queue, parse_cohort, parse_local_queue, parse_resource_flavor
from framework.kueue.manager import AdmissionState
from framework.kueue.workload import parse_workload

NS = 1_000_000_000


def _state(cqs: int, cohorts: int, nominal: str) -> AdmissionState:
    s = AdmissionState()
    s.set_objects(
        [parse_resource_flavor({"metadata": {"name": "default"}})],
        [parse_cluster_queue({"metadata": {"name": f"cq{i}"}, "spec": {
            "cohortName": f"co{i % cohorts}", "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": nominal}]}]}]}}) for i in range(cqs)],
        [parse_cohort({"metadata": {"name": f"co{j}"}}) for j in range(cohorts)],
        [parse_local_queue({"metadata": {"name": f"lq{i}", "namespace": "bench"}, "spec": {"clusterQueue": f"cq{i}"}})
         for i in range(cqs)])
    return s


def _workload(i: int, cqs: int, cpu: str = "1") -> Any:
    return parse_workload({"metadata": {"name": f"w{i}", "namespace": "bench", "uid": f"w{i}", "creationTimestamp": i},
                           "spec": {"queueName": f"lq{i % cqs}", "podSets": [{"name": "main", "count": 1, "template": {
                               "spec": {"containers": [{"resources": {"requests": {"cpu": cpu}}}]}}}]}})


def run_admissions(cqs: int = 100, cohorts: int = 10, pending: int = 10_000) -> dict[str, Any]:
    s = _state(cqs, cohorts, "10")
    for i in range(pending):
        s.add_workload(_workload(i, cqs))
    now = 0
    admitted = cycles = 0
    spent = 0.0
    while admitted < pending:
        t0 = time.perf_counter()
        report = s.schedule(now)
        spent += time.perf_counter() - t0
        cycles += 1
        now += 1
        if report.admitted:
            admitted += len(report.admitted)
            continue
        holding = [w for name in s.cluster_queues for w in s.holding(name)]
        if not holding:
            break
        t0 = time.perf_counter()
        for w in holding[: max(1, len(holding) // 10)]:  # completions free a tenth of the quota in use
            s.finish(w.key, now)
        spent += time.perf_counter() - t0
    return {"admitted": admitted, "cycles": cycles, "seconds": spent}


def cycle_cost(cqs: int, pending: int, repeats: int = 20) -> float:
    """Median ms of a cycle in which every head is nominated and does not fit."""
    s = _state(cqs, max(1, cqs // 10), "1")
    for i in range(pending):
        s.add_workload(_workload(i, cqs, "11"))  # beyond what a cohort of ten 1-cpu queues holds
    times = []
    for r in range(repeats):
        for q in s.queues.values():
            q.requeue_inadmissible()  # the heads come back: a full cycle each time
        t0 = time.perf_counter()
        s.schedule(r)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


GRID = ((10, 100), (1_000, 10_000))  # (ClusterQueues, pending workloads) for the cycle cost


def run_admission_bench(cqs: int = 100, pending: int = 10_000, grid: tuple = GRID) -> dict[str, Any]:
    r = run_admissions(cqs, max(1, cqs // 10), pending)
    costs = {f"{c}cq_{p}pending": round(cycle_cost(c, p), 3) for c in grid[0] for p in grid[1]}
    return {
        "workload": "Admission", "nodes": 0, "pods": pending, "scheduled": r["admitted"],
        "pods_per_s": round(r["admitted"] / r["seconds"], 1) if r["seconds"] else 0.0, "p50_ms": 0.0, "p99_ms": 0.0,
        "admissions_per_s": round(r["admitted"] / r["seconds"], 1) if r["seconds"] else 0.0,
        "cycles": r["cycles"], "elapsed_s": round(r["seconds"], 3), "cluster_queues": cqs,
        "cycle_ms": costs, "peak_rss_mb": peak_rss_mb(), "store": "none", "transport": "in-process",
        "attempts_per_pod": 0.0, "bind_p50_ms": 0.0, "bind_p99_ms": 0.0,
    }
