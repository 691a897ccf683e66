"""bench/gang.py reports per-group placement, for the happy path and under contention."""
from __future__ import annotations

import pytest

from bench.gang import run_gang


@pytest.mark.parametrize("contended", [False, True], ids=["room for all", "room for half at a time"])
async def test_gang_bench_places_every_group_and_reports_group_latency(contended: bool) -> None:
    result = await run_gang(nodes=4, pods=64, gang_size=8, contended=contended, max_seconds=60)
    assert (result["groups"], result["groups_bound"], result["scheduled"]) == (8, 8, 64)
    assert result["group_p99_ms"] >= result["group_p50_ms"] > 0
    assert result["groups_per_s"] > 0
    assert {"workload", "nodes", "pods", "pods_per_s", "p50_ms", "p99_ms"} <= set(result)


async def test_the_gang_workload_bench_places_scheduling_k8s_io_groups_under_the_default_profile() -> None:
    result = await run_gang(nodes=4, pods=32, gang_size=8, max_seconds=60, api="workload")
    assert result["workload"] == "GangWorkload"
    assert (result["groups"], result["groups_bound"], result["scheduled"]) == (4, 4, 32)
    assert result["ms_per_group"] > 0 and result["groups_per_s"] > 0
