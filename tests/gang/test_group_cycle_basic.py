"""Basic scheduling.k8s.io PodGroups take the whole-group cycle, as upstream 1.36's
ScheduleOne sends every pod with spec.schedulingGroup to scheduleOnePodGroup: their
queued members are tried together in one cycle with a quorum of one, those that fit
are bound, the others fail with their own reasons, the PodGroupScheduled condition is
written, and a topology constraint keeps the members in one domain."""
from __future__ import annotations

from typing import Any

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from tests.gang.test_group_cycle_pipeline import NS, START, condition, member, nodes, placed
from tests.gang.test_group_topology_pipeline import RACK, racks


def basic(name: str, topology: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"basic": {}},
                            "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": name}}}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NS}, "spec": spec}


async def test_a_basic_group_is_placed_in_one_group_cycle_binding_those_that_fit() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        await p.client.apply(nodes(4, 4))
        await p.client.apply([basic("web")])
        await p.client.apply([member("w0", 2, "web"), member("w1", 2, "web"), member("huge", 8, "web")])
        await p.run_until_quiescent(max_seconds=5)
        got = await placed(p)
        assert got["w0"] and got["w1"] and got["huge"] is None
        assert p.scheduler.group_cycle.cycles >= 1
        pg = await p.client.get("PodGroup.scheduling.k8s.io", NS, "web")
        cond = condition(pg, "PodGroupScheduled")
        assert cond is not None and (cond["status"], cond["reason"]) == ("True", "Scheduled")
        huge = await p.client.get("Pod", NS, "huge")
        reason = condition(huge, "PodScheduled")
        assert reason is not None and "Insufficient cpu" in reason["message"]


async def test_a_basic_group_none_of_whose_members_fit_is_unschedulable_with_a_quorum_of_one() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        await p.client.apply(nodes(1))
        await p.client.apply([basic("web")])
        await p.client.apply([member("a", 2, "web"), member("b", 2, "web")])
        await p.run_until_quiescent(max_seconds=5)
        assert set((await placed(p)).values()) == {None}
        pg = await p.client.get("PodGroup.scheduling.k8s.io", NS, "web")
        cond = condition(pg, "PodGroupScheduled")
        assert cond is not None and (cond["status"], cond["reason"], cond["message"]) == (
            "False", "Unschedulable", "minCount (1) cannot be satisfied: 0 scheduled, 0 remaining")


async def test_a_basic_group_with_a_rack_constraint_lands_in_one_rack() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        await p.client.apply(racks(2, 2))
        await p.client.apply([basic("web", RACK)])
        await p.client.apply([member(f"w{i}", 1, "web") for i in range(3)])
        await p.run_until_quiescent(max_seconds=5)
        got = await placed(p)
        assert all(got.values()) and len({n.split("-")[0] for n in got.values() if n}) == 1
