"""What every bench driver shares: the pods a workload measures, how objects go in
(submissions recorded), the background op, the in-process run of a workload, and
the result object whose first keys are a contract for scripts."""
from __future__ import annotations

import asyncio
import contextlib
import gc
import tempfile
import time
from contextvars import ContextVar
from typing import Any, AsyncIterator, Iterator

from actors.metrics_sink import NO_METRICS, MetricsSink
from actors.pipeline import Pipeline
from actors.store import WatchEvent
from actors.store.backend import StoreBackend
from actors.store.memory import InMemoryBackend
from actors.store.sqlite import SQLiteBackend
from bench.batching import batched_pods
from bench.measure import BindTracker, Counters, Key, peak_rss_mb, percentile, stats_snapshot
from bench.workloads import BenchWorkload
from transport.daemon.gc_tuning import tune_after_start
from transport.http.metrics import SchedulerMetrics

APPLY_CHUNK = 500
IDLE_POLL_SECONDS = 0.02
IDLE_READINGS = 3
# Whether an in-process run records the daemon's metrics: on unless `ksched bench
# --no-metrics` (bench.runner sets it around the run; asyncio.run copies it in).
WITH_METRICS: ContextVar[bool] = ContextVar("ksched_bench_with_metrics", default=True)


def bench_metrics() -> MetricsSink:
    """What `ksched serve` hands its Pipeline (transport/daemon/serve.py): a fresh
    SchedulerMetrics for this run; NO_METRICS under --no-metrics."""
    return SchedulerMetrics() if WITH_METRICS.get() else NO_METRICS


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj["metadata"]
    return meta.get("namespace", "default"), meta["name"]


def measured_keys(w: BenchWorkload) -> set[Key]:
    return {key_of(o) for o in w.measured if o["kind"] == "Pod"}


def setup_keys(w: BenchWorkload) -> set[Key]:
    return {key_of(o) for o in w.setup if o["kind"] == "Pod"}


def summarize(w: BenchWorkload, tracker: BindTracker, start: float, end: float | None, counters: Counters,
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
        "expected": w.expected_bound,
        "init_pods": w.init_pods,
        "store": store,
        "transport": transport,
        **counters.result(len(keys), rss_mb),
    }


def backend(store: str, data_dir: str) -> StoreBackend:
    return SQLiteBackend(data_dir) if store == "sqlite" else InMemoryBackend()


async def apply_tracked(apply: Any, objs: list[dict[str, Any]], tracker: BindTracker) -> None:
    for i in range(0, len(objs), APPLY_CHUNK):
        chunk = objs[i:i + APPLY_CHUNK]
        tracker.submitted([key_of(o) for o in chunk if o["kind"] == "Pod"])
        await apply(chunk)


async def background(w: BenchWorkload, apply: Any) -> None:
    """scheduler_perf's churn op in create mode: one background object every interval,
    on a fixed cadence, until cancelled."""
    if w.background is None:
        return
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    i = 0
    while True:
        await apply([w.background(i)])
        i += 1
        w.extra["background_created"] = i
        await asyncio.sleep(max(0.0, t0 + i * w.background_interval_s - loop.time()))


@contextlib.contextmanager
def daemon_collector() -> Iterator[None]:
    """The garbage collector as `ksched serve` runs it once listening (frozen start-up,
    first threshold 50,000), restored afterwards so a test process running a bench
    keeps its own."""
    before = tune_after_start()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


@contextlib.asynccontextmanager
async def set_up(w: BenchWorkload, store: str, tracker: BindTracker) -> AsyncIterator[Pipeline]:
    """A pipeline on a fresh store, recording the daemon's metrics (bench_metrics), whose
    pod watch feeds `tracker`, with the workload's setup objects in and every setup pod
    that can bind bound."""
    def observe(ev: WatchEvent) -> None:
        if ev.kind == "Pod":
            tracker.observe((ev.obj.namespace, ev.obj.name), ev.obj.node_name)

    with tempfile.TemporaryDirectory(prefix="ksched-bench-") as data_dir:
        async with Pipeline(w.config, backend=backend(store, data_dir), metrics=bench_metrics()) as p:
            with daemon_collector():
                await p.client.watch(observe, kinds=frozenset({"Pod"}))
                await apply_tracked(p.client.apply, w.setup, tracker)
                await tracker.wait(setup_keys(w), w.init_pods - w.setup_pending)
                await p.settle(None)
                yield p


async def run_in_process(w: BenchWorkload, store: str = "sqlite", stall_seconds: float = 60.0) -> dict[str, Any]:
    tracker = BindTracker(stall_seconds=stall_seconds)
    async with set_up(w, store, tracker) as p:
        before = await stats_snapshot(p)
        keys = measured_keys(w)
        start = time.perf_counter()
        bg = asyncio.ensure_future(background(w, p.client.apply))
        try:
            await apply_tracked(p.client.apply, w.measured, tracker)
            done = asyncio.ensure_future(tracker.wait(keys, w.expected_bound))
            idle = asyncio.ensure_future(until_idle(p))
            await asyncio.wait({done, idle}, return_when=asyncio.FIRST_COMPLETED)
            for f in (done, idle):
                f.cancel()
        finally:
            bg.cancel()
        counters = Counters.between(before, await stats_snapshot(p))
        end = tracker.last_bound(keys)
    result = summarize(w, tracker, start, end, counters, store=store, transport="in-process", rss_mb=peak_rss_mb())
    return {**result, "batched_pods": batched_pods(p), **w.extra}


async def until_idle(p: Pipeline) -> None:
    """Returns once the pipeline has been idle on IDLE_READINGS readings in a row, read
    every IDLE_POLL_SECONDS: the measured phase's way out when the pods left cannot
    bind, without taking turns of the event loop from the scheduler while it works."""
    calm = 0
    while calm < IDLE_READINGS:
        await asyncio.sleep(IDLE_POLL_SECONDS)
        calm = calm + 1 if p.idle() else 0
