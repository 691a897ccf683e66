"""The whole-group algorithm (framework/workload/group_cycle.py) over the real
Framework, algorithm, Cache and Snapshot (CachePlacer): a gang is placed whole in
one view or not at all, stops early once minCount is out of reach, rejects a
same-signature member without trying it again, and stays inside the nodes it is
given."""
from __future__ import annotations

import random
from typing import Any, Collection, Hashable

from framework.algorithm import SchedulingAlgorithm
from framework.api.objects import Node, Pod
from framework.api.workload_api import SchedulingPodGroup
from framework.cache import Cache, Snapshot
from framework.config import build_frameworks, load_config
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code
from framework.workload.group_cycle import MemberTry, member_order, place_group
from framework.workload.member_placer import CachePlacer
from framework.workload.policy import group_policy_of

NS = "default"
PROFILE = {"schedulerName": "default-scheduler",
           "plugins": {"multiPoint": {"enabled": [{"name": "GangScheduling"}],
                                      "disabled": [{"name": "DefaultPreemption"}]}}}


def node(name: str, cpu: int) -> Node:
    alloc = {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}
    return Node({"metadata": {"name": name}, "status": {"capacity": alloc, "allocatable": alloc}})


def member(name: str, cpu: int, group: str = "g", priority: int = 0) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": NS, "uid": name},
                "spec": {"priority": priority, "schedulingGroup": {"podGroupName": group},
                         "containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}})


def gang(min_count: int, name: str = "g") -> SchedulingPodGroup:
    return SchedulingPodGroup({
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": name, "namespace": NS},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}},
                 "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": name}}}})


class Counting(CachePlacer):
    """The real placer, counting the members it actually ran the algorithm for and
    the members it signed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ran: list[str] = []
        self.signed: list[str] = []

    def signature(self, pod: Pod) -> Hashable | None:
        self.signed.append(pod.name)
        return super().signature(pod)

    def try_member(self, pod: Pod, node_names: Collection[str] | None) -> MemberTry:
        self.ran.append(pod.name)
        return super().try_member(pod, node_names)


# PodTopologySpread signs no pod while its system default constraints apply.
SIGNING = {"schedulerName": "default-scheduler",
           "plugins": {"multiPoint": {"enabled": [{"name": "GangScheduling"}],
                                      "disabled": [{"name": "DefaultPreemption"}, {"name": "PodTopologySpread"}]}}}


def cluster(nodes: list[Node], pods: list[Pod], group: SchedulingPodGroup, profile: dict = PROFILE) -> Counting:
    objects = InMemoryObjects([*nodes, *pods, group])
    cache, snapshot = Cache(), Snapshot()
    for n in nodes:
        cache.add_node(n)
    handle = FrameworkHandle(snapshot=snapshot, objects=objects, clock=lambda: 0.0)
    cfg = load_config({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                       "profiles": [profile]})
    fwk = build_frameworks(cfg, handle)["default-scheduler"]
    return Counting(fwk, SchedulingAlgorithm(random.Random(0)), cache, snapshot)


def assumed(placer: CachePlacer) -> set[str]:
    return {key.split("/")[1] for key in placer.cache.assumed}


def test_a_gang_that_fits_is_placed_whole_in_one_view_and_stays_assumed() -> None:
    pods = [member(f"m{i}", 2) for i in range(4)]
    placer = cluster([node("n0", 4), node("n1", 4)], pods, gang(4))
    result = place_group(group_policy_of(gang(4)), pods, placer)
    assert result.feasible and result.kept
    assert sorted(result.placed.values()) == ["n0", "n0", "n1", "n1"]  # each member saw the ones before it
    assert assumed(placer) == {"m0", "m1", "m2", "m3"}


def test_a_gang_short_of_min_count_stops_early_and_leaves_nothing_assumed() -> None:
    pods = [member(f"m{i}", 2) for i in range(4)]
    placer = cluster([node("n0", 3), node("n1", 3)], pods, gang(4))
    result = place_group(group_policy_of(gang(4)), pods, placer)
    assert not result.feasible and result.status.code == Code.Unschedulable
    assert result.status.message() == "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining"
    assert placer.ran == ["m0", "m1", "m2"]  # m3 never tried
    assert result.unplaced["m3"].message() == result.status.message()
    assert "Insufficient cpu" in result.unplaced["m2"].message()
    assert assumed(placer) == set() and placer.cache.assumed == set()


def test_members_already_scheduled_count_toward_the_quorum() -> None:
    pods = [member(f"m{i}", 2) for i in range(2)]
    placer = cluster([node("n0", 4)], pods, gang(3))
    alone = place_group(group_policy_of(gang(3)), pods, placer)
    assert not alone.feasible and alone.tried == 0
    with_bound = place_group(group_policy_of(gang(3)), pods, placer, scheduled=1)
    assert with_bound.feasible and len(with_bound.placed) == 2


def test_a_group_that_cannot_reach_min_count_tries_no_member() -> None:
    pods = [member(f"m{i}", 1) for i in range(2)]
    placer = cluster([node("n0", 8)], pods, gang(3))
    result = place_group(group_policy_of(gang(3)), pods, placer)
    assert placer.ran == [] and result.tried == 0
    assert result.status.message() == "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining"


def test_a_member_like_one_that_just_failed_is_rejected_without_running_filter() -> None:
    pods = [member("big0", 4), member("big1", 4), member("big2", 4)]
    placer = cluster([node("n0", 5)], pods, gang(1), SIGNING)
    result = place_group(group_policy_of(gang(1)), pods, placer)
    assert result.feasible and list(result.placed) == ["big0"]
    assert placer.ran == ["big0", "big1"]  # big2 has big1's signature and nothing was placed since
    assert result.unplaced["big2"] is result.unplaced["big1"]


def test_a_group_whose_members_all_fit_signs_none_of_them() -> None:
    pods = [member(f"m{i}", 1) for i in range(4)]
    placer = cluster([node("n0", 8)], pods, gang(4), SIGNING)
    result = place_group(group_policy_of(gang(4)), pods, placer)
    assert result.feasible and placer.ran == ["m0", "m1", "m2", "m3"]
    assert placer.signed == []  # no member failed: no verdict to share


def test_members_are_signed_from_the_first_failure_on_and_a_placement_since_makes_them_run_again() -> None:
    pods = [member("big0", 4), member("big1", 4), member("small", 1), member("big2", 4)]
    placer = cluster([node("n0", 5)], pods, gang(1), SIGNING)
    result = place_group(group_policy_of(gang(1)), pods, placer)
    assert list(result.placed) == ["big0", "small"]
    assert placer.signed == ["big1", "small", "big2"]  # big0 placed before any failure: not signed
    assert placer.ran == ["big0", "big1", "small", "big2"]  # small was placed after big1 failed


def test_node_names_confine_the_group_and_keep_false_undoes_a_feasible_placement() -> None:
    pods = [member(f"m{i}", 1) for i in range(3)]
    placer = cluster([node("a", 8), node("b", 8), node("c", 8)], pods, gang(3))
    result = place_group(group_policy_of(gang(3)), pods, placer, node_names={"b"}, keep=False)
    assert result.feasible and not result.kept
    assert set(result.placed.values()) == {"b"}
    assert placer.cache.assumed == set()


def test_a_domain_tried_again_after_a_node_left_still_confines_the_group_to_its_nodes() -> None:
    pods = [member(f"m{i}", 1) for i in range(2)]
    later = [member(f"l{i}", 1, group="h") for i in range(2)]
    placer = cluster([node("a", 8), node("b", 8), node("c", 8), node("d", 8)], [*pods, *later], gang(2))
    domain = ("c", "d")  # the same names object for both groups, as a topology domain's
    first = place_group(group_policy_of(gang(2)), pods, placer, node_names=domain)
    assert set(first.placed.values()) <= {"c", "d"}
    placer.cache.remove_node("a")  # c and d move up in the snapshot's node list
    second = place_group(group_policy_of(gang(2, "h")), later, placer, node_names=domain)
    assert second.feasible and set(second.placed.values()) <= {"c", "d"}


def test_members_are_ordered_by_priority_then_first_attempt() -> None:
    pods = [member("low", 1, priority=1), member("high-late", 1, priority=5), member("high-early", 1, priority=5)]
    assert [pods[i].name for i in member_order(pods, [10, 30, 20])] == ["high-early", "high-late", "low"]


def test_a_quorum_already_bound_with_no_member_placed_is_not_a_success() -> None:
    pods = [member("late", 9)]
    placer = cluster([node("n0", 4)], pods, gang(2))
    result = place_group(group_policy_of(gang(2)), pods, placer, scheduled=2)
    assert not result.feasible and result.status.message() == "no pods were schedulable"
