"""`ksched bench Churn`: the steady state of a batch cluster, one completion at a time.

Every node is full of 1-cpu pods and `pods` more 1-cpu pods wait (each tried once
and unschedulable). Then, one at a time: a running pod completes (it is deleted,
the oldest bound first), and the clock runs until the next queued pod is seen
bound on the watch. That repeats until every queued pod is bound (or nothing binds
for the stall time). Upstream's NodeResourcesFit hint wakes every waiting pod on
each completion, so all but one of them fail again: the figure that matters is
what those failed attempts cost.

Reported beside the runner's keys: completions, completions_per_s,
failed_attempts_per_completion, and completion_p50_ms / completion_p99_ms (from
the deletion to the next bind seen). In process only for now (the loop is written
against ChurnApi, so a TCP driver needs only that adapter).
"""
from __future__ import annotations

import time
from collections import deque
from typing import Any, Protocol

from actors.pipeline import Pipeline
from bench.harness import apply_tracked, measured_keys, set_up, setup_keys, summarize
from bench.measure import BindTracker, Counters, Key, peak_rss_mb, percentile, stats_snapshot
from bench.workloads import Workload


class ChurnApi(Protocol):
    """What the churn loop needs of the system under test."""

    async def apply(self, objs: list[dict[str, Any]]) -> Any: ...

    async def delete_pod(self, key: Key) -> None: ...

    async def until_idle(self) -> None: ...

    async def counters(self) -> Any: ...


async def churn_loop(api: ChurnApi, w: Workload, tracker: BindTracker) -> dict[str, Any]:
    """Submit the queued pods, let each be tried, then complete running pods one at a
    time. Returns the churn figures and the counters over the churn phase."""
    queued = measured_keys(w)
    running = deque(sorted(setup_keys(w), key=lambda k: tracker.bound_at.get(k, 0.0)))
    await apply_tracked(api.apply, w.measured, tracker)
    await api.until_idle()  # every queued pod tried once: the cluster is full
    before = await api.counters()
    waits: list[float] = []
    start = time.perf_counter()
    bound_before = tracker.bound(queued)
    while tracker.bound(queued) < len(queued) and running:
        victim = running.popleft()
        t0 = time.perf_counter()
        await api.delete_pod(victim)
        if not await tracker.wait_new(queued, 1):
            break  # nothing bound for the stall time
        newest = tracker.order[-1]
        waits.append((tracker.bound_at[newest] - t0) * 1000)
        running.append(newest)
    end = time.perf_counter()
    after = await api.counters()
    completions = len(waits)
    elapsed = end - start
    return {
        "completions": completions,
        "completions_per_s": round(completions / elapsed, 1) if elapsed > 0 else 0.0,
        "completion_p50_ms": round(percentile(waits, 0.50), 3),
        "completion_p99_ms": round(percentile(waits, 0.99), 3),
        "bound_before_churn": bound_before,
        "_span": (start, end),
        "_counters": (before, after),
    }


class _InProcess:
    def __init__(self, p: Pipeline) -> None:
        self.p = p

    async def apply(self, objs: list[dict[str, Any]]) -> Any:
        return await self.p.client.apply(objs)

    async def delete_pod(self, key: Key) -> None:
        await self.p.client.delete("Pod", key[0], key[1])

    async def until_idle(self) -> None:
        await self.p.settle(None)

    async def counters(self) -> Any:
        return stats_snapshot(self.p)


async def run_churn(w: Workload, store: str = "sqlite", *, stall_seconds: float = 60.0) -> dict[str, Any]:
    tracker = BindTracker(stall_seconds=stall_seconds)
    async with set_up(w, store, tracker) as p:
        figures = await churn_loop(_InProcess(p), w, tracker)
    before, after = figures.pop("_counters")
    return churn_result(w, tracker, figures, Counters.between(before, after), store=store,
                        transport="in-process", rss_mb=peak_rss_mb())


def churn_result(w: Workload, tracker: BindTracker, figures: dict[str, Any], counters: Counters, *,
                 store: str, transport: str, rss_mb: float | None) -> dict[str, Any]:
    """The runner's keys over the churn phase, with the churn figures beside them."""
    start, end = figures.pop("_span")
    keys = measured_keys(w)
    result = summarize(w, tracker, start, tracker.last_bound(keys) or end, counters, store=store,
                       transport=transport, rss_mb=rss_mb)
    completions = figures["completions"]
    result["failed_attempts_per_completion"] = round(counters.failed / completions, 2) if completions else 0.0
    return {**result, **figures}
