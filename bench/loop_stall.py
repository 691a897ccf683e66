"""`python -m bench.loop_stall`: does one big request stall everyone else?

A real `ksched serve` (SQLite store) in a temporary directory. One probe client
gets the same Node in a loop, one request at a time, and records each reply's
latency and the gaps between replies, while another client sends:
- `frame15`: one apply frame of about 15 MiB (14,000 pods of 1 KiB);
- `apply50k`: one apply of 50,000 small pods (about 100 nodes take them);
and, separately, `watcher`: a client that opens a watch on pods and never reads,
while 20,000 updates of 200 KB pods are applied; the daemon's RSS is sampled.

Prints one JSON document: per scenario the probe's longest gap, p50/p99/max
latency in ms and the request's own duration; for the watcher the daemon's RSS
before, peak and after, and whether the watch was ended. Figures on a shared
machine are noisy: report them with the load (`uptime`) seen.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import struct
import tempfile
import time
from typing import Any

from bench.measure import percentile
from bench.tcp import BenchDaemon
from transport.client.tcp import Client
from transport.protocol.framing import encode_frame

PROBE_NODE = "probe-node"


def _node(name: str, pods: int = 1000) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "1000", "memory": "4000Gi", "pods": str(pods)}}}


def _pod(name: str, pad: int = 0) -> dict[str, Any]:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                           "spec": {"containers": [{"name": "c", "image": "i",
                                                    "resources": {"requests": {"cpu": "10m"}}}]}}
    if pad:  # container args: annotations are limited to 256 KiB, an object to 1.5 MiB
        pod["spec"]["containers"][0]["args"] = ["x" * 1000] * (pad // 1000)
    return pod


class Probe:
    """Gets one node in a loop from its own process (so that what the writer's side
    does, encoding the big request, decoding its reply, is not counted); reply
    latencies and reply times on the monotonic clock, in seconds."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.latencies: list[float] = []
        self.replies: list[float] = []
        self._stop = multiprocessing.Event()
        self._conn, child = multiprocessing.Pipe()
        self._proc = multiprocessing.Process(target=_probe_process, args=(server, child, self._stop), daemon=True)

    async def start(self) -> None:
        self._proc.start()
        await asyncio.get_running_loop().run_in_executor(None, self._conn.recv)  # connected

    async def stop(self) -> None:
        self._stop.set()
        self.latencies, self.replies = await asyncio.get_running_loop().run_in_executor(None, self._conn.recv)
        self._proc.join()

    def window(self, start: float, end: float) -> dict[str, float]:
        lat = [lat for lat, r in zip(self.latencies, self.replies) if start <= r <= end + lat]
        times = [start] + [r for r in self.replies if start <= r <= end] + [end]
        gap = max(b - a for a, b in zip(times, times[1:]))
        ms = [x * 1000 for x in lat]
        return {"gets": len(ms), "longest_gap_ms": round(gap * 1000, 1), "p50_ms": round(percentile(ms, 0.5), 1),
                "p99_ms": round(percentile(ms, 0.99), 1), "max_ms": round(max(ms, default=0.0), 1)}


def _probe_process(server: str, conn: Any, stop: Any) -> None:
    async def run() -> None:
        latencies: list[float] = []
        replies: list[float] = []
        async with await Client.connect(server, timeout=600) as client:
            conn.send("ready")
            while not stop.is_set():
                t = time.monotonic()
                await client.get("Node", PROBE_NODE)
                now = time.monotonic()
                latencies.append(now - t)
                replies.append(now)
        conn.send((latencies, replies))

    asyncio.run(run())


async def _measure(server: str, name: str, objects: list[dict[str, Any]]) -> dict[str, Any]:
    probe = Probe(server)
    await probe.start()
    async with await Client.connect(server, timeout=600) as writer:
        await asyncio.sleep(0.5)  # the probe's baseline
        frame = len(encode_frame({"id": 1, "op": "apply", "objects": objects}))
        start = time.monotonic()
        await writer.request("apply", objects=objects)
        end = time.monotonic()
        await asyncio.sleep(0.5)
    await probe.stop()
    out = {"scenario": name, "objects": len(objects), "frame_mib": round(frame / 2**20, 2),
           "request_s": round(end - start, 2), **probe.window(start, end)}
    print(json.dumps(out), flush=True)
    return out


async def _watcher(daemon: BenchDaemon, server: str, updates: int, size: int) -> dict[str, Any]:
    """A watch on pods whose client never reads, while `updates` updates of
    `size`-byte pods are applied (50 per request, on 100 pods)."""
    host, port = server.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sock.sendall(encode_frame({"id": 1, "op": "hello"}) + encode_frame(
        {"id": 2, "op": "watch", "kinds": ["Pod"], "resourceVersion": 0}))
    rss_before = daemon.rss_kib() or 0
    peak = rss_before
    per = 50
    async with await Client.connect(server, timeout=600) as writer:
        t = time.perf_counter()
        for i in range(0, updates, per):
            pods = [_pod(f"big-{(i + j) % 100}", size) for j in range(per)]
            for p in pods:
                p["metadata"]["annotations"] = {"gen": str(i)}
            await writer.request("apply", objects=pods)
            peak = max(peak, daemon.rss_kib() or 0)
        elapsed = time.perf_counter() - t
        stats = await writer.stats()
    ended = _watch_ended(sock)
    sock.close()
    out = {"scenario": "watcher", "updates": updates, "object_kb": size // 1000,
           "rss_before_mib": round(rss_before / 1024, 1), "rss_peak_mib": round(peak / 1024, 1),
           "rss_after_mib": round((daemon.rss_kib() or 0) / 1024, 1), "watch_ended": ended,
           "apply_s": round(elapsed, 1), "connections": stats.get("connections")}
    print(json.dumps(out), flush=True)
    return out


def _watch_ended(sock: socket.socket) -> bool:
    """Read what the daemon sent the watcher; True if an error frame ended watch 2."""
    import msgpack

    sock.settimeout(5.0)
    buf = b""
    try:
        while True:
            data = sock.recv(1 << 20)
            if not data:
                break
            buf += data
            while len(buf) >= 4:
                (n,) = struct.unpack(">I", buf[:4])
                if len(buf) < 4 + n:
                    break
                frame = msgpack.unpackb(buf[4:4 + n], raw=False)
                buf = buf[4 + n:]
                if frame.get("id") == 2 and frame.get("ok") is False:
                    return True
    except (TimeoutError, OSError):
        pass
    return False


async def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    with tempfile.TemporaryDirectory(prefix="ksched-loop-stall-") as tmp:
        daemon = BenchDaemon(tmp, "sqlite", None)
        server = await daemon.start()
        try:
            async with await Client.connect(server, timeout=600) as c:
                await c.apply([_node(PROBE_NODE)] + [_node(f"n{i}", 1000) for i in range(args.nodes)])
            if "frame15" in args.scenarios:
                results.append(await _measure(server, "frame15", [_pod(f"f-{i}", 1000) for i in range(args.frame_pods)]))
            if "apply50k" in args.scenarios:
                results.append(await _measure(server, "apply50k", [_pod(f"p-{i}") for i in range(args.pods)]))
            if "watcher" in args.scenarios:
                results.append(await _watcher(daemon, server, args.updates, args.object_bytes))
        finally:
            await daemon.stop()
    return results


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.loop_stall", description=__doc__.split("\n\n")[0])
    p.add_argument("--scenarios", nargs="*", default=["frame15", "apply50k", "watcher"])
    p.add_argument("--pods", type=int, default=50_000)
    p.add_argument("--frame-pods", type=int, default=14_000, help="1 KiB pods in the frame15 apply")
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--updates", type=int, default=20_000)
    p.add_argument("--object-bytes", type=int, default=200_000)
    args = p.parse_args()
    print(json.dumps({"load": os.getloadavg()[0]}), flush=True)
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
