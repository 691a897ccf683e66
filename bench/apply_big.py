"""How long `ksched apply -f` takes for a big manifest (issue 22: 20,000 pods,
4.9 MB of YAML), end to end: a real `ksched serve` (SQLite in a temporary
directory) with nodes for the pods to land on, and the real CLI as a subprocess.

    python -m bench.apply_big [--pods 20000] [--nodes 200] [--chunk-size 500] [--json] [--profile DIR]

Reports the file's size, the CLI's wall time (parsing, sending, every line
printed), and the parse alone (transport.cli.manifests, in this process); the
CPU seconds (user + system) the CLI and the daemon spent during the apply, which
depend less on what else the machine runs than wall time does; how many pods the
scheduler had bound when the CLI was done, and when all were bound (from the
apply's start). Figures on a
shared machine are noisy: report them with the load average. With --profile both
processes run under cProfile and leave daemon.prof and cli.prof in DIR (the
daemon's main thread only: SQLite's thread is not in it), and the daemon stops
when the CLI is done (allBoundSeconds is then null).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

POD = """apiVersion: v1
kind: Pod
metadata:
  name: pod-{i}
  namespace: default
  labels:
    app: web
    tier: frontend
spec:
  containers:
  - name: app
    image: nginx:1.25
    resources:
      requests:
        cpu: 100m
        memory: 128Mi
"""
NODE = """apiVersion: v1
kind: Node
metadata:
  name: node-{i}
status:
  allocatable: {{cpu: "64", memory: 256Gi, pods: "250"}}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(*args: str, profile: Path | None = None) -> list[str]:
    prof = ["-m", "cProfile", "-o", str(profile)] if profile is not None else []
    return [sys.executable, *prof, "-m", "transport.cli.main", *args]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a running process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


BIND_WAIT_SECONDS = 300.0  # how long the bench waits, after the apply, for every pod to be bound


def _scheduled(server: str) -> int:
    """Pods the daemon's scheduler has bound so far (its stats)."""
    from transport.client.tcp import SyncClient

    with SyncClient(server) as c:
        return int(c.stats()["scheduler"]["scheduled"])


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _wait_ready(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stderr is not None
    for line in proc.stderr:
        if b"ksched serving on" in line:
            return
    raise RuntimeError(f"ksched serve exited with {proc.wait()}")


def run(pods: int, nodes: int, chunk_size: int, profile: Path | None = None) -> dict[str, float | int]:
    from transport.cli.manifests import iter_manifests

    with tempfile.TemporaryDirectory(prefix="ksched-apply-") as tmp:
        manifest = Path(tmp) / "pods.yaml"
        manifest.write_text("---\n".join(POD.format(i=i) for i in range(pods)))
        (Path(tmp) / "nodes.yaml").write_text("---\n".join(NODE.format(i=i) for i in range(nodes)))
        t = time.perf_counter()
        parsed = sum(1 for _ in iter_manifests([str(manifest)]))
        parse_s = time.perf_counter() - t
        assert parsed == pods
        server = f"127.0.0.1:{_free_port()}"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        daemon = subprocess.Popen(_cli("serve", "--data-dir", str(Path(tmp) / "data"), "--listen", server,
                                       "--http", f"127.0.0.1:{_free_port()}", "--log-level", "WARNING",
                                       profile=profile / "daemon.prof" if profile else None),
                                  cwd=ROOT, env=env, stderr=subprocess.PIPE)
        try:
            _wait_ready(daemon)
            subprocess.run(_cli("apply", "-f", str(Path(tmp) / "nodes.yaml"), "--server", server), cwd=ROOT, env=env,
                           check=True, capture_output=True)
            daemon_cpu, cli_cpu = _cpu_seconds(daemon.pid), _children_cpu()
            t = time.perf_counter()
            out = subprocess.run(_cli("apply", "-f", str(manifest), "--server", server, "--chunk-size",
                                      str(chunk_size), profile=profile / "cli.prof" if profile else None),
                                 cwd=ROOT, env=env, check=True, capture_output=True, text=True)
            apply_s = time.perf_counter() - t
            daemon_cpu, cli_cpu = _cpu_seconds(daemon.pid) - daemon_cpu, _children_cpu() - cli_cpu
            scheduled_at_end, bound_s = _scheduled(server), None
            while profile is None and time.perf_counter() - t < BIND_WAIT_SECONDS:  # a profile is of the apply
                if _scheduled(server) >= pods:
                    bound_s = time.perf_counter() - t
                    break
                time.sleep(1.0)
            assert out.stdout.count(" created") == pods, out.stderr
        finally:
            daemon.terminate()
            daemon.wait(timeout=60)
        return {"pods": pods, "nodes": nodes, "bytes": manifest.stat().st_size, "chunkSize": chunk_size,
                "applySeconds": round(apply_s, 2), "parseSeconds": round(parse_s, 2),
                "cliCpuSeconds": round(cli_cpu, 2), "daemonCpuSeconds": round(daemon_cpu, 2),
                "scheduledAtEnd": scheduled_at_end,
                "allBoundSeconds": round(bound_s, 2) if bound_s is not None else None,
                "loadAverage": round(os.getloadavg()[0], 2)}


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.apply_big", description=__doc__.splitlines()[0])
    p.add_argument("--pods", type=int, default=20_000, help="pods in the manifest (default 20000)")
    p.add_argument("--nodes", type=int, default=200, help="nodes registered first (default 200)")
    p.add_argument("--chunk-size", type=int, default=500, help="ksched apply --chunk-size (default 500)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--profile", type=Path, metavar="DIR",
                   help="run the daemon and the CLI under cProfile; daemon.prof and cli.prof go to DIR")
    args = p.parse_args()
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
        args.profile = args.profile.resolve()
    r = run(args.pods, args.nodes, args.chunk_size, args.profile)
    if args.json:
        print(json.dumps(r))
    else:
        print(f"{r['pods']} pods ({r['bytes'] / 1e6:.1f} MB of YAML) applied in {r['applySeconds']} s "
              f"(parse alone {r['parseSeconds']} s; CPU: CLI {r['cliCpuSeconds']} s, daemon {r['daemonCpuSeconds']} s; "
              f"{r['scheduledAtEnd']} bound by then, all after {r['allBoundSeconds']} s; "
              f"load average {r['loadAverage']})")


if __name__ == "__main__":
    main()
