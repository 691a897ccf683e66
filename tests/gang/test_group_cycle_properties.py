"""The whole-group cycle over random clusters and competing gangs, through the real
actor pipeline (hypothesis): once the system is quiet, no gang is partly bound (0 or
at least minCount members on nodes, nothing left assumed), and no gang is left
pending while the free room could take it, so nothing is deadlocked or livelocked.
A gang of higher priority may preempt: its victims are deleted (nothing recreates
them), and only gangs of lower priority than some other gang lose members. With gangs
arriving in priority waves (each priority once the ones before it are settled) the later
ones find the cluster taken and preempt. The same
holds with WorkloadAwarePreemption off, where each member preempts for itself inside
the group cycle instead of the gang's group-aware step; there a PodGroup has no
disruptionMode (the gate forbids it), so a victim gang loses members one by one, as
upstream's single-pod victims, and may be left with fewer than minCount bound: only a
gang that lost no member must be whole.

Members of one gang ask the same CPU and nothing else binds them, so the free room
decides exactly: a gang needs max(1, minCount - bound) slots of its size, and greedy
placement of equal pods finds as many as exist."""
from __future__ import annotations

import asyncio
import random
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from tests.gang.test_group_cycle_pipeline import NS, START, gang, member, nodes

group_st = st.fixed_dictionaries({"min": st.integers(1, 4), "extra": st.integers(0, 2), "cpu": st.integers(1, 4),
                                  "priority": st.integers(0, 2)})
world_st = st.fixed_dictionaries({"nodes": st.lists(st.integers(2, 8), min_size=1, max_size=4),
                                  "groups": st.lists(group_st, min_size=1, max_size=4),
                                  "seed": st.integers(0, 1000), "apart": st.booleans()})


def prioritized(raw: dict[str, Any], priority: int) -> dict[str, Any]:
    raw["spec"]["priority"] = priority
    return raw


async def settle_world(w: dict[str, Any], config: dict[str, Any] | None = None,
                       waves: bool = False) -> dict[str, str | None]:
    """`waves`: the gangs arrive lowest priority first, each priority once the ones
    before it are settled, so the later ones find the cluster taken and preempt."""
    async with Pipeline(config, clock=FakeClock(START), rand=random.Random(w["seed"])) as p:
        await p.client.apply(nodes(*w["nodes"]))
        mode = "" if config else "PodGroup"  # the gate off forbids disruptionMode
        gangs = [gang(f"g{i}", g["min"], mode) for i, g in enumerate(w["groups"])]
        pods = [prioritized(member(f"g{i}-{j}", g["cpu"], f"g{i}"), g["priority"])
                for i, g in enumerate(w["groups"]) for j in range(g["min"] + g["extra"])]
        if waves:
            for priority in sorted({g["priority"] for g in w["groups"]}):
                wave = {f"g{i}" for i, g in enumerate(w["groups"]) if g["priority"] == priority}
                await p.client.apply([g for g in gangs if g["metadata"]["name"] in wave]
                                     + [m for m in pods if m["spec"]["schedulingGroup"]["podGroupName"] in wave])
                await p.run_until_quiescent(max_seconds=60)
        elif w["apart"]:  # pods before their PodGroups: PreEnqueue holds them
            await p.client.apply(pods)
            await p.settle()
            await p.client.apply(gangs)
        else:
            await p.client.apply([*gangs, *pods])
        await p.run_until_quiescent(max_seconds=60)
        assert p.scheduler.cache.assumed == set(), "a member is left assumed"
        items, _ = await p.client.list("Pod")
        return {i["metadata"]["name"]: i["spec"].get("nodeName") for i in items}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world_st, st.booleans())
# A gang that preempted, then was placed with members still nominated where the plan put
# them: each member counted twice (assumed and nominated) left the gang stuck.
@example({"nodes": [2, 2, 2, 5], "seed": 0, "apart": False,
          "groups": [{"min": 1, "extra": 0, "cpu": 2, "priority": 0}, {"min": 1, "extra": 2, "cpu": 1, "priority": 1},
                     {"min": 1, "extra": 0, "cpu": 1, "priority": 0}, {"min": 3, "extra": 0, "cpu": 2, "priority": 1}]},
         False)
# A victim gang evicted whole whose pending member bound on the count of its last victim,
# not yet deleted (the asynchronous preemption deletes it after the others): partly bound.
@example({"nodes": [2, 2, 2, 6], "seed": 0, "apart": False,
          "groups": [{"min": 1, "extra": 0, "cpu": 2, "priority": 0}, {"min": 1, "extra": 0, "cpu": 3, "priority": 0},
                     {"min": 2, "extra": 2, "cpu": 2, "priority": 0}, {"min": 3, "extra": 1, "cpu": 2, "priority": 1}]},
         True)
# A preempting gang whose other members (still minCount) ran cycles while its first
# preemption was evicting: each preempted again with another plan, the plans' nominations
# together asked more than the node had, and the gang stayed pending with room for it.
@example({"nodes": [6], "seed": 0, "apart": False,
          "groups": [{"min": 1, "extra": 0, "cpu": 1, "priority": 0}, {"min": 1, "extra": 0, "cpu": 2, "priority": 0},
                     {"min": 1, "extra": 0, "cpu": 2, "priority": 0}, {"min": 3, "extra": 1, "cpu": 2, "priority": 1}]},
         True)
# A gang of 14 (minCount 12) whose group step took the pending members by name (g1-10
# before g1-2) and left out one the cycle had placed, nominated to its node all the same:
# the nominations asked for more than the three nodes had, and the gang stayed pending.
@example({"nodes": [15, 4, 6], "seed": 304, "apart": False,
          "groups": [{"min": 6, "extra": 2, "cpu": 1, "priority": 0}, {"min": 12, "extra": 2, "cpu": 2, "priority": 2}]},
         True)
def test_no_gang_is_partly_bound_or_left_pending_while_it_fits(w: dict[str, Any], waves: bool) -> None:
    holds_whole_and_unstuck(w, asyncio.run(settle_world(w, waves=waves)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world_st, st.booleans())
def test_with_the_gate_off_no_gang_is_partly_bound_or_left_pending_while_it_fits(w: dict[str, Any],
                                                                                  waves: bool) -> None:
    gate_off = {"featureGates": {"WorkloadAwarePreemption": False}}
    holds_whole_and_unstuck(w, asyncio.run(settle_world(w, gate_off, waves)), victims_whole=False)


def holds_whole_and_unstuck(w: dict[str, Any], where: dict[str, str | None], victims_whole: bool = True) -> None:
    used = {f"n{i}": 0 for i in range(len(w["nodes"]))}
    for i, g in enumerate(w["groups"]):
        for j in range(g["min"] + g["extra"]):
            node = where.get(f"g{i}-{j}")
            if node:
                used[node] += g["cpu"]
    free = [cpu - used[f"n{i}"] for i, cpu in enumerate(w["nodes"])]
    assert min(free) >= 0
    for i, g in enumerate(w["groups"]):
        names = [f"g{i}-{j}" for j in range(g["min"] + g["extra"])]
        members = [where[n] for n in names if n in where]
        bound = sum(1 for n in members if n)
        assert bound == 0 or bound >= g["min"] or (not victims_whole and len(members) < len(names)), \
            f"gang g{i}: {bound} bound, minCount {g['min']}"
        if len(members) < len(names):  # preempted, by a gang of higher priority
            assert any(o["priority"] > g["priority"] for o in w["groups"]), f"gang g{i}: {w}"
        elif bound < len(members):
            need = max(1, g["min"] - bound)
            slots = sum(f // g["cpu"] for f in free)
            assert slots < need, f"gang g{i} pending with room for {slots} of its members (needs {need}): {w}"
