"""`python -m bench.profile`: the measured phase's counts, the gang workloads included."""
from __future__ import annotations

import asyncio

from bench.profile import WORKLOADS, profile_measured


def test_the_profile_runs_gang_workload_and_counts_its_messages_per_group() -> None:
    assert "GangWorkload" in WORKLOADS and "GangTopology" in WORKLOADS
    counts, stats = asyncio.run(profile_measured("GangWorkload", nodes=20, pods=16, store="memory"))
    assert stats is not None
    assert counts["pods"] == 16 and counts["bound"] == 16 and counts["groups"] == 2
    # Each member is bound by its own Bind and created by the measured phase's apply.
    assert counts["messages_per_group"]["store"]["Bind"] == 8.0
    assert counts["messages_per_group"]["queue"]["AddPod"] == 8.0
    assert counts["calls_per_group"] > counts["calls_per_pod"] > 0
    assert "whole-group cycle (GroupCycle.run)" in counts["areas"]


def test_a_gang_profile_waits_for_its_members_binds_and_not_for_its_podgroups() -> None:
    from bench.gang import gang_bench_workload
    for api in ("workload", "topology", "coscheduling"):
        w = gang_bench_workload(api)(20, 24)
        pods = [o for o in w.measured if o["kind"] == "Pod"]
        assert len(pods) == 24 and len(w.measured) == 27  # three PodGroups measured beside them
        assert w.expected_bound == 24
