"""GangScheduling, point by point: upstream's gangscheduling_test.go
(Test_isSchedulableAfterPodAdded, Test_isSchedulableAfterPodGroupAdded,
TestGangSchedulingFlow, PlacementFeasible) on the real handle and waiting pods."""
from __future__ import annotations

from typing import Any

import pytest

from framework.api.objects import Node, Pod
from framework.api.workload_api import SchedulingPodGroup
from framework.cache import Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, NodeToStatus, QueueingHint, SignPurpose, Status
from framework.plugins import in_tree_registry
from framework.plugins.gangscheduling.gangscheduling import (QUORUM_NOT_PRESENT, QUORUM_NOT_SCHEDULED,
    SCHEDULING_TIMEOUT_SECONDS, GangScheduling, own_pod_group_added, same_group_pod_added)
from framework.waiting import WaitingPod
from framework.workload.group_cycle import GROUP_CYCLE_KEY, GroupCycleState
from framework.workload.policy import GroupPolicy, group_policy_of, placement_feasible

NOW = 1767225600.0


def gpod(name: str, group: str = "", ns: str = "ns1", node: str = "") -> Pod:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    return Pod({"metadata": {"name": name, "namespace": ns, "uid": name}, "spec": spec})


def pgroup(name: str, min_count: int | None, ns: str = "ns1", topology: str = "") -> SchedulingPodGroup:
    policy: dict[str, Any] = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    spec: dict[str, Any] = {"schedulingPolicy": policy,
                            "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": "t"}}}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return SchedulingPodGroup({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                               "metadata": {"name": name, "namespace": ns}, "spec": spec})


class Cluster:
    def __init__(self, pods: list[Pod], groups: list[SchedulingPodGroup]) -> None:
        self.clock = NOW
        self.objects = InMemoryObjects([Node({"metadata": {"name": "some-node"}}), *pods, *groups])
        self.activated: list[str] = []
        self.handle = FrameworkHandle(snapshot=Snapshot.build([], []), objects=self.objects, clock=lambda: self.clock,
                                      activate=lambda ps: self.activated.extend(p.name for p in ps))
        self.plugin = GangScheduling.new(None, self.handle)

    def wait(self, p: Pod) -> WaitingPod:
        """Reserve and Permit answered Wait: park the pod as the scheduler does."""
        self.plugin.reserve(CycleState(), p, "some-node")
        st, timeout = self.plugin.permit(CycleState(), p, "some-node")
        assert st is not None and st.code == Code.Wait, st
        wp = WaitingPod(p, "some-node", {GangScheduling.name: self.clock + timeout})
        self.handle.waiting_pods.add(wp)
        return wp


P1, P2, P3 = gpod("p1", "pg1"), gpod("p2", "pg1"), gpod("p3", "pg1")
P4, P5 = gpod("p4", "pg2"), gpod("p5", "pg2")
GANGS = [pgroup("pg1", 3), pgroup("pg2", 4), pgroup("pg3", None)]


@pytest.mark.parametrize(("pod", "added", "hint"), [
    (gpod("p", "pg"), gpod("q", "pg"), QueueingHint.Queue),
    (gpod("p", "pg"), gpod("q", "pg", ns="foo"), QueueingHint.QueueSkip),
    (gpod("p", "pg1"), gpod("q", "pg2"), QueueingHint.QueueSkip),
])
def test_a_pod_added_requeues_only_pods_of_its_own_group(pod: Pod, added: Pod, hint: QueueingHint) -> None:
    assert same_group_pod_added(pod, None, added) == hint


@pytest.mark.parametrize(("pod", "added", "hint"), [
    (gpod("p", "pg"), pgroup("pg", 1), QueueingHint.Queue),
    (gpod("p", "pg1"), pgroup("pg2", 1), QueueingHint.QueueSkip),
    (gpod("p", "pg"), pgroup("pg", 1, ns="ns2"), QueueingHint.QueueSkip),
])
def test_a_pod_group_added_requeues_only_its_own_pods(pod: Pod, added: SchedulingPodGroup, hint: QueueingHint) -> None:
    assert own_pod_group_added(pod, None, added) == hint


def test_pods_of_no_group_and_of_a_basic_group_pass_every_point() -> None:
    c = Cluster([gpod("non-gang"), gpod("basic-pod", "pg3")], GANGS)
    for p in (gpod("non-gang"), gpod("basic-pod", "pg3")):
        assert c.plugin.pre_enqueue(p) is None
        assert c.plugin.permit(CycleState(), p, "some-node") == (None, 0)


def test_a_gang_pod_waits_at_pre_enqueue_until_its_pod_group_exists() -> None:
    c = Cluster([P1, P2, P3, P4, P5], [])
    assert c.plugin.pre_enqueue(P1) == Status(
        Code.UnschedulableAndUnresolvable, 'waiting for pods\'s pod group "pg1" to appear in scheduling queue')


def test_a_gang_pod_waits_at_pre_enqueue_until_min_count_pods_exist() -> None:
    c = Cluster([P1, P2, P4, P5], GANGS)
    assert c.plugin.pre_enqueue(P1) == Status(Code.UnschedulableAndUnresolvable, QUORUM_NOT_PRESENT)
    c.objects.put(P3)
    assert c.plugin.pre_enqueue(P1) is None


def test_a_gang_pod_short_of_quorum_waits_at_permit_and_activates_its_unscheduled_siblings() -> None:
    c = Cluster([P1, P2, P3, P4, P5], GANGS)
    c.wait(P2)
    c.wait(P4)
    c.activated.clear()
    c.plugin.reserve(CycleState(), P1, "some-node")
    st, timeout = c.plugin.permit(CycleState(), P1, "some-node")
    assert st == Status(Code.Wait, QUORUM_NOT_SCHEDULED)
    assert timeout == SCHEDULING_TIMEOUT_SECONDS
    assert c.activated == ["p3"]


def test_the_member_completing_the_quorum_allows_every_waiting_member_of_its_group_only() -> None:
    c = Cluster([P1, P2, P3, P4, P5], GANGS)
    waiting = {p.name: c.wait(p) for p in (P2, P3, P4, P5)}
    c.plugin.reserve(CycleState(), P1, "some-node")
    assert c.plugin.permit(CycleState(), P1, "some-node") == (None, 0)
    assert {n for n, wp in waiting.items() if wp.decided is not None and wp.decided.is_success()} == {"p2", "p3"}
    assert waiting["p4"].decided is None and waiting["p5"].decided is None


def test_bound_members_count_toward_the_quorum() -> None:
    c = Cluster([gpod("p1", "pg1", node="some-node"), gpod("p2", "pg1", node="some-node"), P3], GANGS)
    c.plugin.reserve(CycleState(), P3, "some-node")
    assert c.plugin.permit(CycleState(), P3, "some-node") == (None, 0)


def test_an_unreserved_member_no_longer_counts_toward_the_quorum() -> None:
    c = Cluster([P1, P2, P3], GANGS)
    c.wait(P2)
    c.plugin.unreserve(CycleState(), P2, "some-node")
    c.plugin.reserve(CycleState(), P3, "some-node")
    c.plugin.reserve(CycleState(), P1, "some-node")
    st, _ = c.plugin.permit(CycleState(), P1, "some-node")
    assert st == Status(Code.Wait, QUORUM_NOT_SCHEDULED)


def test_the_group_deadline_is_shared_by_its_waiters_and_renewed_once_past() -> None:
    c = Cluster([P1, P2, P3], GANGS)
    c.wait(P1)
    c.clock += 100
    assert c.plugin.permit(CycleState(), P2, "some-node")[1] == SCHEDULING_TIMEOUT_SECONDS - 100
    c.clock += SCHEDULING_TIMEOUT_SECONDS
    assert c.plugin.permit(CycleState(), P2, "some-node")[1] == SCHEDULING_TIMEOUT_SECONDS


def test_gang_scheduling_is_registered_in_tree_and_refuses_args() -> None:
    assert "GangScheduling" in in_tree_registry()
    with pytest.raises(ValueError, match="GangScheduling takes no args"):
        GangScheduling.new({"x": 1}, Cluster([], []).handle)


def test_the_group_policy_is_converted_from_the_pod_group_in_one_place() -> None:
    assert group_policy_of(pgroup("pg", 8, topology="rack")) == GroupPolicy(
        name="pg", namespace="ns1", min_count=8, required_topology_key="rack")
    assert group_policy_of(pgroup("pg", None)).quorum == 1


def test_a_pod_groups_policy_is_kept_for_its_stored_object_and_read_anew_from_a_replacement() -> None:
    stored = pgroup("pg", 3)
    assert group_policy_of(stored) is group_policy_of(stored)
    replaced = pgroup("pg", 5, topology="rack")
    assert (group_policy_of(replaced).min_count, group_policy_of(replaced).required_topology_key) == (5, "rack")
    assert group_policy_of(stored).min_count == 3


@pytest.mark.parametrize(("scheduled", "remaining", "want"), [
    (1, 1, Status(Code.Unschedulable, "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining")),
    (1, 2, Status(Code.Wait, "minCount (3) is not yet satisfied: 1 scheduled, 2 remaining")),
    (3, 0, None),
])
def test_placement_feasible_stops_early_waits_or_succeeds_as_upstream(scheduled: int, remaining: int, want: Status | None) -> None:
    policy = GroupPolicy(name="pg", namespace="ns1", min_count=3)
    assert placement_feasible(policy, scheduled=scheduled, remaining=remaining) == want


def test_a_member_rejected_but_not_yet_unreserved_does_not_make_a_quorum() -> None:
    c = Cluster([P1, P2, P3], GANGS)
    c.wait(P1)
    rejected = c.wait(P2)
    rejected.reject("GangScheduling", "rejected due to timeout at plugin GangScheduling")
    c.plugin.reserve(CycleState(), P3, "some-node")
    st, _ = c.plugin.permit(CycleState(), P3, "some-node")
    assert st == Status(Code.Wait, QUORUM_NOT_SCHEDULED)


def test_a_member_let_through_counts_while_it_is_bound_and_by_its_node_after() -> None:
    c = Cluster([P1, P2, P3, gpod("p6", "pg1")], [pgroup("pg1", 3)])
    waiting = [c.wait(P1), c.wait(P2)]
    c.plugin.reserve(CycleState(), P3, "some-node")
    assert c.plugin.permit(CycleState(), P3, "some-node") == (None, 0)
    for wp in waiting:
        c.handle.waiting_pods.remove(wp.pod.uid)  # the binding cycles took them
    p6 = gpod("p6", "pg1")
    c.plugin.reserve(CycleState(), p6, "some-node")
    assert c.plugin.permit(CycleState(), p6, "some-node") == (None, 0)
    for p in (P1, P2, P3):
        c.plugin.post_bind(CycleState(), p, "some-node")
        c.objects.put(gpod(p.name, "pg1", node="some-node"))
    assert c.plugin.assumed == {("ns1", "pg1"): {"p6"}} and c.plugin.allowed == {"p6"}
    assert c.plugin.permit(CycleState(), p6, "some-node") == (None, 0)


def test_the_lister_indexes_pods_by_scheduling_group_through_updates_and_deletes() -> None:
    objects = InMemoryObjects([P1, P2, P4, gpod("other-ns", "pg1", ns="ns2"), gpod("loner")])
    handle = FrameworkHandle(objects=objects)
    assert sorted(p.name for p in handle.scheduling_group_pods("ns1", "pg1")) == ["p1", "p2"]
    objects.put(gpod("p2", "pg1", node="some-node"))
    assert sorted(p.node_name for p in handle.scheduling_group_pods("ns1", "pg1")) == ["", "some-node"]
    objects.delete("Pod", "ns1/p1")
    assert [p.name for p in handle.scheduling_group_pods("ns1", "pg1")] == ["p2"]
    assert [p.name for p in handle.scheduling_group_pods("ns2", "pg1")] == ["other-ns"]
    assert handle.scheduling_group_pods("ns1", "pg9") == []


def test_a_member_no_node_takes_rejects_its_waiting_siblings_once_min_count_is_out_of_reach() -> None:
    c = Cluster([P1, P2, P3], GANGS)
    waiting = c.wait(P1)
    _, st = c.plugin.post_filter(CycleState(), P2, NodeToStatus({}))
    # p1 holds a place and p3 is untried: 2 of minCount 3 at most
    assert st == Status(Code.Unschedulable, "pod group pg1 rejected: minCount (3) cannot be satisfied: 1 scheduled, 1 remaining")
    assert waiting.decided is not None and not waiting.decided.is_success()


def test_a_member_no_node_takes_leaves_its_siblings_waiting_while_min_count_is_within_reach() -> None:
    c = Cluster([P1, P2, P3, gpod("p6", "pg1")], GANGS)
    waiting = c.wait(P1)
    _, st = c.plugin.post_filter(CycleState(), P2, NodeToStatus({}))
    assert st == Status(Code.Unschedulable)
    assert waiting.decided is None


def test_post_filter_leaves_pods_of_no_gang_alone() -> None:
    c = Cluster([gpod("solo"), gpod("basic-pod", "pg3")], GANGS)
    for p in (gpod("solo"), gpod("basic-pod", "pg3")):
        assert c.plugin.post_filter(CycleState(), p, NodeToStatus({})) == (None, Status(Code.Unschedulable))


def test_group_members_refuse_a_failure_signature_and_sign_for_placement() -> None:
    plugin = Cluster([], []).plugin
    assert plugin.sign_pod(P1, SignPurpose.FAILURE) is None
    assert plugin.sign_pod(P1, SignPurpose.PLACEMENT) == ()
    assert plugin.sign_pod(gpod("solo"), SignPurpose.FAILURE) == ()


def test_members_the_group_cycle_placed_together_pass_permit_without_waiting() -> None:
    c = Cluster([P1, P2, P3], GANGS)
    for p in (P1, P2, P3):
        c.plugin.reserve(CycleState(), p, "some-node")
    short, whole = CycleState(), CycleState()
    short.write(GROUP_CYCLE_KEY, GroupCycleState(frozenset({"p1", "p2"})))
    whole.write(GROUP_CYCLE_KEY, GroupCycleState(frozenset({"p1", "p2", "p3"})))
    assert c.plugin.permit(short, P1, "some-node")[0] == Status(Code.Wait, QUORUM_NOT_SCHEDULED)
    assert c.plugin.permit(whole, P1, "some-node") == (None, 0)
    assert len(c.handle.waiting_pods) == 0


def test_a_bound_member_chosen_as_a_preemption_victim_no_longer_counts_toward_the_quorum() -> None:
    # minCount 3: p1 and p2 bound, p2 chosen as a victim whose deletion is not seen yet;
    # p3 alone with p1 makes two, pod by pod or placed by the group cycle
    c = Cluster([gpod("p1", "pg1", node="some-node"), gpod("p2", "pg1", node="some-node"), P3], GANGS)
    c.handle.victims_in_flight.add("p2")
    c.plugin.reserve(CycleState(), P3, "some-node")
    together = CycleState()
    together.write(GROUP_CYCLE_KEY, GroupCycleState(frozenset({"p3"})))
    assert c.plugin.permit(together, P3, "some-node")[0] == Status(Code.Wait, QUORUM_NOT_SCHEDULED)
    c.handle.victims_in_flight.discard("p2")  # spared after all: it counts again
    assert c.plugin.permit(together, P3, "some-node") == (None, 0)
