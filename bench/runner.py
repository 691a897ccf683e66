"""`ksched bench WORKLOAD`: a scheduler_perf-like workload, measured honestly.

In process (default) the workload runs through the real actor pipeline with the
daemon's durable store (SQLite in a temporary directory, synchronous=FULL as
`ksched serve` uses it); `--store memory` swaps in the in-memory backend and the
result says so. `--tcp` starts a real `ksched serve` subprocess (bench/tcp.py)
and submits the workload over msgpack TCP with the client library.

Either way: setup objects (nodes, init pods) go in first and every init pod that
can bind is bound; then the measured pods are submitted and the clock runs until
the last measured pod that can bind is seen bound on a watch. Reported: pods
bound among the measured ones, pods/s over that span, latency (submission to
binding seen) percentiles, scheduling attempts during the measured phase, and
peak RSS of the process that schedules.

`ksched bench all` runs every workload, each in its own process (so peak RSS is
that workload's), and prints a table.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from typing import Any

from actors.pipeline import Pipeline
from actors.store import WatchEvent
from actors.store.backend import StoreBackend
from actors.store.memory import InMemoryBackend
from actors.store.sqlite import SQLiteBackend
from bench.measure import BindTracker, Key, peak_rss_mb, percentile
from bench.workloads import WORKLOADS, Workload

APPLY_CHUNK = 500
STORES = ("sqlite", "memory", "etcd")  # etcd: --tcp only (a local etcd under the daemon)
# Gang workloads run their own driver (bench/gang.py): they report groups per
# second and time to full placement beside the per-pod figures.
GANG_WORKLOADS = ("Gang", "GangContended")
# Measured pods when --pods is not given: upstream's 5000Nodes workloads measure
# 1,000 pods; PreemptionBasic measures 500 preemptors; Gang 1,000 groups of 3.
DEFAULT_PODS = {"PreemptionBasic": 500, "Gang": 3000, "GangContended": 3000}
DEFAULT_GANG_SIZE = 3
# Keys scripts rely on (DESIGN.md's Benchmarks); every result has them.
CONTRACT_KEYS = frozenset({"workload", "nodes", "pods", "scheduled", "pods_per_s", "p50_ms", "p99_ms"})
TABLE_ORDER = ("SchedulingBasic", "SchedulingPodAntiAffinity", "TopologySpreading", "Unschedulable",
               "PreemptionBasic", "Gang", "GangContended")


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj["metadata"]
    return meta.get("namespace", "default"), meta["name"]


def measured_keys(w: Workload) -> set[Key]:
    return {key_of(o) for o in w.measured if o["kind"] == "Pod"}


def setup_keys(w: Workload) -> set[Key]:
    return {key_of(o) for o in w.setup if o["kind"] == "Pod"}


def summarize(w: Workload, tracker: BindTracker, start: float, end: float | None, attempts: int,
              *, store: str, transport: str, rss_mb: float | None) -> dict[str, Any]:
    """The result object; the keys workload .. p99_ms are a contract for scripts."""
    keys = measured_keys(w)
    scheduled = tracker.bound(keys)
    elapsed = (end - start) if end is not None else 0.0
    lat = tracker.latencies_ms(keys)
    return {
        "workload": w.name,
        "nodes": sum(1 for o in w.setup if o["kind"] == "Node"),
        "pods": len(keys),
        "scheduled": scheduled,
        "pods_per_s": round(scheduled / elapsed, 1) if elapsed > 0 else 0.0,
        "p50_ms": round(percentile(lat, 0.50), 3),
        "p99_ms": round(percentile(lat, 0.99), 3),
        "elapsed_s": round(elapsed, 3),
        "attempts": attempts,
        "attempts_per_pod": round(attempts / len(keys), 2) if keys else 0.0,
        "expected": w.expected_bound,
        "init_pods": w.init_pods,
        "peak_rss_mb": rss_mb,
        "store": store,
        "transport": transport,
    }


def _backend(store: str, data_dir: str) -> StoreBackend:
    return SQLiteBackend(data_dir) if store == "sqlite" else InMemoryBackend()


async def _apply_tracked(apply: Any, objs: list[dict[str, Any]], tracker: BindTracker) -> None:
    for i in range(0, len(objs), APPLY_CHUNK):
        chunk = objs[i:i + APPLY_CHUNK]
        tracker.submitted([key_of(o) for o in chunk if o["kind"] == "Pod"])
        await apply(chunk)


async def run_in_process(w: Workload, store: str = "sqlite", stall_seconds: float = 60.0) -> dict[str, Any]:
    tracker = BindTracker(stall_seconds=stall_seconds)

    def observe(ev: WatchEvent) -> None:
        if ev.kind == "Pod":
            tracker.observe((ev.obj.namespace, ev.obj.name), ev.obj.node_name)

    with tempfile.TemporaryDirectory(prefix="ksched-bench-") as data_dir:
        async with Pipeline(w.config, backend=_backend(store, data_dir)) as p:
            await p.client.watch(observe, kinds=frozenset({"Pod"}))
            await _apply_tracked(p.client.apply, w.setup, tracker)
            await tracker.wait(setup_keys(w), w.init_pods - w.setup_pending)
            await p.settle(None)
            before = p.scheduler.stats.attempts
            keys = measured_keys(w)
            start = time.perf_counter()
            await _apply_tracked(p.client.apply, w.measured, tracker)
            done = asyncio.ensure_future(tracker.wait(keys, w.expected_bound))
            idle = asyncio.ensure_future(p.settle(None))
            await asyncio.wait({done, idle}, return_when=asyncio.FIRST_COMPLETED)
            for f in (done, idle):
                f.cancel()
            attempts = p.scheduler.stats.attempts - before
            end = tracker.last_bound(keys)
    return summarize(w, tracker, start, end, attempts, store=store, transport="in-process", rss_mb=peak_rss_mb())


def run_bench(workload: str, nodes: int, pods: int | None = None, *, store: str = "sqlite", tcp: bool = False,
              gang_size: int | None = None) -> dict[str, Any]:
    if nodes < 1:
        raise ValueError(f"--nodes: must be at least 1, got {nodes}")
    if pods is None:
        pods = DEFAULT_PODS.get(workload, 1000)
    if pods < 1:
        raise ValueError(f"--pods: must be at least 1, got {pods}")
    if store not in STORES:
        raise ValueError(f"--store: must be one of {', '.join(STORES)}, got {store!r}")
    if store == "etcd" and not tcp:
        raise ValueError("--store etcd: needs --tcp (the daemon runs on a local etcd)")
    if gang_size is not None and workload not in GANG_WORKLOADS:
        raise ValueError(f"--gang-size: only for {' and '.join(GANG_WORKLOADS)}, not {workload}")
    if workload in GANG_WORKLOADS:
        if tcp:
            raise ValueError(f"--tcp: not supported for {workload} (its driver completes pods in process)")
        size = DEFAULT_GANG_SIZE if gang_size is None else gang_size
        if size < 1:
            raise ValueError(f"--gang-size: must be at least 1, got {size}")
        from bench.gang import run_gang_bench

        return run_gang_bench(nodes, pods, gang_size=size, contended=workload == "GangContended", store=store)
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; one of {', '.join([*WORKLOADS, *GANG_WORKLOADS])}")
    w = WORKLOADS[workload](nodes, pods)
    if tcp:
        from bench.tcp import run_over_tcp

        return asyncio.run(run_over_tcp(w, store))
    return asyncio.run(run_in_process(w, store))


def run_all(nodes: int, pods: int | None, store: str, tcp: bool) -> list[dict[str, Any]]:
    """Every workload in its own `ksched bench` process (so peak RSS is that
    workload's); a failed run is a row with its error. In process, a last row
    runs SchedulingBasic over TCP, to set the daemon beside the in-process figure."""
    runs = [(name, tcp) for name in TABLE_ORDER if not (tcp and name in GANG_WORKLOADS)]
    if not tcp:
        runs.append(("SchedulingBasic", True))
    rows = []
    for name, over_tcp in runs:
        cmd = [sys.executable, "-m", "transport.cli.main", "bench", name, "--nodes", str(nodes), "--store", store, "--json"]
        if pods is not None:
            cmd += ["--pods", str(pods)]
        if over_tcp:
            cmd.append("--tcp")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode == 0:
            rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        else:
            rows.append({"workload": name, "nodes": nodes, "error": proc.stderr.strip().splitlines()[-1:]})
    return rows


COLUMNS = (("workload", "workload"), ("nodes", "nodes"), ("pods", "pods"), ("scheduled", "scheduled"),
           ("pods_per_s", "pods/s"), ("p50_ms", "p50 ms"), ("p99_ms", "p99 ms"),
           ("attempts_per_pod", "attempts/pod"), ("peak_rss_mb", "peak RSS MB"), ("store", "store"),
           ("transport", "transport"))


def format_table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table, one row per result."""
    head = "| " + " | ".join(title for _, title in COLUMNS) + " |"
    rule = "|" + "|".join("---" for _ in COLUMNS) + "|"
    lines = [head, rule]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['workload']} | {r['nodes']} | failed: {' '.join(r['error'])} |")
            continue
        lines.append("| " + " | ".join(str(r.get(k, "")) for k, _ in COLUMNS) + " |")
    return "\n".join(lines)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run a scheduler_perf-like workload (or 'all') and report pods/s")
    p.add_argument("workload", choices=sorted([*WORKLOADS, *GANG_WORKLOADS, "all"]))
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--pods", type=int, default=None,
                   help="measured pods (default 1000; PreemptionBasic 500; Gang 3000)")
    p.add_argument("--store", choices=STORES, default="sqlite",
                   help="sqlite (default: durable, in a temporary directory) or memory")
    p.add_argument("--tcp", action="store_true", help="through a real `ksched serve` subprocess over msgpack TCP")
    p.add_argument("--gang-size", type=int, default=None, help=f"members per pod group (Gang*, default {DEFAULT_GANG_SIZE})")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    try:
        if args.workload == "all":
            if args.gang_size is not None:
                raise ValueError("--gang-size: give a Gang workload, not 'all'")
            if args.nodes < 1:
                raise ValueError(f"--nodes: must be at least 1, got {args.nodes}")
            rows = run_all(args.nodes, args.pods, args.store, args.tcp)
            print(json.dumps(rows) if args.json else format_table(rows))
            return 1 if any("error" in r for r in rows) else 0
        result = run_bench(args.workload, args.nodes, args.pods, store=args.store, tcp=args.tcp,
                           gang_size=args.gang_size)
    except ValueError as e:
        print(f"ksched bench: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['workload']} ({result['transport']}, {result['store']} store): "
              f"{result['scheduled']}/{result['pods']} pods scheduled on {result['nodes']} nodes, "
              f"{result['pods_per_s']} pods/s, p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, "
              f"{result['attempts_per_pod']} attempts/pod, peak RSS {result['peak_rss_mb']} MB")
        if "groups_per_s" in result:
            print(f"  {result['groups_bound']}/{result['groups']} groups fully placed, {result['groups_per_s']} groups/s, "
                  f"{result['ms_per_group']} ms per group, time to full placement p50 {result['group_p50_ms']} ms, "
                  f"p99 {result['group_p99_ms']} ms")
    return 0
