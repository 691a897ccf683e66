"""GangScheduling (scheduling.k8s.io PodGroups) through the real actor pipeline with a
fake clock: a gang that can never fit whole is rejected and backs off as one, so its
members are not retried in a loop."""
from __future__ import annotations

from typing import Any

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from tests.gang.harness import node
from tests.gang.test_gang_scheduling_properties import member

START = 1767225600.0  # 2026-01-01T00:00:00Z


def pod_group(name: str, min_count: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}},
                     "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": name}}}}


async def test_a_gang_that_can_never_fit_whole_backs_off_instead_of_retrying_in_a_loop() -> None:
    # Two nodes of 3 cpu hold two members of 2 cpu, never four: each rejection frees
    # two members that fit again. Without the group's backoff every one of them
    # activates its siblings at Permit and the group is retried with no time passing.
    clock = FakeClock(START)
    async with Pipeline(None, clock=clock) as p:
        await p.client.apply([{"apiVersion": "v1", "kind": "Node", **node(f"n{i}", 3)} for i in range(2)])
        await p.client.apply([pod_group("big", 4)])
        await p.client.apply([{"apiVersion": "v1", "kind": "Pod", **member(f"big-{i}", 2, "big")} for i in range(4)])
        for _ in range(12):
            await p.run_until_quiescent(max_seconds=5)
            clock.advance(5)
        items, _ = await p.client.list("Pod")
        assert [i["spec"].get("nodeName") for i in items] == [None] * 4
        # 60 fake seconds: the group's backoff doubles from 1 s to 10 s per rejection.
        assert p.scheduler.stats.attempts <= 60
