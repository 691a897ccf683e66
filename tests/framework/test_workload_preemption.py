"""Workload-aware preemption (KEP-5710): framework/workload/preemption.py's rules, and
DefaultPreemption's group-aware candidate step over a real Framework (NodeResourcesFit)."""
from __future__ import annotations

from framework.api.objects import Pod
from framework.interface import CycleState
from framework.plugins.defaultpreemption.group_step import GangView, SimulatedFits, members_to_place
from framework.workload.preemption import (NO_ROOM, Domain, VictimUnit, domains_of, plan_group_preemption,
                                           unit_importance, victim_units)
from tests.framework.preemption_builders import Cluster, node, pdb, pod
from tests.framework.test_preemption_plugin import _post_filter
from tests.framework.workload_preemption_builders import gang, gang_group, member


def plan(c: Cluster, members: list[Pod], priority: int, key: str = "", pdbs=()):  # noqa: ANN001, ANN201
    nodes = c.snapshot.list()
    fits = SimulatedFits(c.fwk, {}, frozenset(m.uid for m in members))
    return plan_group_preemption(members, priority, nodes, domains_of(nodes, key), GangView(c.handle).units(),
                                 fits, list(pdbs))


def names(pods) -> list[str]:  # noqa: ANN001
    return sorted(p.name for p in pods)


# --- units and order ---------------------------------------------------------------------------------

def test_bound_members_of_one_gang_form_one_unit_and_other_pods_stay_single() -> None:
    low = gang("low", ["n1", "n2"], cpu="100m", priority=1)
    units = victim_units([*low, pod("solo", node_name="n1")], lambda p: "g" if p.scheduling_group else None)
    assert [(u.key, len(u.members), u.is_group) for u in units] == [("g", 2, True), ("default/solo", 1, False)]


def test_at_one_priority_a_gang_is_more_important_than_a_single_pod_and_priority_comes_first() -> None:
    g = VictimUnit("g", (pod("a", priority=5), pod("b", priority=5)), True)
    single = VictimUnit("s", (pod("c", priority=5),), False)
    high = VictimUnit("h", (pod("d", priority=6),), False)
    assert [u.key for u in sorted([single, g, high], key=unit_importance)] == ["h", "g", "s"]


def test_domains_follow_the_topology_label_and_bound_members_pin_theirs() -> None:
    c = Cluster([node("a1", labels={"rack": "a"}), node("b1", labels={"rack": "b"}), node("x")], [])
    nodes = c.snapshot.list()
    assert domains_of(nodes, "") == [Domain("", ("a1", "b1", "x"))]
    assert domains_of(nodes, "rack") == [Domain("a", ("a1",)), Domain("b", ("b1",))]
    assert domains_of(nodes, "rack", pinned=["b1"]) == [Domain("b", ("b1",))]


# --- the group's plan ----------------------------------------------------------------------------------

def test_a_high_priority_gang_evicts_a_low_priority_gang_whole_to_place_every_member() -> None:
    ns = [f"n{i}" for i in range(4)]
    low = gang("low", ns, cpu="400m", priority=1)
    high = gang("high", [""] * 4, cpu="400m", priority=100)
    c = Cluster([node(n) for n in ns], low, objects=[gang_group("low", 4), gang_group("high", 4), *high])
    got = plan(c, high, 100)
    assert got.plan is not None
    assert names(got.plan.victims) == names(low)
    assert sorted(n for _, n in got.plan.placements) == ns


def test_a_gang_that_needs_only_part_of_the_room_still_evicts_a_victim_gang_whole() -> None:
    # The preemptor needs one node; the low gang has a member on each of two nodes: both go.
    low = gang("low", ["n1", "n2"], cpu="400m", priority=1)
    c = Cluster([node("n1"), node("n2")], low, objects=[gang_group("low", 2)])
    got = plan(c, [pod("urgent", cpu="300m", priority=100)], 100)
    assert got.plan is not None and names(got.plan.victims) == ["low-0", "low-1"]


def test_the_higher_priority_unit_is_reprieved_and_the_lower_one_evicted() -> None:
    c = Cluster([node("n1", cpu="1000m")], [pod("mid", cpu="400m", priority=50, node_name="n1"),
                                            pod("low", cpu="400m", priority=10, node_name="n1")])
    got = plan(c, [pod("urgent", cpu="500m", priority=100)], 100)
    assert got.plan is not None and names(got.plan.victims) == ["low"]


def test_at_equal_priority_a_gang_is_reprieved_before_a_single_pod() -> None:
    low = gang("low", ["n1"], cpu="400m", priority=10)
    c = Cluster([node("n1", cpu="1000m")], [*low, pod("solo", cpu="400m", priority=10, node_name="n1")],
                objects=[gang_group("low", 1)])
    got = plan(c, [pod("urgent", cpu="500m", priority=100)], 100)
    assert got.plan is not None and names(got.plan.victims) == ["solo"]


def test_a_unit_a_budget_protects_is_reprieved_first() -> None:
    # Either pod frees enough; "guarded" would break its PDB, so it is put back first and stays.
    c = Cluster([node("n1", cpu="1000m")], [pod("guarded", cpu="400m", priority=10, node_name="n1", labels={"app": "g"}),
                                            pod("free", cpu="400m", priority=20, node_name="n1")])
    got = plan(c, [pod("urgent", cpu="500m", priority=100)], 100, pdbs=[pdb("g", {"app": "g"}, 0)])
    assert got.plan is not None and names(got.plan.victims) == ["free"] and got.plan.num_pdb_violations == 0


def test_pods_of_equal_or_higher_priority_are_never_victims() -> None:
    c = Cluster([node("n1")], [pod("peer", cpu="400m", priority=100, node_name="n1")])
    got = plan(c, [pod("urgent", cpu="300m", priority=100)], 100)
    assert got.plan is None and got.reasons == {"": NO_ROOM}


def test_every_member_lands_in_one_rack_and_the_rack_with_the_cheapest_victims_is_chosen() -> None:
    racks = {"a1": "a", "a2": "a", "b1": "b", "b2": "b"}
    bound = [pod(f"p-{n}", cpu="400m", priority=5 if racks[n] == "a" else 1, node_name=n) for n in racks]
    high = gang("high", ["", ""], cpu="400m", priority=100)
    c = Cluster([node(n, labels={"rack": r}) for n, r in racks.items()], bound,
                objects=[gang_group("high", 2, "rack"), *high])
    got = plan(c, high, 100, key="rack")
    assert got.plan is not None and got.plan.domain == "b"
    assert sorted(n for _, n in got.plan.placements) == ["b1", "b2"]
    assert names(got.plan.victims) == ["p-b1", "p-b2"]


def test_a_rack_too_small_for_the_whole_gang_is_infeasible_with_its_reason() -> None:
    c = Cluster([node("a1", labels={"rack": "a"}), node("b1", labels={"rack": "b"}), node("b2", labels={"rack": "b"})],
                [pod("low", cpu="400m", priority=1, node_name="a1")])
    high = gang("high", ["", ""], cpu="400m", priority=100)
    got = plan(c, high, 100, key="rack")
    assert got.plan is not None and got.plan.domain == "b" and got.plan.victims == ()
    assert got.reasons == {"a": NO_ROOM}  # one node cannot hold two members, even emptied
    c2 = Cluster([node("a1", labels={"rack": "a"}), node("b1", labels={"rack": "b"})],
                 [pod("low", cpu="400m", priority=1, node_name="a1"), pod("low2", cpu="400m", priority=1, node_name="b1")])
    got = plan(c2, high, 100, key="rack")
    assert got.plan is None and got.reasons == {"a": NO_ROOM, "b": NO_ROOM}


# --- through DefaultPreemption's PostFilter -------------------------------------------------------------

def test_post_filter_of_a_gang_member_evicts_the_victim_gang_and_nominates_every_member() -> None:
    ns = [f"n{i}" for i in range(4)]
    low = gang("low", ns, cpu="400m", priority=1)
    high = gang("high", [""] * 4, cpu="400m", priority=100)
    c = Cluster([node(n) for n in ns], low, objects=[gang_group("low", 4), gang_group("high", 4), *high])
    result, status = _post_filter(c, high[0])
    assert status.is_success(), status.message()
    assert sorted(c.evicted()) == names(low)
    nominated = {p.name: n for p, n in c.handle.nominations}
    assert sorted(nominated) == ["high-1", "high-2", "high-3"]
    assert sorted([result.nominated_node_name, *nominated.values()]) == ns


def test_post_filter_of_a_gang_member_that_cannot_be_placed_says_why_per_domain() -> None:
    c = Cluster([node("a1", labels={"rack": "a"}), node("b1", labels={"rack": "b"})],
                [pod("peer", cpu="400m", priority=100, node_name="a1")],
                objects=[gang_group("high", 2, "rack"), *gang("high", ["", ""], cpu="400m", priority=100)])
    high = c.handle.scheduling_group_pods("default", "high")
    result, status = _post_filter(c, high[0])
    assert not status.is_success() and result is not None and result.nominated_node_name == ""
    assert status.message() == (f"preemption: pod group high cannot be placed even with preemption: "
                                f"a: {NO_ROOM}; b: {NO_ROOM}")
    assert c.evicted() == []


def test_a_single_pod_preempting_a_gang_member_evicts_the_gang_members_on_other_nodes_too() -> None:
    low = gang("low", ["n1", "n2", "n3"], cpu="400m", priority=1)
    c = Cluster([node("n1"), node("n2"), node("n3")], low, objects=[gang_group("low", 3)])
    result, status = _post_filter(c, pod("urgent", cpu="300m", priority=100))
    assert status.is_success()
    assert sorted(c.evicted()) == ["low-0", "low-1", "low-2"]


def test_the_preemptors_state_from_its_cycle_is_used_for_the_preemptor() -> None:
    c = Cluster([node("n1")], [])
    p = pod("p", cpu="100m", priority=1)
    state = CycleState()
    c.fwk.run_pre_filter(state, p)
    fits = SimulatedFits(c.fwk, {p.uid: state})
    assert fits(p, c.snapshot.get("n1")) and fits.states[p.uid] is state
    assert not fits(member("big", 0, cpu="2", priority=1), c.snapshot.get("n1"))


def test_the_plan_takes_the_members_in_the_group_cycles_order_those_it_placed_first() -> None:
    # Issue 29 (h29-gangfix): the plan took the pending members by name (g-10 before g-2),
    # so it could leave out a member the cycle had placed; that member went back nominated
    # to the node it fit on (upstream's SuggestedHost) on room the plan had not counted,
    # and the gang's nominations asked more than the cluster had: it stayed pending.
    high = [member("g", i, cpu="100m", priority=100) for i in range(12)]
    c = Cluster([node("n1")], [], objects=[gang_group("g", 4), *high])
    policy = GangView(c.handle).policy(high[0])
    by_name, _ = members_to_place(c.handle, high[3], policy)
    assert [m.name for m in by_name] == ["g-3", "g-0", "g-1", "g-10"]
    order = (high[2].uid, high[9].uid, high[0].uid, high[1].uid)  # placed: g-2, g-9; then the others
    in_order, _ = members_to_place(c.handle, high[3], policy, order)
    assert [m.name for m in in_order] == ["g-3", "g-2", "g-9", "g-0"]
