"""A rack-constrained scheduling.k8s.io gang through the real actor pipeline: it lands
whole in one rack; with no rack able to hold it, it stays pending with a reason per
rack on its PodGroup and the scheduler keeps the choice for explain; with a preferred
rack and a required block it lands in one block."""
from __future__ import annotations

from typing import Any

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from framework.workload.policy import PREFERRED_TOPOLOGY_ANNOTATION
from tests.gang.test_group_cycle_pipeline import NS, START, condition, member, placed

RACK, BLOCK = "topology.example/rack", "topology.example/block"


def topo_gang(name: str, min_count: int, required: str, preferred: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if preferred:
        meta["annotations"] = {PREFERRED_TOPOLOGY_ANNOTATION: preferred}
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": meta,
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}},
                     "schedulingConstraints": {"topology": [{"key": required}]},
                     "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": name}}}}


def racks(per_rack: int, cpu: int) -> list[dict[str, Any]]:
    """Four racks of `per_rack` nodes, racks 0-1 in block b0 and 2-3 in b1."""
    alloc = {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}
    return [{"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": f"r{r}-{i}", "labels": {RACK: f"r{r}", BLOCK: f"b{r // 2}"}},
             "status": {"capacity": alloc, "allocatable": alloc}} for r in range(4) for i in range(per_rack)]


async def test_a_rack_constrained_gang_of_eight_lands_in_one_rack() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        await p.client.apply(racks(4, 2))
        await p.client.apply([topo_gang("train", 8, RACK)])
        await p.client.apply([member(f"t{i}", 1, "train") for i in range(8)])
        await p.run_until_quiescent(max_seconds=5)
        got = await placed(p)
        assert all(got.values()) and len({n.split("-")[0] for n in got.values() if n}) == 1


async def test_with_no_rack_able_to_hold_it_the_gang_stays_pending_with_a_reason_per_rack() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        await p.client.apply(racks(2, 2))
        await p.client.apply([topo_gang("big", 8, RACK)])
        await p.client.apply([member(f"b{i}", 1, "big") for i in range(8)])
        await p.run_until_quiescent(max_seconds=5)
        assert set((await placed(p)).values()) == {None} and p.scheduler.cache.assumed == set()
        pg = await p.client.get("PodGroup.scheduling.k8s.io", NS, "big")
        got = condition(pg, "PodGroupScheduled")
        assert got is not None and got["status"] == "False"
        for r in range(4):
            assert f"{RACK}=r{r} (2 nodes)" in got["message"]
        choice = p.scheduler.group_cycle.placement.choices[(NS, "big")]
        assert choice.chosen is None and len(choice.verdicts) == 4


async def test_a_preferred_rack_and_a_required_block_land_in_one_block_when_no_rack_fits() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        await p.client.apply(racks(2, 2))
        await p.client.apply([topo_gang("wide", 8, BLOCK, preferred=RACK)])
        await p.client.apply([member(f"w{i}", 1, "wide") for i in range(8)])
        await p.run_until_quiescent(max_seconds=5)
        got = await placed(p)
        assert all(got.values())
        blocks = {int(n.split("-")[0][1:]) // 2 for n in got.values() if n}
        assert len(blocks) == 1
