"""Asynchronous preemption (SchedulerAsyncPreemption) through the real pipeline on a
FakeClock: the cycle nominates, the preemption actor evicts (DisruptionTarget then
delete, a Preempted event each), PreEnqueue holds the preemptor until its last victim
is gone, a failed eviction activates it again, a Permit waiter is rejected, not
deleted; with the gate off (from the configuration) the cycle evicts as before."""
from __future__ import annotations

import random
from typing import Any, Sequence

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.store import WatchEvent
from actors.store.backend import Write
from actors.store.memory import InMemoryBackend
from framework.api.objects import Pod
from tests.actors.helpers import API, WaitPermit, node, pod
from framework.config import full_registry
from framework.plugins import Registry

GATE_OFF = {"apiVersion": API, "kind": "KubeSchedulerConfiguration",
            "featureGates": {"SchedulerAsyncPreemption": False}}


def events(p: Pipeline, name: str) -> list[tuple[str, str]]:
    """(reason, message) per time seen (a repeat counts up one stored event)."""
    return [(e.reason, e.message) for e in p.store.events_for("Pod", f"default/{name}") for _ in range(e.count)]


async def preempt_two(p: Pipeline, seen: list[WatchEvent]) -> None:
    await p.client.watch(seen.append)
    await p.client.apply([node("n0", cpu="2")])
    await p.client.apply([pod("low-a", cpu="1", priority=0), pod("low-b", cpu="1", priority=0)])
    await p.run_until_quiescent(max_seconds=5)
    await p.client.apply([pod("high", cpu="2", priority=100)])
    await p.run_until_quiescent(max_seconds=30)


def victim_history(seen: list[WatchEvent], name: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """(event type, DisruptionTarget (status, reason) conditions) for one pod after it was bound."""
    out = []
    for ev in seen:
        if ev.kind == "Pod" and ev.obj.name == name and ev.obj.node_name:
            conds = [(c.get("status"), c.get("reason")) for c in ev.obj.conditions if c.get("type") == "DisruptionTarget"]
            out.append((ev.type, conds))
    return out


def preempted_by_high(p: Pipeline) -> str:
    """Upstream's Preempted event message; the preemptor's uid is the server's."""
    return f"Preempted by pod {p.store.peek('Pod', 'default', 'high').uid} on node n0"


async def test_the_actor_marks_then_deletes_each_victim_and_the_preemptor_binds_after_one_preemption() -> None:
    seen: list[WatchEvent] = []
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await preempt_two(p, seen)
        assert p.store.peek("Pod", "default", "high").node_name == "n0"
        # One preemption only: PreEnqueue held the preemptor until its last victim was gone.
        assert [r for r, _ in events(p, "high")] == ["FailedScheduling", "Scheduled"]
        assert events(p, "high")[0][1].endswith("preemption: found a potential placement for pod on node n0, "
                                                 "preempting 2 victims")
        for victim in ("low-a", "low-b"):
            assert p.store.peek("Pod", "default", victim) is None
            assert events(p, victim)[-1] == ("Preempted", preempted_by_high(p))
            history = victim_history(seen, victim)
            assert history[-2:] == [("MODIFIED", [("True", "PreemptionByScheduler")]),
                                    ("DELETED", [("True", "PreemptionByScheduler")])]
        assert len(p.handle.preemptions) == 0 and p.preemption.failed == 0


async def test_with_the_gate_off_in_the_configuration_the_cycle_evicts_without_the_actor() -> None:
    seen: list[WatchEvent] = []
    async with Pipeline(GATE_OFF, clock=FakeClock(), rand=random.Random(1)) as p:
        await preempt_two(p, seen)
        assert p.store.peek("Pod", "default", "high").node_name == "n0"
        for victim in ("low-a", "low-b"):
            assert events(p, victim)[-1] == ("Preempted", preempted_by_high(p))
            # As upstream's PreemptPod with the gate off too: DisruptionTarget, then the delete.
            assert victim_history(seen, victim)[-2:] == [("MODIFIED", [("True", "PreemptionByScheduler")]),
                                                         ("DELETED", [("True", "PreemptionByScheduler")])]


class FailsOneDisruptionTarget(InMemoryBackend):
    """Refuses the first commit that marks `name` as a disruption target (a store
    that cannot write, once)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.refused = 0

    async def commit(self, writes: Sequence[Write]) -> None:
        if not self.refused and any(w.raw is not None and w.raw["metadata"]["name"] == self.name
                                    and "DisruptionTarget" in str((w.raw.get("status") or {}).get("conditions"))
                                    for w in writes):
            self.refused += 1
            raise OSError("disk full")
        await super().commit(writes)


async def test_a_failed_eviction_spares_the_last_victim_and_activates_the_preemptor() -> None:
    backend = FailsOneDisruptionTarget("low-big")
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1), backend=backend) as p:
        await p.client.apply([node("n0", cpu="2")])
        # Victims go most important first: low-big (priority 5) is evicted before low-small, the last.
        await p.client.apply([pod("low-big", cpu="1", priority=5), pod("low-small", cpu="1", priority=0)])
        await p.run_until_quiescent(max_seconds=5)
        await p.client.apply([pod("high", cpu="2", priority=100)])
        # No cluster event follows the failure: only the activation brings the preemptor back
        # (well before the unschedulable pool's 5-minute flush).
        await p.run_until_quiescent(max_seconds=30)
        assert backend.refused == 1 and p.preemption.failed == 1
        assert [r for r, _ in events(p, "high")] == ["FailedScheduling", "FailedScheduling", "Scheduled"]
        assert p.store.peek("Pod", "default", "high").node_name == "n0"
        assert p.store.peek("Pod", "default", "low-big") is None and p.store.peek("Pod", "default", "low-small") is None
        # The first job evicted nobody: low-small, the last victim, was spared.
        assert [r for r, _ in events(p, "low-small")].count("Preempted") == 1


def permit_registry() -> Registry:
    extra = Registry()
    extra.register("WaitPermit", lambda args, handle: WaitPermit(handle))
    return full_registry(extra)


def permit_config() -> dict[str, Any]:
    return {"apiVersion": API, "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler", "plugins": {"permit": {"enabled": [{"name": "WaitPermit"}]}}}]}


async def test_a_victim_waiting_at_permit_is_rejected_not_deleted() -> None:
    async with Pipeline(permit_config(), clock=FakeClock(), rand=random.Random(1), registry=permit_registry()) as p:
        await p.client.apply([node("n0", cpu="1")])
        await p.client.apply([pod("waiter", cpu="1", priority=0, labels={"wait": "g", "timeout": "600"})])
        await p.settle()
        assert [w.pod.name for w in await p.list_waiting()] == ["waiter"]
        await p.client.apply([pod("high", cpu="1", priority=100)])
        await p.run_until_quiescent(max_seconds=30)
        assert p.store.peek("Pod", "default", "high").node_name == "n0"
        waiter = p.store.peek("Pod", "default", "waiter")
        assert isinstance(waiter, Pod) and not waiter.node_name  # still there, unbound
        assert not any(c.get("type") == "DisruptionTarget" for c in waiter.conditions)
        assert ("Preempted", preempted_by_high(p)) in events(p, "waiter")
