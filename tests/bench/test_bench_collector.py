"""The in-process bench runs the garbage collector as `ksched serve` does."""
from __future__ import annotations

import asyncio
import gc

import pytest

import bench.gang as gang
from bench.harness import set_up
from bench.measure import BindTracker
from bench.workloads import scheduling_basic
from transport.daemon.gc_tuning import GEN0_THRESHOLD


def test_an_in_process_bench_runs_with_the_daemons_collector_and_gives_the_callers_back() -> None:
    before = gc.get_threshold()
    seen: list[tuple[int, bool]] = []

    async def run() -> None:
        w = scheduling_basic(2, 2)
        async with set_up(w, "memory", BindTracker(stall_seconds=30.0)):
            seen.append((gc.get_threshold()[0], gc.get_freeze_count() > 0))

    asyncio.run(run())
    assert seen == [(GEN0_THRESHOLD, True)]
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0



def test_the_gang_bench_runs_with_the_daemons_collector_and_gives_the_callers_back(monkeypatch: pytest.MonkeyPatch) -> None:
    before = gc.get_threshold()
    seen: list[int] = []
    real = gang._run_gang

    async def recording(*args, **kw):  # notes the collector the run sees, then runs it
        seen.append(gc.get_threshold()[0])
        return await real(*args, **kw)

    monkeypatch.setattr(gang, "_run_gang", recording)
    result = gang.run_gang_bench(3, 6, gang_size=3)
    assert seen == [GEN0_THRESHOLD] and result["scheduled"] == 6
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
