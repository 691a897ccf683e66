"""The whole pipeline in one process: end to end, status and events, profiles, shutdown."""
from __future__ import annotations

import asyncio
import random

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from framework.api.objects import Node, Pod
from framework.api.resources import Resource
from tests.actors.helpers import (
    API,
    BlockingPreBind,
    error_registry,
    blocking_registry,
    config,
    node,
    pod,
    profile,
    recording_registry,
)


async def until(predicate, rounds: int = 10_000) -> None:  # noqa: ANN001
    """Let the event loop run until `predicate()` holds (no time passes)."""
    for _ in range(rounds):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


def pods_in_store(p: Pipeline) -> list[Pod]:
    return [o for o in p.store.peek_all("Pod") if isinstance(o, Pod)]


def condition(p: Pod, kind: str) -> dict | None:
    return next((c for c in p.conditions if c.get("type") == kind), None)


def assert_no_node_overcommitted(p: Pipeline) -> None:
    nodes = {n.name: n for n in p.store.peek_all("Node") if isinstance(n, Node)}
    used: dict[str, list[int]] = {name: [0, 0, 0] for name in nodes}
    for q in pods_in_store(p):
        if q.node_name:
            r = q.resource
            u = used[q.node_name]
            u[0] += r.milli_cpu
            u[1] += r.memory
            u[2] += 1
    for name, (cpu, mem, count) in used.items():
        alloc: Resource = nodes[name].allocatable
        assert cpu <= alloc.milli_cpu and mem <= alloc.memory and count <= alloc.allowed_pod_number, name


async def test_two_thousand_mixed_pods_on_a_hundred_nodes_end_bound_or_explained() -> None:
    rng = random.Random(7)
    clock = FakeClock()
    async with Pipeline(None, clock=clock, rand=random.Random(1)) as p:
        await p.client.apply([node(f"n{i}", cpu="4", memory="8Gi") for i in range(100)])
        sizes = [("50m", "64Mi"), ("100m", "128Mi"), ("250m", "256Mi"), ("500m", "512Mi")]
        batch = []
        for i in range(1960):
            cpu, mem = rng.choice(sizes)
            batch.append(pod(f"p{i}", cpu=cpu, memory=mem, priority=rng.choice([0, 0, 10])))
        batch += [pod(f"huge{i}", cpu="6", memory="1Gi") for i in range(36)]  # fit only on big nodes
        batch += [pod(f"never{i}", cpu="100") for i in range(4)]  # fit nowhere, ever
        for i in range(0, len(batch), 500):
            await p.client.apply(batch[i:i + 500])
        await p.run_until_quiescent(60)
        huge = [q for q in pods_in_store(p) if q.name.startswith("huge")]
        assert not any(q.node_name for q in huge)
        assert all(condition(q, "PodScheduled")["reason"] == "Unschedulable" for q in huge)

        await p.client.apply([node(f"big{i}", cpu="16", memory="64Gi") for i in range(18)])
        await p.run_until_quiescent(60)

        pods = pods_in_store(p)
        assert len(pods) == 2000
        unbound = sorted(q.name for q in pods if not q.node_name)
        assert unbound == [f"never{i}" for i in range(4)]
        for q in pods:
            cond = condition(q, "PodScheduled")
            if q.node_name:
                assert cond == {"type": "PodScheduled", "status": "True"}
            else:
                assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
                # Big nodes do not help these pods (NodeResourcesFit's hint skips them),
                # so their last message is from before the big nodes came.
                assert cond["message"] == ("0/100 nodes are available: 100 Insufficient cpu. no new claims to deallocate, preemption: 0/100 nodes"
                                           " are available: 100 Preemption is not helpful for scheduling.")
        assert_no_node_overcommitted(p)
        assert p.scheduler.cache.assumed == set()


async def test_unschedulable_pod_reports_fit_error_and_binds_when_a_node_is_added() -> None:
    clock = FakeClock()
    async with Pipeline(config(profile()), clock=clock, registry=recording_registry([])) as p:
        await p.client.apply([node("small", cpu="1")])
        await p.client.create(pod("big", cpu="2"))
        await p.settle()
        got = Pod(await p.client.get("Pod", "default", "big"))
        assert condition(got, "PodScheduled") == {
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient cpu."}
        events = await p.client.events("Pod", "default/big")
        assert [e.reason for e in events] == ["FailedScheduling"]
        await p.client.create(node("large", cpu="8"))
        await p.run_until_quiescent()
        got = Pod(await p.client.get("Pod", "default", "big"))
        assert got.node_name == "large"
        events = await p.client.events("Pod", "default/big")
        assert events[-1].reason == "Scheduled"
        assert events[-1].message == "Successfully assigned default/big to large"


async def test_pods_choose_their_profile_by_scheduler_name_and_unknown_names_are_left_alone() -> None:
    log: list[str] = []
    clock = FakeClock()
    cfg = config(profile("default-scheduler"), profile("no-reserve", reserve=False))
    async with Pipeline(cfg, clock=clock, registry=recording_registry(log)) as p:
        await p.client.apply([node("n1")])
        await p.client.apply([pod("a"), pod("b", scheduler="no-reserve"), pod("c", scheduler="someone-else")])
        await p.run_until_quiescent()
        bound = {q.name: q.node_name for q in pods_in_store(p)}
        assert bound == {"a": "n1", "b": "n1", "c": ""}
        assert log == ["reserve:A", "reserve:B"]


async def test_deleting_a_bound_pod_frees_its_room_for_a_pending_pod() -> None:
    clock = FakeClock()
    async with Pipeline(config(profile()), clock=clock, registry=recording_registry([])) as p:
        await p.client.apply([node("n1", cpu="1")])
        await p.client.create(pod("first", cpu="800m"))
        await p.settle()
        await p.client.create(pod("second", cpu="800m"))
        await p.settle()
        assert Pod(await p.client.get("Pod", "default", "second")).node_name == ""
        await p.client.delete("Pod", "default", "first")
        await p.run_until_quiescent()
        assert Pod(await p.client.get("Pod", "default", "second")).node_name == "n1"


async def test_shutdown_mid_flight_leaves_no_task_and_no_half_bound_pod() -> None:
    clock = FakeClock()
    p = Pipeline(config(profile()), clock=clock, registry=recording_registry([]))
    await p.start()
    await p.client.apply([node(f"n{i}", cpu="8") for i in range(10)])
    await p.client.apply([pod(f"w{i}", labels={"wait": "g"}) for i in range(30)])
    await p.client.apply([pod(f"p{i}") for i in range(300)])
    # Stop in the middle of things: waiters parked, binds in flight, pods queued.
    await until(lambda: p.scheduler.stats.scheduled >= 100 and p.scheduler.bindings.total > 30)
    in_flight = p.scheduler.bindings.total - len(p.waiting_room)
    assert len(p.waiting_room) == 30 and in_flight > 0
    await p.stop()
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert p.scheduler.cache.assumed == set()
    assert len(p.waiting_room) == 0
    queued = p.queue.queue
    for q in pods_in_store(p):
        assert bool(q.node_name) or queued.get(q.key) is not None, q.key
    assert not any(q.node_name for q in pods_in_store(p) if q.name.startswith("w"))
    bound = sum(1 for q in pods_in_store(p) if q.node_name)
    assert bound == p.scheduler.stats.scheduled and 100 <= bound < 300


async def test_a_stuck_binding_cycle_is_cancelled_after_the_grace_period_and_requeued() -> None:
    blocker = BlockingPreBind()
    cfg = config(profile())
    cfg["profiles"][0]["plugins"]["preBind"] = {"enabled": [{"name": "BlockingPreBind"}]}
    p = Pipeline(cfg, clock=FakeClock(), registry=blocking_registry([], blocker), drain_grace_seconds=0)
    await p.start()
    await p.client.apply([node("n1")])
    await p.client.apply([pod("stuck", labels={"block": "yes"}), pod("fine")])
    await until(lambda: blocker.entered == ["stuck"] and p.scheduler.stats.scheduled == 1)
    await p.stop()
    assert asyncio.all_tasks() == {asyncio.current_task()}
    # The cancelled cycle reported by message; the scheduler's own loop undid it.
    assert p.scheduler.bindings.undone_in_place == 0
    assert p.scheduler.cache.assumed == set()
    assert p.queue.queue.get("default/stuck") is not None
    bound = {q.name: q.node_name for q in pods_in_store(p)}
    assert bound == {"stuck": "", "fine": "n1"}


async def test_a_binding_cycle_cancelled_with_the_scheduler_loop_itself_undoes_in_place() -> None:
    """The one exception to "only the scheduler's loop changes its cache": when the
    loop is cancelled with its cycles, no message can be read any more."""
    blocker = BlockingPreBind()
    cfg = config(profile())
    cfg["profiles"][0]["plugins"]["preBind"] = {"enabled": [{"name": "BlockingPreBind"}]}
    p = Pipeline(cfg, clock=FakeClock(), registry=blocking_registry([], blocker))
    await p.start()
    await p.client.apply([node("n1")])
    await p.client.apply([pod("stuck", labels={"block": "yes"})])
    await until(lambda: blocker.entered == ["stuck"])
    assert p.scheduler.cache.assumed != set()
    sched = p._tasks["scheduler"]
    sched.cancel()  # as stop does when the loop does not end after cancel_bindings
    await asyncio.wait({sched})
    assert p.scheduler.bindings.undone_in_place == 1
    assert p.scheduler.cache.assumed == set()
    await p.stop()
    assert p.queue.queue.get("default/stuck") is not None
    assert {q.name: q.node_name for q in pods_in_store(p)} == {"stuck": ""}


async def test_an_erroring_pod_is_retried_after_exact_backoffs_by_the_queue_timers() -> None:
    times: list[float] = []
    cfg = config(profile())
    cfg["profiles"][0]["plugins"]["preFilter"] = {"enabled": [{"name": "ErrorFilter"}]}
    clock = FakeClock()
    async with Pipeline(cfg, clock=clock, registry=error_registry(times)) as p:
        await p.client.apply([node("n1")])
        await p.client.create(pod("e"))
        await p.run_until_quiescent(60)
        gaps = [round(b - a, 6) for a, b in zip(times, times[1:])]
        assert gaps[:7] == [1, 2, 4, 8, 10, 10, 10]
        got = Pod(await p.client.get("Pod", "default", "e"))
        cond = condition(got, "PodScheduled")
        assert cond["reason"] == "SchedulerError"
        assert cond["message"] == 'running PreFilter plugin "ErrorFilter": injected error'


async def test_a_gated_pod_waits_until_its_gates_are_removed() -> None:
    clock = FakeClock()
    async with Pipeline(None, clock=clock) as p:
        await p.client.apply([node("n1")])
        gated = pod("g")
        gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
        created = await p.client.create(gated)
        await p.run_until_quiescent()
        assert (await p.pending_counts())["gated"] == 1
        assert p.scheduler.stats.attempts == 0
        spec = {k: v for k, v in created["spec"].items() if k != "schedulingGates"}
        await p.client.update({**created, "spec": spec})
        await p.run_until_quiescent()
        assert Pod(await p.client.get("Pod", "default", "g")).node_name == "n1"


async def test_preemption_nominates_the_node_deletes_the_victim_and_binds_the_preemptor() -> None:
    clock = FakeClock()
    nominated: list[str] = []
    async with Pipeline(None, clock=clock) as p:
        await p.client.watch(lambda ev: nominated.append(ev.obj.nominated_node_name)
                             if ev.obj.name == "high" and ev.obj.nominated_node_name else None, frozenset({"Pod"}))
        await p.client.apply([node("n1", cpu="1")])
        await p.client.create(pod("low", cpu="800m", priority=0))
        await p.run_until_quiescent()
        await p.client.create(pod("high", cpu="800m", priority=100))
        await p.run_until_quiescent()
        names = {q.name: q.node_name for q in pods_in_store(p)}
        assert names == {"high": "n1"}
        assert nominated and set(nominated) == {"n1"}
        high = Pod(await p.client.get("Pod", "default", "high"))
        assert high.nominated_node_name == ""  # cleared at binding
        assert p.scheduler.nominator.nodes() == []  # and in the scheduler's nominator at assume
        assert [e.reason for e in await p.client.events("Pod", "default/low")][-1] == "Preempted"
        reasons = [e.reason for e in await p.client.events("Pod", "default/high")]
        assert reasons == ["FailedScheduling", "Scheduled"]


async def test_synchronous_preemption_deletes_the_victim_before_recording_it_preempted() -> None:
    clock = FakeClock()
    seen: list[tuple[str, str, str]] = []
    sync = {"apiVersion": API, "kind": "KubeSchedulerConfiguration", "featureGates": {"SchedulerAsyncPreemption": False}}
    async with Pipeline(sync, clock=clock) as p:
        await p.client.watch(lambda ev: seen.append((ev.kind, ev.type, ev.obj.raw.get("reason", "")))
                             if ev.kind == "Event" or ev.obj.name == "low" else None,
                             frozenset({"Pod", "Event"}))
        await p.client.apply([node("n1", cpu="1")])
        await p.client.create(pod("low", cpu="800m", priority=0))
        await p.run_until_quiescent()
        await p.client.create(pod("high", cpu="800m", priority=100))
        await p.run_until_quiescent()
        deleted = seen.index(("Pod", "DELETED", ""))
        preempted = next(i for i, ev in enumerate(seen) if ev[0] == "Event" and ev[2] == "Preempted")
        assert deleted < preempted  # upstream's PreemptPod: delete, then the event


async def test_a_bad_configuration_fails_start_and_leaves_no_task() -> None:
    from framework.config import ConfigError

    bad = config(profile())
    bad["profiles"][0]["plugins"]["filter"] = {"enabled": [{"name": "NoSuchPlugin"}]}
    p = Pipeline(bad, clock=FakeClock(), registry=recording_registry([]))
    try:
        await p.start()
    except ConfigError as e:
        assert "NoSuchPlugin" in str(e)
    else:
        raise AssertionError("start() accepted an unknown plugin")
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert p.phase == "stopped"


async def test_a_victim_stays_terminating_by_preemption_in_the_cache_until_its_deletion_is_seen() -> None:
    from framework.preemption import pod_terminating_by_preemption

    clock = FakeClock()
    async with Pipeline(None, clock=clock) as p:
        await p.client.apply([node("n1", cpu="1")])
        await p.client.create(pod("low", cpu="800m", priority=0))
        await p.run_until_quiescent()
        s = p.scheduler
        low = s.cache.get_pod("default/low")
        high = Pod({**pod("high", cpu="800m", priority=100), "status": {"nominatedNodeName": "n1"}})
        fwk = s.frameworks["default-scheduler"]
        preemption = next(pl for pl in fwk.post_filtering.post_filter_plugins if pl.name == "DefaultPreemption")

        def eligible() -> tuple[bool, str]:
            s.cache.update_snapshot(s.snapshot)
            fwk.handle.set_snapshot(s.snapshot)
            return preemption.pod_eligible_to_preempt_others(high, None)

        s.preemption.evict(low, high, "preempted by default/high on node n1")  # the store has not seen the delete yet
        assert pod_terminating_by_preemption(s.cache.get_pod("default/low"))
        assert eligible() == (False, "not eligible due to a terminating pod on the nominated node.")
        await p.run_until_quiescent()
        assert s.cache.get_pod("default/low") is None and eligible() == (True, "")


async def test_a_cycle_sees_the_nomination_this_scheduler_made_before_the_store_echoes_it() -> None:
    from framework.interface import QueuedPodInfo

    clock = FakeClock()
    async with Pipeline(None, clock=clock) as p:
        await p.client.apply([node("n1", cpu="1")])
        await p.client.create(pod("low", cpu="800m", priority=0))
        await p.run_until_quiescent()
        s = p.scheduler
        high = Pod({**pod("high", cpu="800m", priority=100), "metadata": {"name": "high", "namespace": "default",
                                                                          "uid": "high"}})
        s.pending[high.key] = high  # as the store delivered it: no status.nominatedNodeName yet
        s.nominator.add(high, "n1")  # PostFilter nominated it; the status write is in flight
        qpi = QueuedPodInfo(pod=high, timestamp=0)
        assert s._begin_cycle(qpi) is not None
        assert qpi.pod.nominated_node_name == "n1"
        s.nominator.delete(high)  # a cleared nomination is not put back
        qpi = QueuedPodInfo(pod=high, timestamp=0)
        assert s._begin_cycle(qpi) is not None and qpi.pod.nominated_node_name == ""
