"""Property: over random clusters, workload-aware preemption never evicts part of a
victim gang, never places part of the preemptor gang, never takes a pod of equal or
higher priority, and leaves every node within its allocatable cpu once the victims
are gone and the members placed, all in one topology domain."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from framework.api.objects import Pod
from framework.plugins.defaultpreemption.group_step import GangView, SimulatedFits
from framework.workload.preemption import domains_of, plan_group_preemption
from tests.framework.preemption_builders import Cluster, node, pod
from tests.framework.workload_preemption_builders import gang_group, member

CPU = 1000


@st.composite
def clusters(draw: st.DrawFn) -> tuple[Cluster, list[Pod], int, str, dict[str, list[str]]]:
    n_nodes = draw(st.integers(2, 5))
    key = draw(st.sampled_from(["", "rack"]))
    names = [f"n{i}" for i in range(n_nodes)]
    free = dict.fromkeys(names, CPU)
    bound: list[Pod] = []
    groups = []
    gangs: dict[str, list[str]] = {}
    for g in range(draw(st.integers(0, 3))):
        size, cpu, prio = draw(st.integers(1, 3)), draw(st.sampled_from([200, 300, 400])), draw(st.sampled_from([1, 5, 20]))
        where = [draw(st.sampled_from(names)) for _ in range(size)]
        if any(sum(cpu for w2 in where if w2 == w) > free[w] for w in where):
            continue
        for w in where:
            free[w] -= cpu
        name = f"low{g}"
        groups.append(gang_group(name, size))
        gangs[name] = [f"{name}-{i}" for i in range(size)]
        bound += [member(name, i, cpu=f"{cpu}m", priority=prio, node_name=w) for i, w in enumerate(where)]
    for s in range(draw(st.integers(0, 4))):
        w, cpu, prio = draw(st.sampled_from(names)), draw(st.sampled_from([100, 300, 500])), draw(st.sampled_from([1, 5, 20]))
        if cpu <= free[w]:
            free[w] -= cpu
            bound.append(pod(f"solo{s}", cpu=f"{cpu}m", priority=prio, node_name=w))
    size, cpu = draw(st.integers(1, 4)), draw(st.sampled_from([200, 400, 600]))
    high = [member("high", i, cpu=f"{cpu}m", priority=10) for i in range(size)]
    nodes = [node(n, cpu=f"{CPU}m", labels={"rack": "ab"[i % 2]}) for i, n in enumerate(names)]
    c = Cluster(nodes, bound, objects=[*groups, gang_group("high", size, key), *high])
    return c, high, cpu, key, gangs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_no_victim_gang_is_partly_evicted_and_no_preemptor_gang_partly_placed(case) -> None:  # noqa: ANN001
    c, high, cpu, key, gangs = case
    nodes = c.snapshot.list()
    got = plan_group_preemption(high, 10, nodes, domains_of(nodes, key), GangView(c.handle).units(),
                                SimulatedFits(c.fwk, {}, frozenset(m.uid for m in high)), [])
    if got.plan is None:
        assert got.reasons
        return
    victims = {p.name for p in got.plan.victims}
    for members in gangs.values():
        assert set(members) <= victims or not set(members) & victims, (members, victims)
    assert all(p.priority < 10 for p in got.plan.victims)
    assert sorted(m.name for m, _ in got.plan.placements) == sorted(m.name for m in high)
    used = {ni.name: sum(pi.pod.non_zero_cpu for pi in ni.pods if pi.pod.name not in victims) for ni in nodes}
    for _, n in got.plan.placements:
        used[n] += cpu
    assert all(v <= CPU for v in used.values()), used
    if key:
        racks = {c.snapshot.get(n).node.labels["rack"] for _, n in got.plan.placements}
        assert racks == {got.plan.domain}
