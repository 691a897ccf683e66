"""The pure topology layer (framework/workload/topology.py): domains per label value,
pinning by placed members, best-fit order and scoring, level fallback, and a verdict
per domain."""
from __future__ import annotations

from framework.types import Code
from framework.workload.topology import (
    NOT_TRIED, GroupOutcome, LabelledNodes, TopologyRequest, choose_placement, generate_domains, placements_to_find,
)
from framework.workload.topology_score import Capacity, best_fit_scores, pods_count_scores

RACK, BLOCK = "rack", "block"


def cluster(racks: dict[str, tuple[str, int]]) -> list[tuple[str, dict[str, str]]]:
    """racks: rack -> (block, node count); nodes named rack-i."""
    return [(f"{r}-{i}", {RACK: r, BLOCK: b}) for r, (b, n) in racks.items() for i in range(n)]


class Sim:
    """A try_group over per-node free slots (one member, 1 cpu, per slot): the group is
    feasible when its quorum fits in the domain's slots."""

    def __init__(self, free_slots: dict[str, int], members: int, quorum: int) -> None:
        self.free, self.members, self.quorum = free_slots, members, quorum
        self.tried: list[tuple[str, ...] | None] = []

    def __call__(self, nodes: tuple[str, ...] | None) -> GroupOutcome:
        self.tried.append(nodes)
        names = nodes if nodes is not None else tuple(self.free)
        placed = min(self.members, sum(self.free[n] for n in names))
        ok = placed >= self.quorum
        return GroupOutcome(feasible=ok, placed=placed, used_cpu=placed * 1000,
                            reason="" if ok else f"only {placed} of {self.quorum} fit")

    def capacity(self, node: str) -> Capacity:
        return Capacity(4000, 1 << 30, self.free[node] * 1000, 1 << 30)


def request(sim: Sim, nodes: list[tuple[str, dict[str, str]]], **kw: object) -> TopologyRequest:
    return TopologyRequest(view=LabelledNodes(nodes, sim.capacity), **kw)  # type: ignore[arg-type]


def test_one_domain_per_label_value_and_unlabelled_nodes_are_in_none() -> None:
    nodes = cluster({"r1": ("b1", 2), "r2": ("b1", 1)}) + [("bare", {})]
    domains = generate_domains(RACK, nodes)
    assert [(d.value, d.nodes) for d in domains] == [("r1", ("r1-0", "r1-1")), ("r2", ("r2-0",))]
    assert [d.value for d in generate_domains(RACK, nodes, "r2")] == ["r2"]


def test_the_fullest_domain_that_holds_the_group_is_chosen_so_empty_racks_stay_whole() -> None:
    nodes = cluster({"r1": ("b1", 2), "r2": ("b1", 2), "r3": ("b1", 2)})
    free = {"r1-0": 4, "r1-1": 4, "r2-0": 2, "r2-1": 2, "r3-0": 1, "r3-1": 1}
    sim = Sim(free, members=4, quorum=4)
    res = choose_placement(request(sim, nodes, required_key=RACK, demand_cpu=4000), sim)
    assert res.status.is_success() and res.chosen is not None and res.chosen.value == "r2"
    by = {v.domain.value: v for v in res.verdicts}
    assert by["r3"].reason.startswith("free capacity too small") and not by["r3"].tried
    assert by["r1"].feasible and "r2" in by["r1"].reason


def test_placed_members_pin_the_domain_and_members_in_two_domains_are_an_error() -> None:
    nodes = cluster({"r1": ("b1", 2), "r2": ("b2", 2)})
    sim = Sim({n: 4 for n, _ in nodes}, members=2, quorum=2)
    res = choose_placement(request(sim, nodes, required_key=RACK, pinned=[("ns/p0", "r2-1")], scheduled=1),
                           sim)
    assert res.chosen is not None and res.chosen.value == "r2" and sim.tried == [("r2-0", "r2-1")]
    res = choose_placement(request(sim, nodes, required_key=RACK,
                                           pinned=[("ns/p0", "r1-0"), ("ns/p1", "r2-0")]), sim)
    assert res.status.code == Code.Error
    assert res.status.message() == ("cannot determine domain for already scheduled pods: "
                                    "more than 1 domain found for pod group: r1, r2")


def test_a_preferred_rack_falls_back_to_one_block_when_no_rack_holds_the_group() -> None:
    nodes = cluster({"r1": ("b1", 2), "r2": ("b1", 2), "r3": ("b2", 2)})
    free = {"r1-0": 2, "r1-1": 1, "r2-0": 2, "r2-1": 2, "r3-0": 1, "r3-1": 1}
    sim = Sim(free, members=6, quorum=6)
    res = choose_placement(request(sim, nodes, required_key=BLOCK, preferred_key=RACK), sim)
    assert res.chosen is not None and (res.chosen.key, res.chosen.value) == (BLOCK, "b1")
    racks = [v for v in res.verdicts if v.domain.key == RACK]
    assert len(racks) == 3 and all(v.tried and not v.feasible for v in racks)
    sim.members = sim.quorum = 3
    res = choose_placement(request(sim, nodes, required_key=BLOCK, preferred_key=RACK), sim)
    assert res.chosen is not None and res.chosen.key == RACK


def test_no_domain_holding_the_group_leaves_a_reason_per_domain() -> None:
    nodes = cluster({"r1": ("b1", 1), "r2": ("b1", 1)})
    sim = Sim({"r1-0": 2, "r2-0": 3}, members=8, quorum=8)
    res = choose_placement(request(sim, nodes, required_key=RACK), sim)
    assert res.chosen is None and res.status.code == Code.Unschedulable
    assert res.lines() == ["rack=r1 (1 nodes): tried: only 2 of 8 fit", "rack=r2 (1 nodes): tried: only 3 of 8 fit"]
    assert "rack=r1 (1 nodes): tried: only 2 of 8 fit" in res.status.message()


def test_a_label_no_node_has_is_unresolvable() -> None:
    sim = Sim({"n": 1}, members=1, quorum=1)
    res = choose_placement(request(sim, [("n", {})], required_key="zone"), sim)
    assert res.status.code == Code.UnschedulableAndUnresolvable and "no node has the label zone" in res.status.message()


def test_a_preferred_level_without_a_required_one_falls_back_to_the_whole_cluster() -> None:
    nodes = cluster({"r1": ("b1", 1), "r2": ("b1", 1)})
    sim = Sim({"r1-0": 1, "r2-0": 1}, members=2, quorum=2)
    res = choose_placement(request(sim, nodes, required_key="", preferred_key=RACK), sim)
    assert res.chosen is not None and res.chosen.name == "all nodes" and sim.tried[-1] is None


def test_large_clusters_stop_after_enough_feasible_placements() -> None:
    assert placements_to_find(100, 10) == 10
    assert placements_to_find(5000, 250) == 25
    nodes = [(f"n{i}", {RACK: f"r{i // 20}"}) for i in range(5000)]
    sim = Sim({n: 1 for n, _ in nodes}, members=8, quorum=8)
    res = choose_placement(request(sim, nodes, required_key=RACK), sim)
    assert len(sim.tried) == 25 and sum(v.reason == NOT_TRIED for v in res.verdicts) == 225


def test_scores_count_members_and_prefer_the_least_left_free() -> None:
    assert pods_count_scores([4, 8]) == [50, 100]
    assert best_fit_scores([(1000, 0), (3000, 0), (2000, 0)]) == [100, 0, 50]


def test_trying_stops_at_the_fullest_domain_that_holds_every_member() -> None:
    nodes = cluster({"r1": ("b1", 2), "r2": ("b1", 2), "r3": ("b1", 2)})
    free = {"r1-0": 4, "r1-1": 4, "r2-0": 2, "r2-1": 2, "r3-0": 3, "r3-1": 3}
    sim = Sim(free, members=4, quorum=3)
    res = choose_placement(request(sim, nodes, required_key=RACK, members=4), sim)
    assert res.chosen is not None and res.chosen.value == "r2" and sim.tried == [("r2-0", "r2-1")]
    assert [v.reason for v in res.verdicts if v.domain.value != "r2"] == [NOT_TRIED, NOT_TRIED]
