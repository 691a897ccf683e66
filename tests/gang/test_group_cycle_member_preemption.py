"""With WorkloadAwarePreemption off, the whole-group cycle runs each member's own
PostFilter inside the placement, as upstream 1.36's podGroupPodSchedulingAlgorithm
does: DefaultPreemption preempts for that member alone and nominates it, the member
is assumed on its nominated node so the members after it see it there, and when the
quorum is reached that way the group waits on its preemption (every member goes back
nominated: the ones that preempted to their own node, the ones that fit to theirs).
With the gate on the group-aware step runs once for the group instead (unchanged).

Through the real actor pipeline with a fake clock. The victims (grace 0) go at once
and the gang is tried again in the same settle, so what the first group cycle did is
read where it happens: each member's failure (its nomination and message) as the
scheduler hands it to the failure handler, and each preemption as it is started."""
from __future__ import annotations

from typing import Any

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from tests.gang.test_group_cycle_pipeline import NS, START, condition, gang, member, nodes, placed
from tests.gang.test_group_cycle_properties import prioritized

GATE_OFF: dict[str, Any] = {"featureGates": {"WorkloadAwarePreemption": False}}


def low(name: str, node: str, cpu: int, priority: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"nodeName": node, "priority": priority,
                     "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": str(cpu)}}}]}}


class FirstCycle:
    """What the first failed group cycle handed on: per member (nominated, message), and
    per preemption started (preemptor, node, victims)."""

    def __init__(self, p: Pipeline) -> None:
        self.failures: dict[str, tuple[str | None, str]] = {}
        self.preemptions: list[tuple[str, str, tuple[str, ...]]] = []
        sched, cycles = p.scheduler, p.scheduler.group_cycle
        handle, actor = sched.handle_failure, sched.preemption.actor
        first = self

        def failure(qpi: Any, status: Any, nominated: str | None, started: float) -> None:
            if cycles.cycles == 1:
                self.failures[qpi.pod.name] = (nominated, status.message())
            handle(qpi, status, nominated, started)

        class Recording:
            """The preemption actor's ref, recording the jobs the first cycle starts."""

            def tell(self, msg: Any) -> None:
                if cycles.cycles == 1:
                    job = msg.job
                    first.preemptions.append((job.preemptor.name, job.node_name, tuple(v.name for v in job.victims)))
                actor.tell(msg)

        sched.handle_failure = failure
        sched.preemption.actor = Recording()

    def nominated(self) -> dict[str, str | None]:
        return {name: got[0] for name, got in self.failures.items()}


async def one_gang_cycle(p: Pipeline, *, members: int, cpu: int, min_count: int | None = None,
                         topology: str = "") -> FirstCycle:
    """Three nodes of 4 cpu, each holding one low pod of 3 cpu (priorities 1, 2, 3 on
    n0, n1, n2), then a gang of priority 100 whose members need `cpu` each, until
    the pipeline is quiet (no time passes)."""
    first = FirstCycle(p)
    await p.client.apply(nodes(4, 4, 4))
    for i in range(3):
        raw = low(f"low-{i}", f"n{i}", 3, i + 1)
        raw["metadata"]["labels"] = {"rack": f"r{i}"}
        await p.client.apply([raw])
    await p.settle()
    group = gang("high", min_count or members)
    if topology:
        group["spec"]["schedulingConstraints"] = {"topology": [{"key": topology}]}
    await p.client.apply([group])
    await p.client.apply([prioritized(member(f"high-{i}", cpu, "high"), 100) for i in range(members)])
    await p.settle()
    return first


async def test_with_the_gate_off_each_member_of_a_gang_preempts_for_itself_in_one_group_cycle() -> None:
    async with Pipeline(GATE_OFF, clock=FakeClock(START)) as p:
        first = await one_gang_cycle(p, members=3, cpu=2)
        # high-0 takes n0's low-0 (the lowest victim) and is assumed on n0; high-1 then
        # finds n0 holds it beside high-0 once low-0 is gone; high-2 no longer fits n0 and
        # takes n1's low-1 (priority 2 < 3): upstream's DefaultPreemption per member, in order
        assert first.preemptions == [("high-0", "n0", ("low-0",)), ("high-1", "n0", ("low-0",)),
                                     ("high-2", "n1", ("low-1",))]
        assert first.nominated() == {"high-0": "n0", "high-1": "n0", "high-2": "n1"}
        assert {name: m for name, (_, m) in first.failures.items()} == {
            name: f"0/3 nodes are available: 3 Insufficient cpu. preemption: found a potential placement for pod "
                  f"on node {node}, preempting 1 victims" for name, node in first.nominated().items()}
        got = await placed(p)  # the gang lands whole once the victims are gone
        assert sorted(got[f"high-{i}"] or "" for i in range(3)) == ["n0", "n0", "n1"] and got["low-2"] == "n2"
        pg = await p.client.get("PodGroup.scheduling.k8s.io", NS, "high")
        assert condition(pg, "PodGroupScheduled")["status"] == "True"


async def test_with_the_gate_off_a_gang_that_waits_on_its_preemption_says_so_on_the_podgroup() -> None:
    async with Pipeline(GATE_OFF, clock=FakeClock(START)) as p:
        written: list[str] = []
        cycles = p.scheduler.group_cycle
        place = cycles.placement

        def placement(*args: Any, **kw: Any) -> Any:
            got = place(*args, **kw)
            written.append(got.status.message())
            return got

        cycles.placement = placement
        await one_gang_cycle(p, members=3, cpu=2)
        assert written[0] == "pod group is waiting for preemption to complete"


async def test_with_the_gate_off_a_member_that_fits_goes_back_nominated_to_its_node_while_the_group_waits() -> None:
    async with Pipeline(GATE_OFF, clock=FakeClock(START)) as p:
        # members of 1 cpu: high-0, high-1 and high-2 each fit in one node's free cpu, high-3
        # preempts n0's low-0: the quorum of 4 is reached counting it
        first = await one_gang_cycle(p, members=4, cpu=1)
        noms = first.nominated()
        assert sorted(noms[f"high-{i}"] or "" for i in range(3)) == ["n0", "n1", "n2"]
        assert first.preemptions == [("high-3", "n0", ("low-0",))] and noms["high-3"] == "n0"


async def test_with_the_gate_off_members_that_preempted_are_cleared_when_the_gang_still_falls_short() -> None:
    async with Pipeline(GATE_OFF, clock=FakeClock(START)) as p:
        # five members of 3 cpu, minCount 5, three nodes: one member per node even with
        # every victim gone, so the quorum is out of reach after the fourth (the early
        # stop: the fifth is not tried); the three preempted (upstream does not take that
        # back) but none stays nominated, nor does the fourth, whose PostFilter found nothing
        first = await one_gang_cycle(p, members=5, cpu=3)
        assert [victims for _, _, victims in first.preemptions] == [("low-0",), ("low-1",), ("low-2",)]
        assert first.nominated() == {"high-0": "", "high-1": "", "high-2": "", "high-3": "", "high-4": None}
        assert first.failures["high-0"][1] == "minCount (5) cannot be satisfied: 3 scheduled, 1 remaining"


async def test_with_the_gate_off_a_gang_with_a_topology_constraint_does_not_preempt_as_upstream() -> None:
    async with Pipeline(GATE_OFF, clock=FakeClock(START)) as p:
        first = await one_gang_cycle(p, members=3, cpu=2, topology="kubernetes.io/hostname")
        assert first.preemptions == [] and p.scheduler.preemption.victims == 0
        assert not any(n for name, n in (await placed(p)).items() if name.startswith("high"))


async def test_with_the_gate_on_the_group_step_still_preempts_once_for_the_whole_gang() -> None:
    async with Pipeline(clock=FakeClock(START)) as p:
        first = await one_gang_cycle(p, members=3, cpu=2)
        # the group-aware step plans room for all three at once: one preemption, by the
        # first member, whose victims make room for the whole gang (the step nominates
        # the other members itself)
        assert len(first.preemptions) == 1 and first.preemptions[0][:2] == ("high-0", "n0")
        assert sorted(first.preemptions[0][2]) == ["low-0", "low-1"]
        assert first.nominated() == {"high-0": "n0", "high-1": None, "high-2": None}


async def test_with_the_gate_off_and_synchronous_preemption_each_member_evicts_inside_the_cycle() -> None:
    gates = {"featureGates": {"WorkloadAwarePreemption": False, "SchedulerAsyncPreemption": False}}
    async with Pipeline(gates, clock=FakeClock(START)) as p:
        first = await one_gang_cycle(p, members=3, cpu=2)
        assert first.preemptions == []  # no preemption actor: evicted in the cycle
        assert first.nominated() == {"high-0": "n0", "high-1": "n0", "high-2": "n1"}
        assert p.scheduler.preemption.victims == 2  # low-0 once (already terminating for high-1), low-1
        got = await placed(p)
        assert sorted(got[f"high-{i}"] or "" for i in range(3)) == ["n0", "n0", "n1"] and got["low-2"] == "n2"
