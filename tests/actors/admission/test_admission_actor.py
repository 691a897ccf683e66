"""The admission actor in the real pipeline (store, queue, scheduler) on a FakeClock:
queued pods are gated until admitted, admission is stored before pods are released,
borrowing and reclaim, gangs admitted whole, PodsReady timeout, rebuild after restart."""
from __future__ import annotations

import random

from actors.admission import AdmissionConfig
from actors.admission.queue_view import queues_view
from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.store.sqlite import SQLiteBackend
from tests.actors.admission.kueue_objects import cluster_queue, flavor, local_queue, node, queued_pod

GATE = "kueue.x-k8s.io/admission"


def two_teams() -> list[dict]:
    return [flavor("on-demand", tier="on-demand"),
            cluster_queue("team-a", "shared", "4"), cluster_queue("team-b", "shared", "4"),
            local_queue("a", "team-a"), local_queue("b", "team-b")]


def pods(p: Pipeline) -> dict[str, dict]:
    return {o.name: o.raw for o in p.store.peek_all("Pod")}


def workloads(p: Pipeline) -> dict[str, dict]:
    return {o.name: o.raw for o in p.store.peek_all("Workload")}


def cond(wl: dict, t: str) -> dict:
    return next(c for c in wl["status"]["conditions"] if c["type"] == t)


def bound(p: Pipeline, prefix: str) -> int:
    return sum(1 for name, raw in pods(p).items() if name.startswith(prefix) and raw["spec"].get("nodeName"))


async def test_queued_pod_is_gated_then_admitted_with_flavor_selector_and_bound():
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply(two_teams() + [node("n1", tier="on-demand")])
        await p.client.create(queued_pod("p1", "a"))
        await p.run_until_quiescent(60)
        raw = pods(p)["p1"]
        assert raw["spec"]["nodeName"] == "n1"
        assert GATE not in [g["name"] for g in raw["spec"].get("schedulingGates", [])]
        assert raw["spec"]["nodeSelector"] == {"tier": "on-demand"}
        (wl,) = workloads(p).values()
        assert wl["metadata"]["name"].startswith("pod-p1-")
        assert cond(wl, "Admitted")["status"] == "True"
        assert wl["status"]["admission"]["clusterQueue"] == "team-a"


async def test_pod_without_a_matching_flavor_node_stays_pending_but_admitted():
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply(two_teams() + [node("n1", tier="spot")])
        await p.client.create(queued_pod("p1", "a"))
        await p.run_until_quiescent(60)
        assert not pods(p)["p1"]["spec"].get("nodeName")


async def test_unlabelled_pod_is_not_queued():
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply(two_teams() + [node("n1")])
        plain = queued_pod("plain", "a")
        del plain["metadata"]["labels"]
        await p.client.create(plain)
        await p.run_until_quiescent(60)
        assert pods(p)["plain"]["spec"]["nodeName"] == "n1" and not workloads(p)


async def test_team_borrows_idle_quota_then_owner_reclaims_it():
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply(two_teams() + [node(f"n{i}", "4", tier="on-demand") for i in range(4)])
        for i in range(8):
            await p.client.create(queued_pod(f"b{i}", "b"))
        await p.run_until_quiescent(60)
        assert bound(p, "b") == 8  # 4 own + 4 borrowed
        for i in range(4):
            await p.client.create(queued_pod(f"a{i}", "a"))
        await p.run_until_quiescent(60)
        assert bound(p, "a") == 4 and bound(p, "b") == 4
        preempted = [w for w in workloads(p).values()
                     if any(c["type"] == "Preempted" and c["reason"] == "InCohortReclamation"
                            for c in w["status"]["conditions"])]
        assert len(preempted) == 4
        assert all(GATE in [g["name"] for g in pods(p)[f"b{i}"]["spec"].get("schedulingGates", [])]
                   for i in range(8) if not pods(p)[f"b{i}"]["spec"].get("nodeName"))


async def test_gang_is_admitted_whole_or_not_at_all():
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply(two_teams() + [node(f"n{i}", "4", tier="on-demand") for i in range(4)])
        for i in range(3):  # 3 of 5 members: no Workload yet
            await p.client.create(queued_pod(f"g{i}", "a", "2", group="gang", total=5))
        await p.run_until_quiescent(60)
        assert not workloads(p) and bound(p, "g") == 0
        for i in range(3, 5):
            await p.client.create(queued_pod(f"g{i}", "a", "2", group="gang", total=5))
        await p.run_until_quiescent(60)
        wl = workloads(p)["gang"]
        assert cond(wl, "QuotaReserved")["status"] == "False"  # 10 cpu > 4 nominal + 4 borrowable
        assert bound(p, "g") == 0
        await p.client.create(queued_pod("small", "a", "1"))
        await p.run_until_quiescent(60)
        assert bound(p, "small") == 1 and bound(p, "g") == 0


async def test_gang_that_cannot_be_placed_releases_quota_after_the_ready_timeout():
    cfg = AdmissionConfig(pods_ready_timeout_seconds=30, backoff_base_seconds=10)
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1), admission=cfg) as p:
        # quota for the gang, but its 2-cpu pods fit no 1-cpu node (fragmentation)
        await p.client.apply(two_teams() + [node(f"n{i}", "1", tier="on-demand") for i in range(4)])
        for i in range(2):
            await p.client.create(queued_pod(f"g{i}", "a", "2", group="gang", total=2))
        await p.settle()
        assert cond(workloads(p)["gang"], "Admitted")["status"] == "True"
        p.clock.advance(31)
        await p.settle()
        wl = workloads(p)["gang"]
        assert cond(wl, "Evicted")["reason"] == "PodsReadyTimeout"
        assert cond(wl, "QuotaReserved")["status"] == "False"
        assert not p.admission.state.holding("team-a")
        assert all(GATE in [g["name"] for g in raw["spec"]["schedulingGates"]] for raw in pods(p).values())
        # waiting out its backoff it is pending, inadmissible (Kueue's queue keeps it there): the
        # ClusterQueue's status and the metrics' view both count it
        view = queues_view(p.admission.state)["team-a"]
        assert (view["pending"], view["pendingActive"], view["pendingInadmissible"]) == (1, 0, 1)
        assert p.store.peek("ClusterQueue", "", "team-a").raw["status"]["pendingWorkloads"] == 1
        p.clock.advance(11)  # the backoff passes: admitted again
        await p.settle()
        assert cond(workloads(p)["gang"], "QuotaReserved")["status"] == "True"


async def test_quota_is_rebuilt_from_stored_workloads_after_restart(tmp_path):
    db = tmp_path / "ksched.db"
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1), backend=SQLiteBackend(str(db))) as p:
        await p.client.apply(two_teams() + [node(f"n{i}", "4", tier="on-demand") for i in range(2)])
        for i in range(6):
            await p.client.create(queued_pod(f"b{i}", "b"))
        await p.run_until_quiescent(60)
        assert bound(p, "b") == 6
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1), backend=SQLiteBackend(str(db))) as p:
        await p.settle()
        cq = p.admission.state.cache.cluster_queues["team-b"]
        assert cq.usage[("on-demand", "cpu")] == 6000
        await p.client.create(queued_pod("b6", "b", "3"))  # 6 + 3 > 8: must wait
        await p.client.create(queued_pod("b7", "b", "2"))  # 6 + 2 = 8: fits
        await p.client.apply([node("n2", "4", tier="on-demand")])
        await p.run_until_quiescent(60)
        assert bound(p, "b6") == 0 and bound(p, "b7") == 1
        admitted = sorted(n for n, w in workloads(p).items() if cond(w, "QuotaReserved")["status"] == "True")
        assert len(admitted) == 7 and not any(n.startswith("pod-b6-") for n in admitted)


async def test_invalid_queue_objects_are_refused_naming_the_field_and_nothing_changes():
    from actors.store import Invalid
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        bad = cluster_queue("team-a", "", "4")
        bad["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = "1"  # no cohort
        bad_group = queued_pod("g0", "a", group="gang", total=2)
        bad_group["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] = "zero"
        for obj, field in ((bad, "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit"),
                           (local_queue("a", ""), "spec.clusterQueue"),
                           (bad_group, "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]")):
            try:
                await p.client.create(obj)
            except Invalid as e:
                assert e.field == field or field in e.message, (e.field, e.message)
            else:
                raise AssertionError(f"{obj['kind']} was accepted")
        await p.settle()
        assert not p.store.peek_all("ClusterQueue") and not p.store.peek_all("LocalQueue")
        assert not p.store.peek_all("Pod") and not p.admission.state.cluster_queues


async def test_a_podgroup_naming_a_local_queue_is_one_workload_admitted_whole_and_bound_by_coscheduling():
    pg = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
          "metadata": {"name": "train", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "a"}},
          "spec": {"minMember": 3}}
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply(two_teams() + [node(f"n{i}", "4", tier="on-demand") for i in range(2)] + [pg])
        for i in range(3):
            member = queued_pod(f"t{i}", "a", "2")
            member["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "train"}  # the queue comes from the group
            await p.client.create(member)
            if i < 2:
                await p.settle()
                assert not workloads(p)  # not before all minMember pods exist
        await p.run_until_quiescent(60)
        wl = workloads(p)["train"]
        assert wl["metadata"]["annotations"]["kueue.x-k8s.io/is-group-workload"] == "true"
        assert [(ps["count"]) for ps in wl["spec"]["podSets"]] == [3]  # one shape, one pod set
        assert wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["cpu"] == "6"
        assert bound(p, "t") == 3


async def test_a_finished_pod_frees_its_quota_for_the_next_workload():
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply([flavor("on-demand", tier="on-demand"), cluster_queue("solo", "", "2"),
                              local_queue("s", "solo"), node("n1", tier="on-demand")])
        await p.client.create(queued_pod("first", "s", "2"))
        await p.client.create(queued_pod("second", "s", "2"))
        await p.run_until_quiescent(60)
        # Both Workloads may meet in one cycle with the same creationTimestamp: the UID
        # then orders them (Kueue's queue order), so either is admitted first.
        assert bound(p, "first") + bound(p, "second") == 1
        done, other = ("first", "second") if bound(p, "first") else ("second", "first")
        await p.client.update_pod_status("default", done, phase="Succeeded")
        await p.run_until_quiescent(60)
        finished = next(w for n, w in workloads(p).items() if n.startswith(f"pod-{done}-"))
        assert cond(finished, "Finished")["status"] == "True"
        assert bound(p, other) == 1


async def test_workload_priority_class_label_sets_the_workloads_priority():
    wpc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "urgent"},
           "value": 1000, "description": "urgent jobs"}
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply(two_teams() + [wpc, node("n1", tier="on-demand")])
        pod = queued_pod("u", "a")
        pod["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "urgent"
        await p.client.create(pod)
        await p.run_until_quiescent(60)
        (wl,) = workloads(p).values()
        assert wl["spec"]["priority"] == 1000
        assert wl["spec"]["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                                  "name": "urgent"}


async def test_cluster_and_local_queue_status_say_what_kueue_writes():
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply([flavor("on-demand", tier="on-demand"), cluster_queue("team-a", "", "4"),
                              cluster_queue("team-b", "", "4"), local_queue("a", "team-a"),
                              node("n1", "8", tier="on-demand")])
        for i, cpu in enumerate(["3", "1", "6"]):  # 3 + 1 fit team-a's 4, in any order; 6 never does
            await p.client.create(queued_pod(f"a{i}", "a", cpu))
        await p.run_until_quiescent(60)
        cq = p.store.peek("ClusterQueue", "", "team-a").raw["status"]
        assert (cq["pendingWorkloads"], cq["reservingWorkloads"], cq["admittedWorkloads"]) == (1, 2, 2)
        assert cq["flavorsReservation"] == cq["flavorsUsage"] == [
            {"name": "on-demand", "resources": [{"name": "cpu", "total": "4", "borrowed": "0"}]}]
        (active,) = cq["conditions"]
        assert (active["type"], active["status"], active["reason"], active["message"]) == (
            "Active", "True", "Ready", "Can admit new workloads")
        lq = p.store.peek("LocalQueue", "default", "a").raw["status"]
        assert (lq["pendingWorkloads"], lq["reservingWorkloads"], lq["admittedWorkloads"]) == (1, 2, 2)
        assert lq["flavorsUsage"] == [{"name": "on-demand", "resources": [{"name": "cpu", "total": "4"}]}]
        assert [(c["type"], c["status"], c["reason"]) for c in lq["conditions"]] == [("Active", "True", "Ready")]
        idle = p.store.peek("ClusterQueue", "", "team-b").raw["status"]
        assert (idle["pendingWorkloads"], idle["reservingWorkloads"]) == (0, 0)


def _kept(p: Pipeline, kind: str, name: str) -> dict | None:
    obj = p.store.peek(kind, "", name)
    return None if obj is None else obj.raw["metadata"]


async def test_a_resource_flavor_in_use_and_a_cluster_queue_holding_quota_stay_until_released():
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply(two_teams() + [node("n1", "8", tier="on-demand")])
        await p.client.create(queued_pod("first", "a", "1"))
        await p.run_until_quiescent(60)
        assert _kept(p, "ResourceFlavor", "on-demand")["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
        gone = await p.client.delete("ResourceFlavor", "", "on-demand")
        assert gone["metadata"]["deletionTimestamp"]
        await p.client.delete("ClusterQueue", "", "team-a")
        await p.client.create(queued_pod("second", "a", "1"))
        await p.run_until_quiescent(60)
        assert _kept(p, "ResourceFlavor", "on-demand")["deletionTimestamp"]  # two ClusterQueues use it
        team_a = p.store.peek("ClusterQueue", "", "team-a").raw
        (active,) = team_a["status"]["conditions"]
        assert (active["status"], active["reason"], active["message"]) == (
            "False", "Terminating", "Can't admit new workloads; clusterQueue is terminating")
        assert team_a["status"]["reservingWorkloads"] == 1 and bound(p, "second") == 0
        await p.client.update_pod_status("default", "first", phase="Succeeded")  # team-a holds no quota now
        await p.run_until_quiescent(60)
        assert _kept(p, "ClusterQueue", "team-a") is None
        assert _kept(p, "ResourceFlavor", "on-demand") is not None  # team-b still uses it
        await p.client.delete("ClusterQueue", "", "team-b")
        await p.run_until_quiescent(60)
        assert _kept(p, "ClusterQueue", "team-b") is None and _kept(p, "ResourceFlavor", "on-demand") is None


async def test_a_cluster_queue_naming_a_missing_flavor_says_so_and_its_workloads_wait():
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply([cluster_queue("solo", "", "2", flavor_name="default-flavor"), local_queue("s", "solo"),
                              node("n1")])
        await p.client.create(queued_pod("p1", "s", "1"))
        await p.run_until_quiescent(60)
        (active,) = p.store.peek("ClusterQueue", "", "solo").raw["status"]["conditions"]
        assert (active["status"], active["reason"], active["message"]) == (
            "False", "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): default-flavor.")
        (lq_active,) = p.store.peek("LocalQueue", "default", "s").raw["status"]["conditions"]
        assert (lq_active["status"], lq_active["reason"]) == ("False", "ClusterQueueIsInactive")
        assert bound(p, "p1") == 0
        await p.client.apply([flavor("default-flavor")])
        await p.run_until_quiescent(60)
        (active,) = p.store.peek("ClusterQueue", "", "solo").raw["status"]["conditions"]
        assert (active["status"], active["reason"]) == ("True", "Ready") and bound(p, "p1") == 1


async def test_an_inactive_cluster_queues_pending_workloads_are_counted_inadmissible():
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply([cluster_queue("solo", "", "2", flavor_name="missing"), local_queue("s", "solo")])
        await p.client.create(queued_pod("p1", "s", "1"))
        await p.run_until_quiescent(60)
        view = queues_view(p.admission.state)["solo"]
        assert (view["pending"], view["pendingActive"], view["pendingInadmissible"]) == (1, 0, 1)


async def test_an_evicted_pod_group_keeps_its_finished_pods_and_regates_only_the_rest():
    # Kueue's pod integration stops only pods not yet suspended: a Succeeded member
    # stays as it is (its completion was acknowledged), the running ones go back gated.
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply(two_teams() + [node(f"n{i}", "4", tier="on-demand") for i in range(4)])
        for i in range(4):  # 8 cpu: team-b's 4 and team-a's idle 4
            await p.client.create(queued_pod(f"g{i}", "b", "2", group="gb", total=4))
        await p.run_until_quiescent(60)
        assert bound(p, "g") == 4
        done_uid = pods(p)["g0"]["metadata"]["uid"]
        await p.client.update_pod_status("default", "g0", phase="Succeeded")
        await p.client.create(queued_pod("a0", "a", "2"))  # team-a reclaims: the group is evicted
        await p.run_until_quiescent(60)
        assert cond(workloads(p)["gb"], "Preempted")["reason"] == "InCohortReclamation"
        g0 = pods(p)["g0"]
        assert (g0["metadata"]["uid"], g0["status"]["phase"]) == (done_uid, "Succeeded")
        assert all(GATE in [g["name"] for g in pods(p)[f"g{i}"]["spec"]["schedulingGates"]] for i in (1, 2, 3))
        assert bound(p, "a0") == 1


async def test_an_eviction_working_from_a_stale_view_leaves_a_pod_its_client_just_finished():
    # The actor's pod index can lag the store: a pod whose Succeeded was acknowledged a
    # moment ago still looks running to it. Its replacement carries the resourceVersion it
    # saw, so the store refuses it and the finished pod stays, with its uid and phase.
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply(two_teams() + [node("n1", "4", tier="on-demand")])
        await p.client.create(queued_pod("g0", "b", "1"))
        await p.run_until_quiescent(60)
        seen = pods(p)["g0"]
        await p.client.update_pod_status("default", "g0", phase="Succeeded")
        await p.admission._regate(seen, None)
        now = pods(p)["g0"]
        assert now["metadata"]["uid"] == seen["metadata"]["uid"] and now["status"]["phase"] == "Succeeded"


async def test_a_workload_a_client_wrote_stays_when_a_pod_group_of_its_name_comes_and_goes():
    # h29-api's kubectl test found it: a Coscheduling PodGroup named as a client's Kueue
    # Workload marked that Workload's key dirty, and having no pods it was deleted.
    async with Pipeline(None, clock=FakeClock(), rand=random.Random(1)) as p:
        await p.client.apply(two_teams() + [node("n1", "4", tier="on-demand")])
        await p.client.create({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                               "metadata": {"name": "x", "namespace": "default"},
                               "spec": {"queueName": "a", "podSets": [{"name": "main", "count": 1, "template": {
                                   "spec": {"containers": [{"name": "c", "image": "x",
                                                            "resources": {"requests": {"cpu": "1"}}}]}}}]}})
        await p.client.create({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                               "metadata": {"name": "x", "namespace": "default"}, "spec": {"minMember": 2}})
        await p.run_until_quiescent(60)
        await p.client.delete("PodGroup", "default", "x")
        await p.run_until_quiescent(60)
        assert "x" in workloads(p)
