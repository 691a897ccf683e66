"""PodGroup status: phases as upstream's controller sets them, counts, and the
condition that says why a group waits."""
from __future__ import annotations

from typing import Any

import pytest

from actors.podgroup_status_writer import compute_status
from framework.api.objects import Pod, PodGroup
from tests.gang.harness import pod, pod_group

NOW = 1767225641.0  # 41 s after the group's creation


def member(name: str, node: str = "", phase: str = "", unschedulable: str = "", group: str = "g") -> Pod:
    raw: dict[str, Any] = pod(name, 1, group)
    if node:
        raw["spec"]["nodeName"] = node
    status: dict[str, Any] = {}
    if phase:
        status["phase"] = phase
    if unschedulable:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": unschedulable}]
    raw["status"] = status
    return Pod(raw)


def group(min_member: int = 4, status: dict | None = None) -> PodGroup:
    raw = pod_group("g", min_member)
    if status:
        raw["status"] = status
    return PodGroup(raw)


def message(status: dict) -> str:
    return status["conditions"][0]["message"]


def test_too_few_members_is_pending_and_says_how_many_are_missing() -> None:
    st = compute_status(group(4), [member("p-0"), member("p-1")], NOW)
    assert st["phase"] == "Pending" and message(st) == "2/4 members exist, waiting for 2 more"
    assert "scheduleStartTime" not in st


def test_members_waiting_at_permit_show_the_quorum_progress_and_the_time_left() -> None:
    pods = [member(f"p-{i}") for i in range(4)]
    st = compute_status(group(4), pods, NOW, waiting={"default/p-0": 41.2, "default/p-1": 55, "default/p-2": 60})
    assert st["phase"] == "Scheduling"
    assert message(st) == "3/4 members reserved, waiting for quorum, 42s left"
    assert st["scheduleStartTime"] == "2026-01-01T00:00:41Z"


def test_a_rejected_member_gives_the_reason_the_group_waits() -> None:
    why = "0/8 nodes are available: 8 Insufficient cpu."
    pods = [member("p-0"), member("p-1"), member("p-2", unschedulable=why), member("p-3", unschedulable=why)]
    st = compute_status(group(4), pods, NOW)
    assert message(st) == f"rejected: member p-2: {why}"
    assert st["conditions"][0]["reason"] == "Unschedulable"


@pytest.mark.parametrize(("phases", "expected", "counts"), [
    (["", "", "", ""], "Running", (4, 4, 0, 0)),
    (["Succeeded"] * 4, "Finished", (4, 0, 4, 0)),
    (["Failed", "", "", ""], "Failed", (4, 3, 0, 1)),
    (["Succeeded", "Succeeded", "", ""], "Running", (4, 2, 2, 0)),
], ids=["all bound", "all succeeded", "one failed", "half finished"])
def test_bound_members_drive_the_phase_as_upstreams_controller_does(phases: list[str], expected: str, counts: tuple) -> None:
    pods = [member(f"p-{i}", node="n0", phase=ph) for i, ph in enumerate(phases)]
    st = compute_status(group(4), pods, NOW)
    assert st["phase"] == expected
    assert (st["scheduled"], st["running"], st["succeeded"], st["failed"]) == counts


def test_terminal_phases_stay_and_the_start_time_is_kept() -> None:
    prev = {"phase": "Finished", "scheduleStartTime": "2026-01-01T00:00:01Z"}
    st = compute_status(group(2, prev), [member("p-0", node="n0")], NOW)
    assert st["phase"] == "Finished" and st["scheduleStartTime"] == "2026-01-01T00:00:01Z"


def test_pods_of_other_groups_and_namespaces_are_not_counted() -> None:
    pods = [member("p-0", node="n0"), member("x-0", node="n0", group="other"),
            Pod({**pod("p-9", 1, "g", ns="elsewhere"), "spec": {"nodeName": "n0"}})]
    st = compute_status(group(2), pods, NOW)
    assert (st["phase"], st["scheduled"]) == ("Pending", 1)


async def test_the_writer_shows_members_waiting_at_permit() -> None:
    from actors.clock import FakeClock
    from actors.pipeline import Pipeline
    from actors.podgroup_status_writer import PodGroupStatusWriter
    from tests.gang.harness import node
    from tests.gang.test_gang_pipeline import config, objs

    clock = FakeClock(1767225600.0)
    async with Pipeline(config(podGroupRejectPercentage=100), clock=clock) as p:
        writer = await PodGroupStatusWriter.attach(p.client, p.list_waiting, clock.now)
        writer.wall_clock = clock.now
        await p.client.apply(objs("Node", [node("n0", 8)]))
        await p.client.apply(objs("PodGroup", [pod_group("g", 4, timeout=45)]))
        blocked = pod("p-3", 1, "g")
        blocked["spec"]["nodeSelector"] = {"zone": "nowhere"}
        await p.client.apply(objs("Pod", [pod(f"p-{i}", 1, "g") for i in range(3)] + [blocked]))
        await p.settle()
        clock.advance(4)
        await writer.flush()
        cond = (await p.client.get("PodGroup", "default", "g"))["status"]["conditions"][0]
        assert cond["message"] == "3/4 members reserved, waiting for quorum, 41s left"


async def test_pods_without_a_group_label_cost_the_writer_no_message_and_no_waiting_room_ask() -> None:
    from actors.clock import FakeClock
    from actors.pipeline import Pipeline
    from actors.podgroup_status_writer import PodGroupStatusWriter
    from tests.gang.harness import node
    from tests.gang.test_gang_pipeline import config, objs

    clock = FakeClock(1767225600.0)
    asked: list[int] = []

    async def waiting() -> tuple:
        asked.append(1)
        return ()

    async with Pipeline(config(), clock=clock) as p:
        writer = await PodGroupStatusWriter.attach(p.client, waiting, clock.now)
        await p.client.apply(objs("Node", [node("n0", 8)]))
        plain = pod("plain", 1, "g")
        del plain["metadata"]["labels"]
        await p.client.apply(objs("Pod", [plain]))
        await p.settle()
        await p.client.delete("Pod", "default", "plain")
        await p.settle()
        assert len(writer.inbox) == 0
        await writer.flush()
        assert asked == []
        await p.client.apply(objs("PodGroup", [pod_group("g", 2)]))
        await p.client.apply(objs("Pod", [pod("member", 1, "g")]))
        await p.settle()
        assert len(writer.inbox) >= 2  # the group's events and its member's reach it
        await writer.flush()
        assert asked == [1]


async def test_the_writers_dirty_set_drained_after_a_burst_gets_its_smallest_table_back() -> None:
    import sys

    from actors.pipeline import Pipeline
    from actors.podgroup_status_writer import PodGroupStatusWriter
    from tests.gang.test_gang_pipeline import config, objs

    async with Pipeline(config()) as p:
        writer = await PodGroupStatusWriter.attach(p.client, p.list_waiting)
        await p.client.apply(objs("PodGroup", [pod_group("g", 2)]))
        for i in range(2000):  # a burst of groups (gone ones: nothing written for them)
            writer.touch("default", f"gone-{i}")
        await writer.flush()
        assert not writer.dirty and sys.getsizeof(writer.dirty) == sys.getsizeof(set())  # pop() keeps the burst's table
        assert (await p.client.get("PodGroup", "default", "g"))["status"]["phase"] == "Pending"
