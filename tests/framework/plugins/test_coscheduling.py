"""Coscheduling, extension point by extension point (upstream's unit tests plus ours)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from framework.api.errors import ValidationError
from framework.api.objects import Node, Pod, PodGroup
from framework.api.resources import parse_resource_list
from framework.cache import Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, NodeToStatus, QueuedPodInfo, QueueingHint, Status
from framework.plugins.coscheduling.coscheduling import Coscheduling
from framework.plugins.coscheduling.core import CoschedulingArgs, check_cluster_resource
from framework.waiting import WaitingPod
from tests.gang.harness import node, pod, pod_group

NOW = 1767225600.0


class Cluster:
    """Nodes, bound pods, pending pods and groups, with a plugin on top."""

    def __init__(self, nodes=(), bound=(), pending=(), groups=(), args=None) -> None:
        self.clock = NOW
        self.nodes = [Node(n) for n in nodes]
        self.bound = [Pod(p) for p in bound]
        self.objects = InMemoryObjects([*self.nodes, *self.bound, *(Pod(p) for p in pending), *(PodGroup(g) for g in groups)])
        self.snapshot = Snapshot.build(self.nodes, self.bound)
        self.handle = FrameworkHandle(snapshot=self.snapshot, objects=self.objects, clock=lambda: self.clock)
        self.plugin = Coscheduling.new(args, self.handle)

    def pod(self, name: str) -> Pod:
        return self.objects.get("Pod", "default", name)

    def wait(self, name: str, node_name: str = "n0") -> WaitingPod:
        """Permit answered Wait for this pod: assume it and park it, as the scheduler does."""
        p = self.pod(name)
        assumed = Pod({**p.raw, "spec": {**p.raw["spec"], "nodeName": node_name}})
        st, timeout = self.plugin.permit(CycleState(), assumed, node_name)
        assert st is not None and st.code == Code.Wait
        wp = WaitingPod(assumed, node_name, {"Coscheduling": self.clock + timeout})
        self.handle.waiting_pods.add(wp)
        self.bound.append(assumed)
        self.snapshot = Snapshot.build(self.nodes, self.bound)
        self.handle.set_snapshot(self.snapshot)
        return wp

    def permit(self, name: str) -> tuple[Status | None, float]:
        return self.plugin.permit(CycleState(), self.pod(name), "n0")


def bound_pod(name: str, group: str, node_name: str = "n0", cpu: int = 1) -> dict:
    raw = pod(name, cpu, group)
    raw["spec"]["nodeName"] = node_name
    return raw


# --- args -----------------------------------------------------------------------------------------

def test_args_get_upstream_defaults_when_absent() -> None:
    assert CoschedulingArgs.parse(None) == CoschedulingArgs(60, 0, 10)


@pytest.mark.parametrize(("args", "field"), [
    ({"permitWaitingTimeSeconds": -1}, "permitWaitingTimeSeconds"),
    ({"podGroupBackoffSeconds": -1}, "podGroupBackoffSeconds"),
    ({"podGroupRejectPercentage": 101}, "podGroupRejectPercentage"),
    ({"podGroupRejectPercentage": "10"}, "podGroupRejectPercentage"),
], ids=["negative wait", "negative backoff", "percentage over 100", "percentage not an int"])
def test_bad_args_are_rejected_naming_the_field(args: dict, field: str) -> None:
    with pytest.raises(ValidationError) as e:
        CoschedulingArgs.parse(args)
    assert e.value.field == field


# --- QueueSort --------------------------------------------------------------------------------------

def qpi(raw: dict, initial_s: float) -> QueuedPodInfo:
    ts = int(initial_s * 1e9)
    return QueuedPodInfo(pod=Pod(raw), timestamp=ts, initial_attempt_timestamp=ts)


def test_members_of_a_group_sort_by_the_group_creation_time_not_their_own() -> None:
    c = Cluster(groups=[pod_group("g", 2, created="2026-01-01T00:00:00Z")])
    member_late = qpi(pod("z-member", group="g"), NOW + 50)
    plain_early = qpi(pod("a-plain"), NOW + 10)
    assert c.plugin.less(member_late, plain_early)


def test_a_group_rejected_in_post_filter_sorts_behind_newer_groups() -> None:
    c = Cluster(nodes=[node("n0", 1)], pending=[pod("old-0", 1, "old"), pod("old-1", 1, "old")],
                groups=[pod_group("old", 2, created="2026-01-01T00:00:00Z"),
                        pod_group("new", 2, created="2026-01-01T00:00:05Z")])
    old, new = qpi(pod("old-0", group="old"), NOW), qpi(pod("new-0", group="new"), NOW)
    assert c.plugin.less(old, new)
    c.clock = NOW + 10
    c.plugin.post_filter(CycleState(), c.pod("old-0"), NodeToStatus())
    assert c.plugin.less(new, old)
    c.clock = NOW + 11
    c.wait("old-0")
    c.permit("old-1")  # quorum: the failure mark is cleared
    assert c.plugin.less(old, new)


# --- PreFilter ----------------------------------------------------------------------------------------

def test_pre_filter_reports_the_sibling_count_with_upstreams_message() -> None:
    c = Cluster(nodes=[node("n0", 4)], pending=[pod("p", group="g")], groups=[pod_group("g", 3)])
    _, st = c.plugin.pre_filter(CycleState(), c.pod("p"), c.snapshot.list())
    assert st == Status(Code.UnschedulableAndUnresolvable,
                        "pre-filter pod p cannot find enough sibling pods, current pods number: 1, minMember of group: 3")


def test_terminal_pods_do_not_count_as_siblings() -> None:
    done = pod("p1", group="g")
    done["status"] = {"phase": "Succeeded"}
    c = Cluster(nodes=[node("n0", 4)], pending=[pod("p0", group="g"), done], groups=[pod_group("g", 2)])
    _, st = c.plugin.pre_filter(CycleState(), c.pod("p0"), c.snapshot.list())
    assert st is not None and st.code == Code.UnschedulableAndUnresolvable


def test_min_resources_gap_is_reported_and_a_pass_is_remembered_until_the_permit_wait_time() -> None:
    c = Cluster(nodes=[node("n0", 4), node("n1", 4)], pending=[pod("p0", 0, "g"), pod("p1", 0, "g")],
                groups=[pod_group("g", 2, min_resources={"cpu": "9"})], args={"permitWaitingTimeSeconds": 5})
    _, st = c.plugin.pre_filter(CycleState(), c.pod("p0"), c.snapshot.list())
    assert st is not None and st.reasons == ["resource gap: map[cpu:1]"]
    c2 = Cluster(nodes=[node("n0", 4), node("n1", 4)], pending=[pod("p0", 0, "g"), pod("p1", 0, "g")],
                 groups=[pod_group("g", 2, min_resources={"cpu": "8"})], args={"permitWaitingTimeSeconds": 5})
    _, st = c2.plugin.pre_filter(CycleState(), c2.pod("p0"), c2.snapshot.list())
    assert st is None
    assert c2.plugin.pg_mgr.permitted_pg.contains("default/g", NOW + 4)
    assert not c2.plugin.pg_mgr.permitted_pg.contains("default/g", NOW + 5)


def test_a_backed_off_group_fails_pre_filter_first_with_failed_recently() -> None:
    c = Cluster(nodes=[node("n0", 4)], pending=[pod("p0", group="g"), pod("p1", group="g")],
                groups=[pod_group("g", 2)], args={"podGroupBackoffSeconds": 3, "podGroupRejectPercentage": 0})
    c.plugin.post_filter(CycleState(), c.pod("p0"), NodeToStatus())
    _, st = c.plugin.pre_filter(CycleState(), c.pod("p1"), c.snapshot.list())
    assert st == Status(Code.UnschedulableAndUnresolvable, "podGroup default/g failed recently")
    c.clock = NOW + 3
    _, st = c.plugin.pre_filter(CycleState(), c.pod("p1"), c.snapshot.list())
    assert st is None


# --- Permit ----------------------------------------------------------------------------------------------

def test_permit_waits_for_the_group_timeout_and_the_first_waiter_activates_its_siblings() -> None:
    c = Cluster(nodes=[node("n0", 4)], pending=[pod(f"p{i}", group="g") for i in range(3)], groups=[pod_group("g", 3, timeout=7)])
    st, timeout = c.permit("p0")
    assert (st.code, timeout) == (Code.Wait, 7)
    assert sorted(p.name for p in c.handle.activated) == ["p1", "p2"]


def test_permit_uses_the_plugin_wait_time_when_the_group_sets_none_or_zero() -> None:
    c = Cluster(pending=[pod("p0", group="g"), pod("p1", group="g")], groups=[pod_group("g", 2, timeout=0)],
                args={"permitWaitingTimeSeconds": 12})
    assert c.permit("p0")[1] == 12


def test_the_member_that_completes_the_quorum_allows_every_waiting_sibling_at_once() -> None:
    c = Cluster(nodes=[node("n0", 4)], pending=[pod(f"p{i}", group="g") for i in range(3)], groups=[pod_group("g", 3)])
    w0, w1 = c.wait("p0"), c.wait("p1")
    assert len(c.handle.activated) == 2  # only the first waiter activated siblings
    st, _ = c.permit("p2")
    assert st is None
    assert w0.decided == Status() and w1.decided == Status()


def test_a_rejected_waiter_still_in_the_cache_does_not_count_toward_the_quorum() -> None:
    # The rejected member's binding cycle has not forgotten it yet, and Unreserve
    # has not run (upstream's own profile does not enable it): an upstream-style
    # set of names would count 3 and approve a 2-member gang.
    c = Cluster(nodes=[node("n0", 4)], pending=[pod(f"p{i}", group="g") for i in range(3)], groups=[pod_group("g", 3)])
    w0, w1 = c.wait("p0"), c.wait("p1")
    w0.reject("Coscheduling", "rejected due to timeout after waiting 60s at plugin Coscheduling")
    c.handle.waiting_pods.remove(w0.pod.uid)  # the waiting room drops decided pods at once
    st, _ = c.permit("p2")
    assert st is not None and st.code == Code.Wait
    assert w1.decided is None


def test_a_pod_naming_a_missing_group_is_rejected_at_permit() -> None:
    c = Cluster(pending=[pod("p", group="nope")])
    assert c.permit("p")[0] == Status(Code.Unschedulable, "PodGroup not found")


# --- PostFilter / Unreserve ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("pct", "bound", "rejects"), [
    (10, 9, False), (10, 8, True), (0, 9, True), (100, 0, False), (50, 5, False), (50, 4, True),
], ids=["10% gap at 10", "20% gap at 10", "always at 0", "never at 100", "50% gap at 50", "60% gap at 50"])
def test_post_filter_rejects_the_group_only_when_the_gap_is_strictly_above_the_percentage(pct: int, bound: int, rejects: bool) -> None:
    c = Cluster(nodes=[node("n0", 32)], bound=[bound_pod(f"b{i}", "g") for i in range(bound)],
                pending=[pod("p", group="g")], groups=[pod_group("g", 10)], args={"podGroupRejectPercentage": pct})
    _, st = c.plugin.post_filter(CycleState(), c.pod("p"), NodeToStatus())
    assert st.code == Code.Unschedulable
    assert bool(st.reasons) == rejects


def test_post_filter_rejection_releases_every_waiting_member_in_one_step() -> None:
    c = Cluster(nodes=[node("n0", 8)], pending=[pod(f"p{i}", group="g") for i in range(4)], groups=[pod_group("g", 4)])
    waiters = [c.wait("p0"), c.wait("p1")]
    _, st = c.plugin.post_filter(CycleState(), c.pod("p2"), NodeToStatus())
    assert st.reasons == ["PodGroup default/g gets rejected due to Pod p2 is unschedulable even after PostFilter"]
    assert [w.decided.reasons for w in waiters] == [["optimistic rejection in PostFilter"]] * 2
    assert c.plugin.pg_mgr.assigned_members("default/g") == []


def test_unreserve_rejects_the_waiting_siblings() -> None:
    c = Cluster(nodes=[node("n0", 8)], pending=[pod(f"p{i}", group="g") for i in range(3)], groups=[pod_group("g", 3)])
    w0 = c.wait("p0")
    c.plugin.unreserve(CycleState(), c.pod("p1"), "n0")
    assert w0.decided == Status(Code.Unschedulable, "rejection in Unreserve")


# --- events, CheckClusterResource, conformance cases ------------------------------------------------------------

def test_status_only_pod_group_updates_do_not_requeue_members() -> None:
    c = Cluster()
    (hint,) = [e.hint for e in c.plugin.events_to_register() if e.event.resource == "PodGroup"]
    old = PodGroup(pod_group("g", 2))
    with_status = PodGroup({**pod_group("g", 2), "status": {"phase": "Scheduling"}})
    bigger = PodGroup(pod_group("g", 3))
    p = Pod(pod("p", group="g"))
    assert hint(p, old, with_status) == QueueingHint.QueueSkip
    assert hint(p, old, bigger) == QueueingHint.Queue
    assert hint(p, None, old) == QueueingHint.Queue


def test_check_cluster_resource_counts_the_groups_own_pods_as_free() -> None:
    nodes = [Node(node("n0", 3)), Node(node("n1", 3))]
    pods = [Pod(bound_pod("mine", "g", "n0", 2)), Pod(bound_pod("other", "", "n1", 1))]
    snap = Snapshot.build(nodes, pods)
    assert check_cluster_resource(snap.list(), parse_resource_list({"cpu": "5"}, ""), "default/g") is None
    assert check_cluster_resource(snap.list(), parse_resource_list({"cpu": "5"}, ""), "default/x") == "resource gap: map[cpu:2]"


# As tests/test_conformance.py: KSCHED_CONFORMANCE_DIR (the Makefile sets it), else
# the shared/ folder beside this checkout.
SHARED = Path(os.environ.get("KSCHED_CONFORMANCE_DIR") or Path(__file__).resolve().parents[4] / "shared" / "conformance")
PLUGIN_CASES = SHARED / "Coscheduling-plugin.json"
CASES = json.loads(PLUGIN_CASES.read_text()) if PLUGIN_CASES.is_file() else []


def test_the_shared_plugin_level_coscheduling_cases_are_found() -> None:
    # Without them the parametrized test below has nothing to run: fail, not skip.
    assert PLUGIN_CASES.is_file(), f"{PLUGIN_CASES} not found (set KSCHED_CONFORMANCE_DIR)"
    assert len(CASES) >= 30


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_plugin_level_conformance_case_passes(case: dict) -> None:
    from conformance.compare import mismatches
    from conformance.coscheduling_cases import run_coscheduling_case

    assert mismatches(case["expect"], run_coscheduling_case(case)) == []


def test_room_freed_by_the_groups_own_rollback_does_not_requeue_it() -> None:
    c = Cluster()
    (hint,) = [e.hint for e in c.plugin.events_to_register() if e.event.resource == "AssignedPod"]
    waiting = Pod(pod("g-1", group="g"))
    assert hint(waiting, Pod(bound_pod("g-0", "g")), None) == QueueingHint.QueueSkip
    assert hint(waiting, Pod(bound_pod("h-0", "h")), None) == QueueingHint.Queue
    assert hint(waiting, Pod(bound_pod("plain", "")), None) == QueueingHint.Queue


def test_members_allowed_but_not_yet_bound_keep_counting_while_other_groups_are_looked_at() -> None:
    c = Cluster(nodes=[node("n0", 8)], pending=[*(pod(f"a{i}", group="a") for i in range(3)),
                                                pod("b0", group="b"), pod("b1", group="b")],
                groups=[pod_group("a", 2), pod_group("b", 2)])
    c.wait("a0")
    assumed = Pod({**c.pod("a1").raw, "spec": {**c.pod("a1").raw["spec"], "nodeName": "n0"}})
    assert c.plugin.permit(CycleState(), assumed, "n0")[0] is None  # quorum: a0 and a1 allowed
    c.bound.append(assumed)
    c.handle.set_snapshot(Snapshot.build(c.nodes, c.bound))
    c.handle.waiting_pods.remove(c.pod("a0").uid)  # decided: the waiting room lets it go to bind
    c.plugin.pg_mgr.assigned_members("default/b")
    assert sorted(p.name for p in c.plugin.pg_mgr.assigned_members("default/a")) == ["a0", "a1"]
    assert c.permit("a2")[0] is None  # an extra member joins a complete group at once


def test_an_admitted_group_whose_pods_were_deleted_holds_no_room() -> None:
    c = Cluster(nodes=[node("n0", 4)], pending=[*(pod(f"a{i}", 2, "a") for i in range(2)),
                                                *(pod(f"b{i}", 2, "b") for i in range(2))],
                groups=[pod_group("a", 2), pod_group("b", 2)])
    assert c.plugin.pre_filter(CycleState(), c.pod("a0"), c.snapshot.list())[1] is None  # a admitted
    _, st = c.plugin.pre_filter(CycleState(), c.pod("b0"), c.snapshot.list())
    assert st is not None and "waits for podGroup default/a to be placed first" in st.reasons[0]
    for name in ("a0", "a1"):
        c.objects.delete("Pod", f"default/{name}")
    assert c.plugin.pre_filter(CycleState(), c.pod("b0"), c.snapshot.list())[1] is None


def test_the_failure_mark_is_never_earlier_than_the_groups_creation() -> None:
    c = Cluster(pending=[pod("p0", group="g")], groups=[pod_group("g", 2, created="2026-06-01T00:00:00Z")])
    c.clock = 100.0  # a monotonic clock, far before the wall-clock creationTimestamp
    c.plugin.post_filter(CycleState(), c.pod("p0"), NodeToStatus())
    pg = c.objects.get("PodGroup", "default", "g")
    assert c.plugin.pg_mgr.creation_timestamp(c.pod("p0"), 0) > pg.meta.creation_timestamp


def test_steps_run_in_order_on_one_plugin_and_less_is_taken_after_them() -> None:
    from conformance.coscheduling_cases import run_coscheduling_case

    case = {
        "plugin": "Coscheduling",
        "pluginArgs": {"podGroupBackoffSeconds": 5, "podGroupRejectPercentage": 0},
        "nodes": [node("n0", 4)],
        "podGroups": [pod_group("pg1", 2, created="2026-01-01T00:00:00Z"),
                      pod_group("pg2", 2, created="2026-01-01T00:00:01Z")],
        "pendingPods": [pod("p1", group="pg1"), pod("p1b", group="pg1"), pod("p2", group="pg2")],
        "steps": [{"op": "permit", "pod": "p1"}, {"op": "advance", "seconds": 5}, {"op": "postFilter", "pod": "p1"},
                  {"op": "preFilter", "pod": "p1b"}],
        "queueSort": {"p1": {"pod": pod("p1", group="pg1"), "initialAttemptTimestamp": "2026-01-01T00:00:00Z"},
                      "p2": {"pod": pod("p2", group="pg2"), "initialAttemptTimestamp": "2026-01-01T00:00:00Z"}},
    }
    actual = run_coscheduling_case(case)
    permit, _, post, pre = actual["steps"]
    assert (permit["code"], permit["activated"]) == ("Wait", ["default/p1b"])
    assert post["reasons"] == ["PodGroup default/pg1 gets rejected due to Pod p1 is unschedulable even after PostFilter"]
    assert pre == {"code": "UnschedulableAndUnresolvable", "reasons": ["podGroup default/pg1 failed recently"]}
    assert actual["less"] is False  # pg1 failed just now: it sorts behind pg2


def test_sort_generation_moves_when_a_groups_sort_time_changes() -> None:
    c = Cluster(nodes=[node("n0", 4)], pending=[pod("p0", group="g"), pod("p1", group="g")], groups=[pod_group("g", 2)])
    g0 = c.plugin.sort_generation
    c.plugin.post_filter(CycleState(), c.pod("p0"), NodeToStatus())
    g1 = c.plugin.sort_generation
    c.wait("p0")
    c.permit("p1")
    assert g0 < g1 < c.plugin.sort_generation


def test_a_failed_group_sorts_behind_existing_groups_even_with_a_monotonic_clock() -> None:
    c = Cluster(pending=[pod("old-0", group="old"), pod("new-0", group="new")],
                groups=[pod_group("old", 2, created="2026-06-01T00:00:00Z"),
                        pod_group("new", 2, created="2026-06-01T00:00:07Z")])
    c.clock = 100.0  # monotonic seconds, far before the wall-clock creation timestamps
    old, new = qpi(pod("old-0", group="old"), 0), qpi(pod("new-0", group="new"), 0)
    assert c.plugin.less(old, new)
    c.plugin.post_filter(CycleState(), c.pod("old-0"), NodeToStatus())
    assert c.plugin.less(new, old)


def test_a_member_waiting_after_a_permit_step_counts_as_assigned_in_post_filter() -> None:
    from conformance.coscheduling_cases import run_coscheduling_case

    case = {
        "plugin": "Coscheduling",
        "pluginArgs": {"podGroupRejectPercentage": 50},
        "nodes": [node("n0", 4)],
        "podGroups": [pod_group("pg1", 2)],
        "pendingPods": [pod("p1", group="pg1"), pod("p2", group="pg1")],
        "steps": [{"op": "permit", "pod": "p1"}, {"op": "postFilter", "pod": "p2"},
                  {"op": "unreserve", "pod": "p1"}, {"op": "postFilter", "pod": "p2"}],
    }
    wait, kept, _, rejected = run_coscheduling_case(case)["steps"]
    assert wait["code"] == "Wait"
    assert kept == {"code": "Unschedulable", "reasons": []}  # 1 of 2 waiting: a 50% gap is not above 50%
    assert rejected["reasons"] == ["PodGroup default/pg1 gets rejected due to Pod p2 is unschedulable even after PostFilter"]
