"""Gangs through the real actor pipeline (store, queue, scheduler, waiting room,
binding cycles) with a fake clock: where ksched's Coscheduling beats upstream."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.podgroup_status_writer import PodGroupStatusWriter
from framework.api.objects import POD_GROUP_LABEL
from tests.gang.harness import node, pod, pod_group

START = 1767225600.0  # 2026-01-01T00:00:00Z
CONFIG = Path(__file__).resolve().parents[2] / "configs" / "coscheduling.yaml"


def config(**args: Any) -> dict[str, Any]:
    cfg = yaml.safe_load(CONFIG.read_text())
    cfg["profiles"][0]["pluginConfig"][0]["args"].update(args)
    return cfg


def objs(kind: str, raws: list[dict[str, Any]]) -> list[dict[str, Any]]:
    api = {"PodGroup": "scheduling.x-k8s.io/v1alpha1"}.get(kind, "v1")
    return [{"apiVersion": api, "kind": kind, **r} for r in raws]


class Calls:
    """Records which pods reached Coscheduling's Permit (= held a reservation)."""

    def __init__(self, p: Pipeline) -> None:
        plugin = p.frameworks["default-scheduler"].plugins["Coscheduling"]
        self.permits: list[str] = []
        self.pre_filters: list[str] = []
        permit, pre_filter = plugin.permit, plugin.pre_filter

        def rec_permit(state, pod, node_name):  # noqa: ANN001, ANN202
            self.permits.append(pod.name)
            return permit(state, pod, node_name)

        def rec_pre_filter(state, pod, nodes):  # noqa: ANN001, ANN202
            self.pre_filters.append(pod.name)
            return pre_filter(state, pod, nodes)

        plugin.permit, plugin.pre_filter = rec_permit, rec_pre_filter


async def bound(p: Pipeline, group: str | None = None) -> dict[str, str | None]:
    items, _ = await p.client.list("Pod")
    return {i["metadata"]["name"]: i["spec"].get("nodeName") for i in items
            if group is None or (i["metadata"].get("labels") or {}).get(POD_GROUP_LABEL) == group}


async def complete(p: Pipeline, names: list[str]) -> None:
    for n in names:
        await p.client.update_pod_status("default", n, phase="Succeeded")


def condition_message(raw: dict[str, Any]) -> str:
    for c in (raw.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return c.get("message", "")
    return ""


async def test_two_gangs_that_fit_alone_but_not_together_do_not_deadlock() -> None:
    # Same creation second and interleaved names, so the queue alternates the two
    # groups' members (upstream's exception (a)); with a 50% reject percentage a
    # member failing at 3/4 does not release its group, so upstream holds both
    # halves until the Permit timeout, then does it again.
    clock = FakeClock(START)
    async with Pipeline(config(podGroupRejectPercentage=50), clock=clock) as p:
        calls = Calls(p)
        await p.client.apply(objs("Node", [node("n0", 6)]))
        await p.client.apply(objs("PodGroup", [pod_group("a", 4, timeout=60), pod_group("b", 4, timeout=60)]))
        await p.client.apply(objs("Pod", [pod(f"w{i}-{g}", 1, g) for i in range(4) for g in "ab"]))
        spent = await p.run_until_quiescent(max_seconds=30)
        a, b = await bound(p, "a"), await bound(p, "b")
        assert all(a.values()) and not any(b.values())
        assert spent < 60  # no Permit timeout was needed
        assert p.scheduler.stats.attempts <= 16
        assert [n for n in calls.permits if n.endswith("-b")] == []  # b never held a reservation
        assert len(p.waiting_room) == 0
        await complete(p, list(a))
        await p.run_until_quiescent(max_seconds=30)
        assert all((await bound(p, "b")).values())


async def test_a_fragmented_group_is_rejected_before_it_reserves_anything() -> None:
    clock = FakeClock(START)
    async with Pipeline(config(), clock=clock) as p:
        calls = Calls(p)
        await p.client.apply(objs("Node", [node(f"n{i}", 3) for i in range(3)]))
        await p.client.apply(objs("PodGroup", [pod_group("frag", 4, min_resources={"cpu": "8"})]))
        await p.client.apply(objs("Pod", [pod(f"frag-{i}", 2, "frag") for i in range(4)] + [pod("solo", 1)]))
        await p.run_until_quiescent(max_seconds=120)
        assert not any((await bound(p, "frag")).values())
        assert (await bound(p))["solo"]
        assert [n for n in calls.permits if n.startswith("frag")] == []
        msg = condition_message(await p.client.get("Pod", "default", "frag-0"))
        assert "podGroup default/frag cannot be placed node by node: 4 more members need a node, at most 3 fit" in msg
        assert "summed free capacity would hold them, but it is fragmented across nodes" in msg


async def test_a_failing_group_never_blocks_other_pods_and_groups() -> None:
    # A high-priority gang that can never fit sits at the head of the queue by
    # priority; plain pods and a small gang keep being scheduled behind it, and it
    # is not retried in a loop: only when the cluster changes.
    clock = FakeClock(START)
    async with Pipeline(config(), clock=clock) as p:
        calls = Calls(p)
        await p.client.apply(objs("Node", [node("n0", 6), node("n1", 2), node("n2", 2), node("n3", 2)]))
        await p.client.apply(objs("PodGroup", [pod_group("big", 6, timeout=10), pod_group("small", 2, timeout=10)]))
        await p.client.apply(objs("Pod", [pod(f"big-{i}", 4, "big", priority=100) for i in range(6)]
                                  + [pod(f"small-{i}", 1, "small") for i in range(2)]
                                  + [pod(f"plain-{i}", 1) for i in range(4)]))
        await p.run_until_quiescent(max_seconds=240)
        state = await bound(p)
        assert all(v for k, v in state.items() if not k.startswith("big"))
        assert not any(v for k, v in state.items() if k.startswith("big"))
        # Each big member is tried when it arrives and again when others bind,
        # a bounded number of times, not once per backoff period for 4 minutes.
        assert calls.pre_filters.count("big-0") <= 8
        assert [n for n in calls.permits if n.startswith("big")] == []


async def test_pod_group_status_says_why_a_group_waits_and_follows_it_to_running() -> None:
    clock = FakeClock(START)
    async with Pipeline(config(), clock=clock) as p:
        writer = await PodGroupStatusWriter.attach(p.client, p.list_waiting, clock.now)
        writer.wall_clock = clock.now
        await p.client.apply(objs("Node", [node(f"n{i}", 4) for i in range(4)]))
        await p.client.apply(objs("PodGroup", [pod_group("one", 8, timeout=30),
                                               pod_group("two", 8, timeout=30, created="2026-01-01T00:00:01Z")]))
        await p.client.apply(objs("Pod", [pod(f"one-{i}", 2, "one") for i in range(8)]))
        await p.client.apply(objs("Pod", [pod(f"two-{i}", 2, "two") for i in range(8)]))
        await p.run_until_quiescent(max_seconds=60)
        await writer.flush()
        one = (await p.client.get("PodGroup", "default", "one"))["status"]
        two = (await p.client.get("PodGroup", "default", "two"))["status"]
        assert (one["phase"], one["scheduled"], one["running"]) == ("Running", 8, 8)
        assert one["conditions"][0]["message"] == "8/8 members bound"
        assert two["phase"] == "Scheduling" and two["scheduled"] == 0
        assert two["conditions"][0]["message"].startswith("rejected: member two-")
        assert "cannot be placed node by node" in two["conditions"][0]["message"]
        assert two["scheduleStartTime"] == "2026-01-01T00:00:00Z"
        await complete(p, [f"one-{i}" for i in range(8)])
        await p.run_until_quiescent(max_seconds=60)
        await writer.flush()
        one = (await p.client.get("PodGroup", "default", "one"))["status"]
        two = (await p.client.get("PodGroup", "default", "two"))["status"]
        assert (one["phase"], one["succeeded"]) == ("Finished", 8)
        assert (two["phase"], two["running"]) == ("Running", 8)


@pytest.mark.parametrize("reserve_enabled", [True, False], ids=["with Unreserve", "upstream test profile"])
async def test_a_group_that_times_out_releases_every_member_and_binds_later(reserve_enabled: bool) -> None:
    # late-2 can never pass Filter (its nodeSelector matches no node) and the
    # group is never rejected in PostFilter (100%), so its siblings wait at Permit
    # until the 5 s timeout and are released, with or without Unreserve.
    clock = FakeClock(START)
    cfg = config(permitWaitingTimeSeconds=5, podGroupRejectPercentage=100)
    if not reserve_enabled:
        prof = cfg["profiles"][0]
        prof["plugins"] = {"queueSort": prof["plugins"]["queueSort"],
                           **{pt: {"enabled": [{"name": "Coscheduling"}]} for pt in ("preFilter", "postFilter", "permit")}}
    async with Pipeline(cfg, clock=clock) as p:
        calls = Calls(p)
        stuck = pod("late-2", 1, "late")
        stuck["spec"]["nodeSelector"] = {"zone": "nowhere"}
        await p.client.apply(objs("Node", [node("n0", 8)]))
        await p.client.apply(objs("PodGroup", [pod_group("late", 3)]))
        await p.client.apply(objs("Pod", [pod("late-0", 1, "late"), pod("late-1", 1, "late"), stuck]))
        await p.settle()
        assert len(p.waiting_room) == 2 and {"late-0", "late-1"} <= set(calls.permits)
        clock.advance_to(START + 5)  # the Permit timeout fires
        await p.settle()
        messages = {n: [e.message for e in await p.client.events("Pod", f"default/{n}")] for n in ("late-0", "late-1")}
        released = ("rejected due to timeout after waiting 5s at plugin Coscheduling", "rejection in Unreserve")
        assert all(any(r in m for r in released for m in ms) for ms in messages.values())
        assert len(p.waiting_room) == 0 and not p.scheduler.cache.assumed
        assert not any((await bound(p, "late")).values())
        await p.client.delete("Pod", "default", "late-2")
        await p.client.apply(objs("Pod", [pod("late-3", 1, "late")]))
        await p.run_until_quiescent(max_seconds=30)
        assert all((await bound(p, "late")).values())


async def test_a_high_priority_gang_preempts_its_way_in_instead_of_being_rejected_as_not_fitting() -> None:
    # The cluster is full of low-priority pods: the gang fits only once
    # preemption evicts them, so the admission check counts them as room.
    clock = FakeClock(START)
    async with Pipeline(config(), clock=clock) as p:
        await p.client.apply(objs("Node", [node("n0", 4), node("n1", 4)]))
        await p.client.apply(objs("Pod", [pod(f"low-{i}", 1) for i in range(8)]))
        await p.run_until_quiescent(max_seconds=5)
        assert all((await bound(p)).values())
        await p.client.apply(objs("PodGroup", [pod_group("vip", 4, timeout=60)]))
        await p.client.apply(objs("Pod", [pod(f"vip-{i}", 2, "vip", priority=100) for i in range(4)]))
        await p.run_until_quiescent(max_seconds=120)
        vip = await bound(p, "vip")
        assert len(vip) == 4 and all(vip.values())
        assert len([n for n in await bound(p) if n.startswith("low-")]) == 0  # every low pod was evicted


async def test_a_gang_that_cannot_fit_even_by_preempting_is_rejected_early() -> None:
    clock = FakeClock(START)
    async with Pipeline(config(), clock=clock) as p:
        calls = Calls(p)
        await p.client.apply(objs("Node", [node("n0", 4), node("n1", 4)]))
        await p.client.apply(objs("Pod", [pod(f"high-{i}", 1, priority=1000) for i in range(6)]))
        await p.run_until_quiescent(max_seconds=5)
        await p.client.apply(objs("PodGroup", [pod_group("g", 2)]))
        await p.client.apply(objs("Pod", [pod(f"g-{i}", 2, "g", priority=100) for i in range(2)]))
        await p.run_until_quiescent(max_seconds=60)
        assert not any((await bound(p, "g")).values())
        assert [n for n in calls.permits if n.startswith("g-")] == []
        for i in range(6):  # nobody preempted, as a client sees it
            assert not any(e.reason == "Preempted" for e in await p.client.events("Pod", f"default/high-{i}"))
        placed = await bound(p)
        assert all(placed[f"high-{i}"] for i in range(6))
        assert "cannot be placed node by node" in condition_message(await p.client.get("Pod", "default", "g-0"))
