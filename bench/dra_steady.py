"""`ksched bench SteadyStateClusterResourceClaimTemplate`: scheduler_perf's steady state
with claims (test/integration/scheduler_perf/dra, createPods with steadyState). Every
node publishes 10 devices; `init_claims` ResourceClaims in namespace "init" are
allocated before measuring (upstream's allocResourceClaims: first fit over the nodes in
order, written into each claim's status); then IN_FLIGHT pods using the claim template
are created, and each one seen bound is deleted (its claim goes with it, by the
daemon's resourceclaim controller) and replaced by a new one, until `pods` pods have
bound. Upstream runs for a duration (10 s); here the measured pod count bounds the run.
The runner's keys (pods_per_s over the steady phase, p50/p99 from each pod's creation
to its bind), with `in_flight` and `init_claims` beside them."""
from __future__ import annotations

import time
from collections import deque
from typing import Any

from actors.pipeline import Pipeline
from bench.dra_workloads import DEVICES_PER_NODE, DRIVER, INIT_NAMESPACE
from bench.harness import apply_tracked, measured_keys, set_up, summarize
from bench.measure import BindTracker, Counters, peak_rss_mb, stats_snapshot
from bench.workloads import BenchWorkload

IN_FLIGHT = 10  # createPods count: 10, steadyState: true


def init_allocation(i: int) -> dict[str, Any]:
    """Where allocResourceClaims puts init claim i: the first free device, nodes in order."""
    node, device = divmod(i, DEVICES_PER_NODE)
    name = f"node-{node}"
    return {"devices": {"results": [{"request": "req-0", "driver": DRIVER, "pool": name, "device": f"dev-{device}"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [name]}]}]}}


async def _allocate_init_claims(p: Pipeline, w: BenchWorkload) -> None:
    for obj in w.setup:
        if obj["kind"] == "ResourceClaim":
            stored = await p.client.get("ResourceClaim", INIT_NAMESPACE, obj["metadata"]["name"])
            index = int(obj["metadata"]["name"].rsplit("-", 1)[1])
            await p.client.update({**stored, "status": {"allocation": init_allocation(index)}})


async def run_dra_steady(w: BenchWorkload, store: str = "sqlite", *, stall_seconds: float = 60.0) -> dict[str, Any]:
    tracker = BindTracker(stall_seconds=stall_seconds)
    keys = measured_keys(w)
    async with set_up(w, store, tracker) as p:
        await _allocate_init_claims(p, w)
        await p.settle(None)
        before = await stats_snapshot(p)
        waiting = deque(w.measured)
        start = time.perf_counter()
        await apply_tracked(p.client.apply, [waiting.popleft() for _ in range(min(IN_FLIGHT, len(waiting)))],
                            tracker)
        seen, bound = len(tracker.order), 0
        while bound < len(keys):
            if len(tracker.order) == seen and not await tracker.wait_new(keys):
                break  # nothing bound for the stall time
            fresh, seen = tracker.order[seen:], len(tracker.order)
            for key in fresh:
                if key not in keys:
                    continue
                bound += 1
                await p.client.delete("Pod", key[0], key[1])
                if waiting:
                    await apply_tracked(p.client.apply, [waiting.popleft()], tracker)
        end = tracker.last_bound(keys)
        counters = Counters.between(before, await stats_snapshot(p))
    result = summarize(w, tracker, start, end, counters, store=store, transport="in-process", rss_mb=peak_rss_mb())
    return {**result, "in_flight": IN_FLIGHT, **w.extra}
