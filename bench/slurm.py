"""ksched and Slurm side by side: `python -m bench.slurm [--shapes ...] [--json]`.

The same four shapes run on ksched (in process, or with --tcp through a real
`ksched serve`; durable SQLite store; through the bench harness) and on a throwaway Slurm cluster on loopback (bench/slurm_cluster.py:
one slurmctld and one slurmd per emulated node), in one run, and one table shows
both:

- jobs400: 400 one-CPU jobs on 100 nodes x 4 CPU (all fit at once);
- gangs: 20 gangs of 5 members x 4 CPU on 100 nodes (ksched: pod groups under
  Coscheduling; Slurm: jobs of -N5 --ntasks-per-node=1 -c4, all-or-nothing by nature);
- churn: 100 nodes full of 400 one-CPU jobs, 100 more queued; 100 completions one at
  a time (ksched: a bound pod deleted; Slurm: a running job cancelled), each timed
  until the next queued job is seen started;
- jobs2000: 2,000 one-CPU jobs on 1,000 nodes.

Slurm's figures: wall time from submission until no job is pending (squeue, polled
back to back: each poll is one RPC) and Slurm's own scheduling time from sdiag (main
and backfill cycles: cycles x mean cycle), its counters reset before each shape.
Jobs are submitted as one job array per shape (ksched takes the pods in one apply).
Running jobs are `sleep` (`true` for jobs2000, where 2,000 job steps of ~6 MB each
besides 1,000 slurmd of ~7 MB would not fit beside the other work on this machine).
Not part of `make test`: it takes minutes and, at 1,000 nodes, several GB.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

from bench.churn import run_churn, run_churn_over_tcp
from bench.gang import run_gang
from bench.harness import run_in_process
from bench.measure import percentile
from bench.slurm_cluster import SlurmCluster, SlurmUnavailable, ensure_installed
from bench.tcp import run_over_tcp
from bench.workloads import BenchWorkload, churn, node, pod

CPUS = 4
LONG = "sleep 3600"


@dataclass(frozen=True)
class Shape:
    name: str
    nodes: int
    what: str


SHAPES = {
    "jobs400": Shape("jobs400", 100, "400 one-CPU jobs, 100 nodes x 4 CPU"),
    "gangs": Shape("gangs", 100, "20 gangs of 5 x 4 CPU, 100 nodes"),
    "churn": Shape("churn", 100, "100 completions with 100 queued, 100 nodes full"),
    "jobs2000": Shape("jobs2000", 1000, "2,000 one-CPU jobs, 1,000 nodes x 4 CPU"),
}


# --- ksched ----------------------------------------------------------------------------------------

def _one_cpu_jobs(name: str, nodes: int, jobs: int) -> BenchWorkload:
    return BenchWorkload(name, None, [node(i) for i in range(nodes)],
                    [pod(f"job-{i}", cpu="1", memory="100Mi") for i in range(jobs)])


def run_ksched(shape: str, tcp: bool = False) -> dict[str, Any]:
    """ksched's side of a shape, durable store; with `tcp` through a real `ksched serve`
    (the gang driver runs in process only)."""
    burst = run_over_tcp if tcp else run_in_process
    if shape == "jobs400":
        return asyncio.run(burst(_one_cpu_jobs("jobs400", 100, 400), "sqlite"))
    if shape == "jobs2000":
        return asyncio.run(burst(_one_cpu_jobs("jobs2000", 1000, 2000), "sqlite"))
    if shape == "gangs":
        return asyncio.run(run_gang(100, 100, gang_size=5, store="sqlite", cpu="4"))
    return asyncio.run((run_churn_over_tcp if tcp else run_churn)(churn(100, 100), "sqlite"))


# --- Slurm -----------------------------------------------------------------------------------------

def sdiag_seconds(text: str) -> dict[str, float]:
    """Seconds spent in the main and backfill scheduling cycles since the last reset
    (cycles x mean cycle; sdiag reports microseconds)."""
    out = {"main_s": 0.0, "backfill_s": 0.0, "main_cycles": 0, "backfill_cycles": 0}
    main, _, backfill = text.partition("Backfilling stats")
    for part, key in ((main, "main"), (backfill, "backfill")):
        cycles = re.search(r"Total cycles:\s+(\d+)", part)
        mean = re.search(r"Mean cycle:\s+(\d+)", part)
        n = int(cycles.group(1)) if cycles else 0
        out[f"{key}_cycles"] = n
        out[f"{key}_s"] = round(n * int(mean.group(1)) / 1e6, 3) if mean and n else 0.0
    return out


def _count(c: SlurmCluster, *args: str) -> int:
    return len(c.run(["squeue", "-h", "-r", "-o", "%i", *args], check=False).split())


def _until(check: Callable[[], bool], what: str, seconds: float = 600.0) -> None:
    """Poll back to back (each check is an RPC to slurmctld); bounded."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise SlurmUnavailable(f"timed out waiting for {what}")


def _submit_and_wait(c: SlurmCluster, jobs: int, *sbatch: str) -> tuple[str, float]:
    t0 = time.perf_counter()
    job = c.sbatch(f"--array=0-{jobs - 1}", *sbatch)
    _until(lambda: _count(c, "-t", "PD", "-j", job) == 0, f"job array {job} to start")
    return job, time.perf_counter() - t0


def slurm_burst(c: SlurmCluster, jobs: int, *sbatch: str) -> dict[str, Any]:
    c.run(["sdiag", "-r"])
    _, wall = _submit_and_wait(c, jobs, *sbatch)
    sched = sdiag_seconds(c.run(["sdiag"]))
    return {"jobs": jobs, "wall_s": round(wall, 3), "jobs_per_s": round(jobs / wall, 1) if wall else 0.0, **sched}


def slurm_churn(c: SlurmCluster, nodes: int, queued: int) -> dict[str, Any]:
    running, _ = _submit_and_wait(c, nodes * CPUS, "-c1", "--wrap", LONG)
    waiting = c.sbatch(f"--array=0-{queued - 1}", "-c1", "--wrap", LONG)
    # every queued job considered once: a pending reason other than None
    _until(lambda: "None" not in c.run(["squeue", "-h", "-r", "-j", waiting, "-o", "%r"], check=False).split(),
           "the queued jobs to be considered")
    c.run(["sdiag", "-r"])
    waits: list[float] = []
    t_start = time.perf_counter()
    for i in range(queued):
        started = _count(c, "-j", waiting, "-t", "R")
        t0 = time.perf_counter()
        c.run(["scancel", f"{running}_{i}"])
        _until(lambda: _count(c, "-j", waiting, "-t", "R") > started, "the next queued job to start", 120.0)
        waits.append((time.perf_counter() - t0) * 1000)
    wall = time.perf_counter() - t_start
    sched = sdiag_seconds(c.run(["sdiag"]))
    return {"completions": queued, "wall_s": round(wall, 3), "completions_per_s": round(queued / wall, 1),
            "completion_p50_ms": round(percentile(waits, 0.5), 1),
            "completion_p99_ms": round(percentile(waits, 0.99), 1), **sched}


def run_slurm(shape: str, c: SlurmCluster) -> dict[str, Any]:
    if shape == "jobs400":
        return slurm_burst(c, 400, "-c1", "--wrap", LONG)
    if shape == "jobs2000":
        return slurm_burst(c, 2000, "-c1", "--wrap", "true")
    if shape == "gangs":
        return slurm_burst(c, 20, "-N5", "--ntasks-per-node=1", f"-c{CPUS}", "--wrap", LONG)
    return slurm_churn(c, 100, 100)


# --- one run, both sides ---------------------------------------------------------------------------

def run_side_by_side(shapes: list[str], tcp: bool = False) -> list[dict[str, Any]]:
    ensure_installed()
    rows = []
    by_size: dict[int, list[str]] = {}
    for s in shapes:
        by_size.setdefault(SHAPES[s].nodes, []).append(s)
    for nodes, group in by_size.items():
        cluster = SlurmCluster(nodes=nodes, cpus=CPUS)
        t0 = time.perf_counter()
        try:
            cluster.start()
            up = round(time.perf_counter() - t0, 1)
            for s in group:
                print(f"[{s}] ksched ...", file=sys.stderr, flush=True)
                k = run_ksched(s, tcp)
                print(f"[{s}] Slurm ({nodes} slurmd, up in {up} s) ...", file=sys.stderr, flush=True)
                sl = run_slurm(s, cluster)
                cluster.cancel_all()
                rows.append({"shape": s, "what": SHAPES[s].what, "slurmd": nodes, "ksched": k, "slurm": sl})
        finally:
            cluster.stop()
    return rows


def format_rows(rows: list[dict[str, Any]]) -> str:
    head = ("| shape | ksched wall s | ksched rate | ksched attempts/pod | Slurm wall s | Slurm rate | "
            "Slurm scheduling s (sdiag main + backfill) |")
    lines = [head, "|---|---|---|---|---|---|---|"]
    for r in rows:
        k, s = r["ksched"], r["slurm"]
        if r["shape"] == "churn":
            krate = f"{k['completions_per_s']} completions/s (p50 {k['completion_p50_ms']} ms, p99 {k['completion_p99_ms']} ms)"
            srate = f"{s['completions_per_s']} completions/s (p50 {s['completion_p50_ms']} ms, p99 {s['completion_p99_ms']} ms)"
            kwall = round(k["completions"] / k["completions_per_s"], 3) if k["completions_per_s"] else "-"
        else:
            krate = f"{k['pods_per_s']} pods/s"
            srate = f"{s['jobs_per_s']} jobs/s"
            kwall = k["elapsed_s"]
        krate += f", {k.get('transport', 'in-process')}"
        lines.append(f"| {r['what']} | {kwall} | {krate} | {k['attempts_per_pod']} | {s['wall_s']} | {srate} | "
                     f"{s['main_s']} + {s['backfill_s']} ({s['main_cycles']} + {s['backfill_cycles']} cycles) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.slurm", description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES)}")
    ap.add_argument("--tcp", action="store_true",
                    help="ksched through a real `ksched serve` subprocess (gangs stay in process)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    shapes = [s for s in args.shapes.split(",") if s]
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        print(f"bench.slurm: --shapes: unknown shape {unknown[0]!r}; one of {', '.join(SHAPES)}", file=sys.stderr)
        return 2
    try:
        rows = run_side_by_side(shapes, args.tcp)
    except SlurmUnavailable as e:
        print(f"bench.slurm: {e}", file=sys.stderr)
        return 1
    print(json.dumps(rows) if args.json else format_rows(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
