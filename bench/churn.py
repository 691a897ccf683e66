"""`ksched bench Churn`: the steady state of a batch cluster, one completion at a time.

Every node is full of 1-cpu pods and `pods` more 1-cpu pods wait (each tried once
and unschedulable). Then, one at a time: a running pod completes (it is deleted,
the oldest bound first), and the clock runs until the next queued pod is seen
bound on the watch. That repeats until every queued pod is bound (or nothing binds
for the stall time). Upstream's NodeResourcesFit hint wakes every waiting pod on
each completion, so all but one of them fail again: the figure that matters is
what those failed attempts cost.

Reported beside the runner's keys: completions, completions_per_s,
failed_attempts_per_completion, completion_p50_ms / completion_p99_ms (from
the deletion to the next bind seen), pods_woken_per_completion (pods the queue
moved out of its unschedulable pool, by events or following their class) and
classes_woken_per_completion (equivalence classes woken by events: the cost of
a completion is O(classes woken), actors/queue/pod_classes.py). `completions`
caps the churn phase (None: until every queued pod is bound), so a deep queue
without classes can be measured in bounded time. In process by default; with `--tcp` the same
loop (written against ChurnApi) drives a real `ksched serve` subprocess through the
client library.
"""
from __future__ import annotations

import asyncio
import tempfile
import time
from collections import deque
from typing import Any, Protocol

from actors.pipeline import Pipeline
from bench.harness import (IDLE_POLL_SECONDS, IDLE_READINGS, apply_tracked, measured_keys, set_up, setup_keys,
                           summarize)
from bench.measure import BindTracker, Counters, Key, peak_rss_mb, percentile, stats_snapshot
from bench.tcp import BenchDaemon, scheduler_counters, tcp_counters, watch_bindings
from bench.workloads import BenchWorkload
from transport.client.tcp import Client


class ChurnApi(Protocol):
    """What the churn loop needs of the system under test."""

    async def apply(self, objs: list[dict[str, Any]]) -> Any: ...

    async def delete_pod(self, key: Key) -> None: ...

    async def until_idle(self, min_attempts: int) -> None:
        """Until nothing is being scheduled, and at least `min_attempts` attempts were
        made since the setup."""
        ...

    async def counters(self) -> Any: ...

    async def woken(self) -> tuple[int, int]:
        """The queue's counts of pods and classes woken so far."""
        ...


async def churn_loop(api: ChurnApi, w: BenchWorkload, tracker: BindTracker, completions: int | None = None) -> dict[str, Any]:
    """Submit the queued pods, let each be tried, then complete running pods one at a
    time (at most `completions`). Returns the churn figures and the counters over
    the churn phase."""
    queued = measured_keys(w)
    running = deque(sorted(setup_keys(w), key=lambda k: tracker.bound_at.get(k, 0.0)))
    await apply_tracked(api.apply, w.measured, tracker)
    await api.until_idle(len(queued))  # every queued pod tried once: the cluster is full
    before = await api.counters()
    woken_before = await api.woken()
    waits: list[float] = []
    start = time.perf_counter()
    bound_before = tracker.bound(queued)
    counted = _BoundCount(tracker, queued)  # O(binds), not O(queued), per completion
    while counted.now() < len(queued) and running and (completions is None or len(waits) < completions):
        victim = running.popleft()
        t0 = time.perf_counter()
        have = counted.now()
        await api.delete_pod(victim)
        # Counted from before the deletion: over TCP the binding it allows may be read
        # off the watch before this coroutine resumes with the deletion's reply.
        if not await tracker.wait(queued, have + 1, have=counted.now()):
            break  # nothing bound for the stall time
        newest = tracker.order[-1]
        waits.append((tracker.bound_at[newest] - t0) * 1000)
        running.append(newest)
    end = time.perf_counter()
    after = await api.counters()
    woken_after = await api.woken()
    done = len(waits)
    elapsed = end - start
    return {
        "completions": done,
        "completions_per_s": round(done / elapsed, 1) if elapsed > 0 else 0.0,
        "pods_woken_per_completion": round((woken_after[0] - woken_before[0]) / done, 2) if done else 0.0,
        "classes_woken_per_completion": round((woken_after[1] - woken_before[1]) / done, 2) if done else 0.0,
        "completion_p50_ms": round(percentile(waits, 0.50), 3),
        "completion_p99_ms": round(percentile(waits, 0.99), 3),
        "bound_before_churn": bound_before,
        "_span": (start, end),
        "_counters": (before, after),
    }


class _BoundCount:
    """How many of `keys` are bound, read off the tracker's bind order as it grows."""

    def __init__(self, tracker: BindTracker, keys: set[Key]) -> None:
        self.tracker, self.keys = tracker, keys
        self.seen = len(tracker.order)
        self.count = tracker.bound(keys)

    def now(self) -> int:
        order = self.tracker.order
        self.count += sum(1 for k in order[self.seen:] if k in self.keys)
        self.seen = len(order)
        return self.count


class _InProcess:
    def __init__(self, p: Pipeline) -> None:
        self.p = p

    async def apply(self, objs: list[dict[str, Any]]) -> Any:
        return await self.p.client.apply(objs)

    async def delete_pod(self, key: Key) -> None:
        await self.p.client.delete("Pod", key[0], key[1])

    async def until_idle(self, min_attempts: int) -> None:
        await self.p.settle(None)  # in process the actors' idleness is exact

    async def counters(self) -> Any:
        return await stats_snapshot(self.p)

    async def woken(self) -> tuple[int, int]:
        return _woken(await self.p.pending_counts())


class _OverTcp:
    """The churn loop against a real `ksched serve`, through the client library."""

    def __init__(self, client: Client, base_attempts: int) -> None:
        self.client = client
        self.base = base_attempts

    async def apply(self, objs: list[dict[str, Any]]) -> Any:
        return await self.client.apply(objs)

    async def delete_pod(self, key: Key) -> None:
        await self.client.delete("Pod", key[1], key[0])

    async def until_idle(self, min_attempts: int) -> None:
        """The daemon's stats, read every IDLE_POLL_SECONDS: enough attempts made, none
        active, no binding cycle, and the counters still on IDLE_READINGS readings."""
        last, calm = None, 0
        while calm < IDLE_READINGS:
            await asyncio.sleep(IDLE_POLL_SECONDS)
            st = await self.client.stats()
            sc, q = st.get("scheduler", {}), st.get("queue", {})
            now = (sc.get("attempts", 0), sc.get("scheduled", 0))
            quiet = (now[0] - self.base >= min_attempts and q.get("active", 0) == 0
                     and sc.get("bindingCycles", 0) == 0 and now == last)
            calm, last = (calm + 1 if quiet else 0), now

    async def counters(self) -> Any:
        return await scheduler_counters(self.client)

    async def woken(self) -> tuple[int, int]:
        return _woken((await self.client.stats()).get("queue", {}))


def _woken(queue_counts: Any) -> tuple[int, int]:
    return int(queue_counts.get("wokenPods", 0)), int(queue_counts.get("wokenClasses", 0))


async def run_churn_over_tcp(w: BenchWorkload, store: str = "sqlite", stall_seconds: float = 60.0,
                             completions: int | None = None) -> dict[str, Any]:
    tracker = BindTracker(stall_seconds=stall_seconds)
    with tempfile.TemporaryDirectory(prefix="ksched-bench-tcp-") as tmp:
        daemon = BenchDaemon(tmp, store, w.config)
        server = await daemon.start()
        try:
            async with await Client.connect(server) as client:
                watcher = asyncio.ensure_future(watch_bindings(client, tracker))
                try:
                    await apply_tracked(client.apply, w.setup, tracker)
                    await tracker.wait(setup_keys(w), w.init_pods)
                    base = (await scheduler_counters(client)).get("attempts", 0)
                    figures = await churn_loop(_OverTcp(client, base), w, tracker, completions)
                finally:
                    watcher.cancel()
            rss = daemon.peak_rss_mb()
        finally:
            await daemon.stop()
    before, after = figures.pop("_counters")
    counters = tcp_counters(before, after)
    result = churn_result(w, tracker, figures, counters, store=store, transport="tcp", rss_mb=rss)
    return {**result, "bind_window": counters.window}


async def run_churn(w: BenchWorkload, store: str = "sqlite", *, stall_seconds: float = 60.0,
                    completions: int | None = None) -> dict[str, Any]:
    tracker = BindTracker(stall_seconds=stall_seconds)
    async with set_up(w, store, tracker) as p:
        figures = await churn_loop(_InProcess(p), w, tracker, completions)
    before, after = figures.pop("_counters")
    return churn_result(w, tracker, figures, Counters.between(before, after), store=store,
                        transport="in-process", rss_mb=peak_rss_mb())


def churn_result(w: BenchWorkload, tracker: BindTracker, figures: dict[str, Any], counters: Counters, *,
                 store: str, transport: str, rss_mb: float | None) -> dict[str, Any]:
    """The runner's keys over the churn phase, with the churn figures beside them."""
    start, end = figures.pop("_span")
    keys = measured_keys(w)
    result = summarize(w, tracker, start, tracker.last_bound(keys) or end, counters, store=store,
                       transport=transport, rss_mb=rss_mb)
    completions = figures["completions"]
    result["failed_attempts_per_completion"] = round(counters.failed / completions, 2) if completions else 0.0
    return {**result, **figures}
