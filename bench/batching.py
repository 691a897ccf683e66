"""The batching workloads (ResourceSaturation, HostPortConflict) with the gate
OpportunisticBatching on and off, from one `ksched bench` invocation.

The gate-on run is the result as before (its keys unchanged); the gate-off run
runs in a `ksched bench` child process (so its peak RSS is its own) with the same
flags plus OpportunisticBatching=false, and lands under the key `gate_off`, with
`batching_speedup` (pods/s on over off). A --feature-gates that sets
OpportunisticBatching itself runs that setting only."""
from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from framework.batching import GATE

BATCHING_WORKLOADS = ("ResourceSaturation", "HostPortConflict")


def batched_pods(pipeline: Any) -> int:
    """Pods placed on their hint so far (0 with the gate off)."""
    batching = pipeline.scheduler.algorithm.batching
    return sum(b.batched_pods for b in batching.profiles.values()) if batching is not None else 0


def pairs_with_gate_off(workload: str, gates: dict[str, bool]) -> bool:
    return workload in BATCHING_WORKLOADS and GATE not in gates


def gate_off_flag(flag: str | None) -> str:
    return f"{flag},{GATE}=false" if flag else f"{GATE}=false"


def with_gate_off(result: dict[str, Any], argv: list[str]) -> dict[str, Any]:
    """`result` (gate on) plus the same workload run with the gate off; `argv` are
    the child's `ksched bench` arguments (gate flag included)."""
    proc = subprocess.run([sys.executable, "-m", "transport.cli.main", "bench", *argv, "--json"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {**result, "gate_off": {"error": proc.stderr.strip().splitlines()[-1:]}}
    off = json.loads(proc.stdout.strip().splitlines()[-1])
    speedup = round(result["pods_per_s"] / off["pods_per_s"], 2) if off.get("pods_per_s") else None
    return {**result, "gate_off": off, "batching_speedup": speedup}


def rows_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """A result as table rows: itself, then its gate-off run if it has one."""
    off = result.get("gate_off")
    if not isinstance(off, dict):
        return [result]
    name = f"{result['workload']} ({GATE}=false)"
    if "error" in off:
        return [result, {"workload": name, "nodes": result.get("nodes"), "error": off["error"]}]
    return [result, {**off, "workload": name}]
