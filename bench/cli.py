"""The `ksched bench` subcommand's arguments; the runner (bench.runner) is imported only when it runs,
so every other `ksched` command starts without the pipeline's imports."""
from __future__ import annotations

import argparse

from bench.catalog import DEFAULT_GANG_SIZE, GANG_WORKLOADS, STORES, WORKLOADS


def main(args: argparse.Namespace) -> int:
    from bench.runner import main as run

    return run(args)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run a scheduler_perf-like workload (or 'all') and report pods/s")
    p.add_argument("workload", choices=sorted([*WORKLOADS, *GANG_WORKLOADS, "Admission", "all"]), metavar="WORKLOAD",
                   help="one of %(choices)s")
    p.add_argument("--nodes", type=int, default=100, help="nodes in the cluster")
    p.add_argument("--pods", type=int, default=None,
                   help="measured pods (default 1000; PreemptionBasic 500; PreemptionAsync 5000; Gang 3000; GangWorkload 8000; "
                        "ResourceSaturation, HostPortConflict and Churn one per node)")
    p.add_argument("--store", choices=STORES, default="sqlite",
                   help="sqlite (default: durable, in a temporary directory), memory, or etcd (--tcp only: a local etcd "
                        "under the daemon)")
    p.add_argument("--tcp", action="store_true", help="through a real `ksched serve` subprocess over msgpack TCP")
    p.add_argument("--gang-size", type=int, default=None, help=f"members per pod group (Gang*, default {DEFAULT_GANG_SIZE}; GangWorkload 8)")
    p.add_argument("--feature-gates", metavar="A=true,B=false", default=None,
                   help="run with these feature gates (as `ksched serve --feature-gates`)")
    p.add_argument("--completions", type=int, default=None,
                   help="Churn only: stop after this many completions (default: until every queued pod is bound)")
    p.add_argument("--no-metrics", action="store_true",
                   help="in process: record no scheduler metrics (as benches did before the daemon's metrics sink "
                        "was measured), to compare with earlier figures; the default records them as `ksched serve` does")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=main)
