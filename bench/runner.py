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

In process the pipeline records the daemon's metrics (a fresh
transport.http.metrics.SchedulerMetrics per run, as `ksched serve` hands its own), so
the figures include what the daemon pays for them; `--no-metrics` runs with
NO_METRICS, as every in-process bench did before, to compare with earlier figures.
The result says which (`"metrics": true/false`).

`ksched bench all` runs every workload, each in its own process (so peak RSS is
that workload's), and prints a table.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from typing import Any

from bench.batching import gate_off_flag, pairs_with_gate_off, rows_of, with_gate_off
from bench.churn import run_churn, run_churn_over_tcp
from bench.gang import run_gang_bench
from bench.harness import WITH_METRICS, run_in_process
from bench.tcp import run_over_tcp
from bench.dra_steady import run_dra_steady
from bench.catalog import DEFAULT_GANG_SIZE, GANG_WORKLOADS, STORES, WORKLOADS
from bench.dra_workloads import STEADY_STATE
from bench.workloads import API

from framework.features import FeatureGateError, check_settable, parse_gate_flag

CHURN = "Churn"  # its own driver too (bench/churn.py): completions one at a time
# Measured pods when --pods is not given: upstream's 5000Nodes workloads measure
# 1,000 pods; PreemptionBasic measures 500 preemptors; PreemptionAsync 5,000 default
# pods; Gang 1,000 groups of 3; GangWorkload (scheduling.k8s.io PodGroups) 1,000 groups
# of 8. The batching workloads and Churn measure one pod per
# node (upstream's batching suite runs as many pods as nodes; Churn queues a node's worth).
DEFAULT_PODS = {"PreemptionBasic": 500, "PreemptionAsync": 5000, "Gang": 3000, "GangContended": 3000,
                "GangWorkload": 8000}
# Members per group when --gang-size is not given.
GANG_APIS = {"GangWorkload": "workload", "GangTopology": "topology"}  # the rest: Coscheduling
GANG_SIZES = {"GangWorkload": 8, "GangTopology": 8}
PODS_PER_NODE_DEFAULT = ("ResourceSaturation", "HostPortConflict", CHURN)
# Keys scripts rely on (DESIGN.md's Benchmarks); every result has them.
CONTRACT_KEYS = frozenset({"workload", "nodes", "pods", "scheduled", "pods_per_s", "p50_ms", "p99_ms"})
TABLE_ORDER = ("SchedulingBasic", "SchedulingPodAntiAffinity", "TopologySpreading", "Unschedulable",
               "PreemptionBasic", "PreemptionAsync", "ResourceSaturation", "HostPortConflict", "Churn",
               "Gang", "GangContended", "GangWorkload")


def with_gates(config: dict[str, Any] | None, gates: dict[str, bool]) -> dict[str, Any] | None:
    """A workload's scheduler configuration with these feature gates over its own."""
    if not gates:
        return config
    cfg = dict(config) if config is not None else {"apiVersion": API, "kind": "KubeSchedulerConfiguration"}
    cfg["featureGates"] = {**(cfg.get("featureGates") or {}), **gates}
    return cfg


def parse_gates(flag: str | None) -> dict[str, bool]:
    """--feature-gates, read and checked as `ksched serve` reads it."""
    if not flag:
        return {}
    try:
        gates = parse_gate_flag(flag)
        check_settable(gates)
    except FeatureGateError as e:
        raise ValueError(f"--feature-gates: {e}") from None
    return gates


def default_pods(workload: str, nodes: int) -> int:
    return nodes if workload in PODS_PER_NODE_DEFAULT else DEFAULT_PODS.get(workload, 1000)


def run_bench(workload: str, nodes: int, pods: int | None = None, *, store: str = "sqlite", tcp: bool = False,
              gang_size: int | None = None, feature_gates: str | None = None,
              completions: int | None = None, metrics: bool = True) -> dict[str, Any]:
    if nodes < 1:
        raise ValueError(f"--nodes: must be at least 1, got {nodes}")
    if pods is None and workload != "Admission":
        pods = default_pods(workload, nodes)
    if pods is not None and pods < 1:
        raise ValueError(f"--pods: must be at least 1, got {pods}")
    if store not in STORES:
        raise ValueError(f"--store: must be one of {', '.join(STORES)}, got {store!r}")
    if store == "etcd" and not tcp:
        raise ValueError("--store etcd: needs --tcp (the daemon runs on a local etcd)")
    if completions is not None and workload != CHURN:
        raise ValueError(f"--completions: only for {CHURN}, not {workload}")
    if completions is not None and completions < 1:
        raise ValueError(f"--completions: must be at least 1, got {completions}")
    if gang_size is not None and workload not in GANG_WORKLOADS:
        raise ValueError(f"--gang-size: only for {' and '.join(GANG_WORKLOADS)}, not {workload}")
    if not metrics and tcp:
        raise ValueError("--no-metrics: not with --tcp (the daemon always records its metrics)")
    if not metrics and workload == "Admission":
        raise ValueError("--no-metrics: not for Admission (it runs no scheduler pipeline)")
    if workload == "Admission":
        from bench.admission import run_admission_bench

        return run_admission_bench(pending=pods if pods is not None else 10_000)
    gates = parse_gates(feature_gates)
    switch = WITH_METRICS.set(metrics)
    try:
        result = {**_run(workload, nodes, pods, store, tcp, gang_size, gates, completions), "metrics": metrics}
    finally:
        WITH_METRICS.reset(switch)
    result = {**result, "feature_gates": gates} if gates else result
    if pairs_with_gate_off(workload, gates):  # bench/batching.py: the same workload with the gate off
        argv = [workload, "--nodes", str(nodes), "--pods", str(pods), "--store", store,
                "--feature-gates", gate_off_flag(feature_gates), *(["--tcp"] if tcp else []),
                *([] if metrics else ["--no-metrics"])]
        result = with_gate_off(result, argv)
    return result


def _run(workload: str, nodes: int, pods: int, store: str, tcp: bool, gang_size: int | None,
         gates: dict[str, bool], completions: int | None = None) -> dict[str, Any]:
    if workload in GANG_WORKLOADS:
        if tcp:
            raise ValueError(f"--tcp: not supported for {workload} (its driver completes pods in process)")
        size = GANG_SIZES.get(workload, DEFAULT_GANG_SIZE) if gang_size is None else gang_size
        if size < 1:
            raise ValueError(f"--gang-size: must be at least 1, got {size}")
        return run_gang_bench(nodes, pods, gang_size=size, contended=workload == "GangContended", store=store,
                              feature_gates=gates, api=GANG_APIS.get(workload, "coscheduling"))
    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; one of {', '.join([*WORKLOADS, *GANG_WORKLOADS])}")
    w = WORKLOADS[workload](nodes, pods)
    w.config = with_gates(w.config, gates)
    if workload == CHURN:
        if store == "etcd":
            raise ValueError(f"--store etcd: not supported for {workload} (sqlite or memory)")
        return asyncio.run(run_churn_over_tcp(w, store, completions=completions) if tcp
                           else run_churn(w, store, completions=completions))
    if workload == STEADY_STATE:
        if tcp:
            raise ValueError(f"--tcp: not supported for {workload} (its driver deletes and creates pods in process)")
        return asyncio.run(run_dra_steady(w, store))
    if tcp:
        return asyncio.run(run_over_tcp(w, store))
    return asyncio.run(run_in_process(w, store))


def run_all(nodes: int, pods: int | None, store: str, tcp: bool, feature_gates: str | None = None,
            metrics: bool = True) -> list[dict[str, Any]]:
    """Every workload in its own `ksched bench` process (so peak RSS is that
    workload's); a failed run is a row with its error. In process, a last row
    runs SchedulingBasic over TCP, to set the daemon beside the in-process figure."""
    runs = [(name, tcp) for name in TABLE_ORDER if not (tcp and name in GANG_WORKLOADS)]
    if not tcp and metrics:  # the daemon records its metrics: no TCP row beside a --no-metrics table
        runs.append(("SchedulingBasic", True))
    rows = []
    for name, over_tcp in runs:
        cmd = [sys.executable, "-m", "transport.cli.main", "bench", name, "--nodes", str(nodes), "--store", store, "--json"]
        if pods is not None:
            cmd += ["--pods", str(pods)]
        if over_tcp:
            cmd.append("--tcp")
        if feature_gates:
            cmd += ["--feature-gates", feature_gates]
        if not metrics:
            cmd.append("--no-metrics")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode == 0:
            rows.extend(rows_of(json.loads(proc.stdout.strip().splitlines()[-1])))
        else:
            rows.append({"workload": name, "nodes": nodes, "error": proc.stderr.strip().splitlines()[-1:]})
    return rows


COLUMNS = (("workload", "workload"), ("nodes", "nodes"), ("pods", "pods"), ("scheduled", "scheduled"),
           ("pods_per_s", "pods/s"), ("p50_ms", "p50 ms"), ("p99_ms", "p99 ms"),
           ("attempts_per_pod", "attempts/pod"), ("bind_p50_ms", "bind p50 ms"), ("bind_p99_ms", "bind p99 ms"),
           ("peak_rss_mb", "peak RSS MB"), ("store", "store"),
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


def main(args: argparse.Namespace) -> int:
    try:
        if args.workload == "all":
            if args.gang_size is not None:
                raise ValueError("--gang-size: give a Gang workload, not 'all'")
            if args.nodes < 1:
                raise ValueError(f"--nodes: must be at least 1, got {args.nodes}")
            parse_gates(args.feature_gates)
            if args.no_metrics and args.tcp:
                raise ValueError("--no-metrics: not with --tcp (the daemon always records its metrics)")
            rows = run_all(args.nodes, args.pods, args.store, args.tcp, args.feature_gates, not args.no_metrics)
            print(json.dumps(rows) if args.json else format_table(rows))
            return 1 if any("error" in r for r in rows) else 0
        result = run_bench(args.workload, args.nodes, args.pods, store=args.store, tcp=args.tcp,
                           gang_size=args.gang_size, feature_gates=args.feature_gates,
                           completions=args.completions, metrics=not args.no_metrics)
    except ValueError as e:
        print(f"ksched bench: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['workload']} ({result['transport']}, {result['store']} store"
              f"{'' if result.get('metrics', True) else ', no metrics'}): "
              f"{result['scheduled']}/{result['pods']} pods scheduled on {result['nodes']} nodes, "
              f"{result['pods_per_s']} pods/s, p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, "
              f"{result['attempts_per_pod']} attempts/pod, assume-to-bound p50 {result['bind_p50_ms']} ms "
              f"p99 {result['bind_p99_ms']} ms, peak RSS {result['peak_rss_mb']} MB")
        if "completions_per_s" in result:
            print(f"  {result['completions']} completions, {result['completions_per_s']} completions/s, "
                  f"{result['failed_attempts_per_completion']} failed attempts per completion, completion to next "
                  f"bind p50 {result['completion_p50_ms']} ms, p99 {result['completion_p99_ms']} ms, "
                  f"{result['pods_woken_per_completion']} pods and {result['classes_woken_per_completion']} "
                  f"classes woken per completion")
        off = result.get("gate_off")
        if isinstance(off, dict) and "pods_per_s" in off:
            print(f"  OpportunisticBatching on: {result.get('batched_pods', 0)} pods placed on their hint; off: "
                  f"{off['pods_per_s']} pods/s, p50 {off['p50_ms']} ms, p99 {off['p99_ms']} ms, "
                  f"{off['attempts_per_pod']} attempts/pod (on/off {result['batching_speedup']}x)")
        if "admissions_per_s" in result:
            print(f"  {result['admissions_per_s']} admissions/s over {result['cycles']} cycles; one cycle (ms) by "
                  f"ClusterQueues and pending workloads: {result['cycle_ms']}")
        if "groups_per_s" in result:
            print(f"  {result['groups_bound']}/{result['groups']} groups fully placed, {result['groups_per_s']} groups/s, "
                  f"{result['ms_per_group']} ms per group, time to full placement p50 {result['group_p50_ms']} ms, "
                  f"p99 {result['group_p99_ms']} ms")
    return 0
