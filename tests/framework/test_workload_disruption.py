"""KEP-5710's PodGroup fields in workload-aware preemption (1.36): disruptionMode Pod
(the default) makes each member its own victim, PodGroup makes the group one unit;
the PodGroup's priority is every member's priority as a victim and the gang
preemptor's own (upstream's newDomainForWorkloadPreemption rows are mirrored here)."""
from __future__ import annotations

from framework.plugins.defaultpreemption.group_step import GangView
from framework.workload.preemption import VictimUnit, unit_importance
from tests.framework.preemption_builders import Cluster, node, pod
from tests.framework.test_workload_preemption import names, plan
from tests.framework.workload_preemption_builders import gang, gang_group


def units_of(c: Cluster) -> list[tuple[list[str], int]]:
    return sorted((names(u.members), u.priority) for u in GangView(c.handle).units())


def test_members_of_a_group_in_disruption_mode_pod_are_single_victims_at_the_group_priority() -> None:
    low = gang("pg1", ["n1", "n2"], cpu="100m", priority=10)
    c = Cluster([node("n1"), node("n2")], low, objects=[gang_group("pg1", 2, disruption="Pod", priority=50)])
    assert units_of(c) == [(["pg1-0"], 50), (["pg1-1"], 50)]


def test_a_group_in_disruption_mode_podgroup_is_one_unit_at_its_priority() -> None:
    low = gang("pg1", ["n1", "n2"], cpu="100m", priority=10)
    c = Cluster([node("n1"), node("n2")], [*low, pod("p4", node_name="n2", priority=30)],
                objects=[gang_group("pg1", 2, disruption="PodGroup", priority=50)])
    assert units_of(c) == [(["p4"], 30), (["pg1-0", "pg1-1"], 50)]


def test_without_a_group_priority_the_members_own_priorities_count() -> None:
    low = gang("pg1", ["n1"], cpu="100m", priority=10)
    c = Cluster([node("n1")], low, objects=[gang_group("pg1", 1, disruption="Pod")])
    assert units_of(c) == [(["pg1-0"], 10)]


def test_a_gang_in_disruption_mode_pod_loses_only_the_members_whose_room_is_needed() -> None:
    low = gang("low", ["n1", "n2"], cpu="400m", priority=1)
    c = Cluster([node("n1"), node("n2")], low, objects=[gang_group("low", 2, disruption="Pod")])
    got = plan(c, [pod("urgent", cpu="300m", priority=100)], 100)
    assert got.plan is not None and len(got.plan.victims) == 1


def test_a_group_priority_above_the_preemptor_protects_members_of_lower_pod_priority() -> None:
    low = gang("low", ["n1"], cpu="400m", priority=1)
    c = Cluster([node("n1")], low, objects=[gang_group("low", 1, disruption="Pod", priority=1000)])
    got = plan(c, [pod("urgent", cpu="300m", priority=100)], 100)
    assert got.plan is None


def test_at_one_priority_the_larger_group_is_the_more_important() -> None:
    small = VictimUnit("s", (pod("a"),), True)
    big = VictimUnit("b", (pod("b"), pod("c")), True)
    assert [u.key for u in sorted([small, big], key=unit_importance)] == ["b", "s"]
