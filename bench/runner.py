"""`ksched bench WORKLOAD`: a workload through the real actor pipeline, in one process.

Setup objects go in first and are scheduled to completion; then the measured pods
are submitted at once and the clock runs until the pipeline is idle. Reported:
pods bound among the measured ones, pods/s over the measured phase, and the
scheduling latency (first enqueue to bound) percentiles of the measured pods.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from actors.pipeline import Pipeline
from bench.workloads import WORKLOADS, Workload

APPLY_CHUNK = 500


async def _apply(p: Pipeline, objs: list[dict[str, Any]]) -> None:
    for i in range(0, len(objs), APPLY_CHUNK):
        await p.client.apply(objs[i:i + APPLY_CHUNK])


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


async def run_workload(w: Workload) -> dict[str, Any]:
    async with Pipeline(w.config) as p:
        await _apply(p, w.setup)
        await p.settle(None)
        sched = p.scheduler
        before = sched.stats.scheduled
        start = time.perf_counter()
        await _apply(p, w.measured)
        await p.settle(None)
        elapsed = time.perf_counter() - start
        names = {(m["metadata"].get("namespace", "default"), m["metadata"]["name"]) for m in w.measured}
        items, _ = await p.client.list("Pod")
        scheduled = sum(1 for i in items if (i["metadata"].get("namespace", "default"), i["metadata"]["name"]) in names
                        and (i.get("spec") or {}).get("nodeName"))
        measured = sched.stats.scheduled - before
        lat = [x * 1000 for x in list(sched.stats.latencies)[len(sched.stats.latencies) - measured:]]
        return {
            "workload": w.name,
            "scheduled": scheduled,
            "pods_per_s": round(scheduled / elapsed, 1) if elapsed > 0 else 0.0,
            "p50_ms": round(_percentile(lat, 0.50), 3),
            "p99_ms": round(_percentile(lat, 0.99), 3),
            "elapsed_s": round(elapsed, 3),
            "attempts": sched.stats.attempts,
        }


# Gang workloads run their own driver (bench/gang.py): they report groups per
# second and time to full placement beside the per-pod figures.
GANG_WORKLOADS = ("Gang", "GangContended")


def run_bench(workload: str, nodes: int, pods: int) -> dict[str, Any]:
    if nodes < 1:
        raise ValueError(f"--nodes: must be at least 1, got {nodes}")
    if pods < 1:
        raise ValueError(f"--pods: must be at least 1, got {pods}")
    if workload in GANG_WORKLOADS:
        from bench.gang import run_gang_bench

        return run_gang_bench(nodes, pods, contended=workload == "GangContended")
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; one of {', '.join([*WORKLOADS, *GANG_WORKLOADS])}")
    w = WORKLOADS[workload](nodes, pods)
    result = asyncio.run(run_workload(w))
    return {"workload": workload, "nodes": nodes, "pods": pods, **{k: v for k, v in result.items() if k != "workload"}}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run a scheduler_perf-like workload through the pipeline")
    p.add_argument("workload", choices=sorted([*WORKLOADS, *GANG_WORKLOADS]))
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--pods", type=int, default=1000)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    try:
        result = run_bench(args.workload, args.nodes, args.pods)
    except ValueError as e:
        print(f"ksched bench: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['workload']}: {result['scheduled']}/{result['pods']} pods scheduled on {result['nodes']} nodes, "
              f"{result['pods_per_s']} pods/s, p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms")
        if "groups_per_s" in result:
            print(f"  {result['groups_bound']}/{result['groups']} groups fully placed, {result['groups_per_s']} groups/s, "
                  f"time to full placement p50 {result['group_p50_ms']} ms, p99 {result['group_p99_ms']} ms")
    return 0
