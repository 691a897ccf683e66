"""A topology-constrained gang through the real group algorithm (topology_cycle over
CachePlacer: real Filter plugins, Cache and Snapshot): it lands whole in one domain,
the fullest that holds it, falls back from a preferred rack to a required block, and
is rejected with a reason per domain when no domain holds it."""
from __future__ import annotations

from framework.api.objects import Node
from framework.api.workload_api import SchedulingPodGroup
from framework.interface import Code
from framework.workload.policy import PREFERRED_TOPOLOGY_ANNOTATION, group_policy_of
from framework.workload.group_cycle import place_group
from framework.workload.topology import LabelledNodes
from framework.workload.topology_cycle import place_group_in_topology
from framework.workload.topology_score import Capacity
from framework.workload.topology_view import TableView, cluster_view
from tests.framework.test_group_cycle import NS, cluster, member

RACK, BLOCK = "topology.example/rack", "topology.example/block"


def labelled(name: str, cpu: int, rack: str, block: str) -> Node:
    alloc = {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}
    return Node({"metadata": {"name": name, "labels": {RACK: rack, BLOCK: block}},
                 "status": {"capacity": alloc, "allocatable": alloc}})


def gang(min_count: int, required: str, preferred: str = "") -> SchedulingPodGroup:
    meta = {"name": "g", "namespace": NS}
    if preferred:
        meta["annotations"] = {PREFERRED_TOPOLOGY_ANNOTATION: preferred}
    return SchedulingPodGroup({
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": meta,
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}},
                 "schedulingConstraints": {"topology": [{"key": required}]},
                 "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": "g"}}}})


def racks() -> list[Node]:
    """r1 (block b1): 2 nodes of 5 cpu; r2 (b1): 2 of 3; r3 (b2): 2 of 1."""
    return [labelled("r1-a", 5, "r1", "b1"), labelled("r1-b", 5, "r1", "b1"), labelled("r2-a", 3, "r2", "b1"),
            labelled("r2-b", 3, "r2", "b1"), labelled("r3-a", 1, "r3", "b2"), labelled("r3-b", 1, "r3", "b2")]


def test_a_rack_constrained_gang_lands_whole_in_the_fullest_rack_that_holds_it() -> None:
    pods = [member(f"m{i}", 1) for i in range(4)]
    pg = gang(4, RACK)
    placer = cluster(racks(), pods, pg)
    result, choice = place_group_in_topology(group_policy_of(pg), pods, placer)
    assert result.feasible and choice is not None and choice.chosen is not None
    assert set(result.placed.values()) == {"r2-a", "r2-b"}  # r1 would hold it too, but r2 is left full
    assert placer.ran == ["m0", "m1", "m2", "m3"]  # tried once in r2, kept: no second cycle
    assert {k.split("/")[1] for k in placer.cache.assumed} == {"m0", "m1", "m2", "m3"}


def test_with_no_rack_able_to_hold_the_gang_it_is_rejected_with_a_reason_per_rack() -> None:
    pods = [member(f"m{i}", 1) for i in range(11)]
    pg = gang(11, RACK)
    placer = cluster(racks(), pods, pg)
    result, choice = place_group_in_topology(group_policy_of(pg), pods, placer)
    assert not result.feasible and result.status.code == Code.Unschedulable and placer.cache.assumed == set()
    assert choice is not None and [v.domain.value for v in choice.verdicts] == ["r3", "r2", "r1"]
    assert all(v.reason.startswith("free capacity too small") for v in choice.verdicts)
    for rack in ("r1", "r2", "r3"):
        assert f"{RACK}={rack} (2 nodes)" in result.status.message()


def test_a_preferred_rack_falls_back_to_the_required_block_through_filter() -> None:
    pods = [member(f"m{i}", 3) for i in range(3)]  # r1 has 10 cpu free but one 3-cpu pod per node
    pg = gang(3, BLOCK, preferred=RACK)
    placer = cluster(racks(), pods, pg)
    result, choice = place_group_in_topology(group_policy_of(pg), pods, placer)
    assert result.feasible and choice is not None and choice.chosen is not None
    assert (choice.chosen.key, choice.chosen.value) == (BLOCK, "b1")
    rack_verdicts = {v.domain.value: v for v in choice.verdicts if v.domain.key == RACK}
    assert rack_verdicts["r1"].tried and "minCount (3) cannot be satisfied" in rack_verdicts["r1"].reason
    assert {n.split("-")[0] for n in result.placed.values()} == {"r1", "r2"}
    assert {k.split("/")[1] for k in placer.cache.assumed} == {"m0", "m1", "m2"}


def test_a_bound_member_pins_the_gang_to_its_rack() -> None:
    pods = [member(f"m{i}", 1) for i in range(2)]
    pg = gang(3, RACK)
    placer = cluster(racks(), pods, pg)
    result, choice = place_group_in_topology(group_policy_of(pg), pods, placer, scheduled=1,
                                             pinned=[(f"{NS}/m-bound", "r1-a")])
    assert result.feasible and {n[:2] for n in result.placed.values()} == {"r1"}
    assert choice is not None and [v.domain.value for v in choice.verdicts] == ["r1"]


def test_the_columnar_view_gives_the_plain_views_domains_and_free_capacity() -> None:
    pods = [member("m0", 1)]
    placer = cluster(racks(), pods, gang(1, RACK))
    place_group(group_policy_of(gang(1, RACK)), pods, placer)  # one member assumed on some node
    placer.cache.update_snapshot(placer.snapshot)
    snap = placer.snapshot
    view = cluster_view(snap, {})
    assert isinstance(view, TableView)
    infos = {ni.name: ni for ni in snap.node_info_list}
    plain = LabelledNodes([(n, ni.node.labels) for n, ni in infos.items()],
                          lambda n: Capacity(infos[n].allocatable.milli_cpu, infos[n].allocatable.memory,
                                             infos[n].allocatable.milli_cpu - infos[n].requested.milli_cpu,
                                             infos[n].allocatable.memory - infos[n].requested.memory))
    for key in (RACK, BLOCK):
        assert view.domains(key, None) == plain.domains(key, None)
        assert [view.free(d) for d in view.domains(key, None)] == [plain.free(d) for d in plain.domains(key, None)]
    assert view.domains(RACK, "r2") == plain.domains(RACK, "r2") and view.domains(RACK, "nope") == []
    assert sum(view.free(d).free_cpu for d in view.domains(RACK, None)) == 17000  # 18 cpu, 1 taken
