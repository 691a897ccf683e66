"""The kill -9 loop's observer (kueue_ledger.Ledger) flags what it must: a ClusterQueue
over nominal + borrowingLimit, a cohort over its quota, a pod moved to another node."""
from __future__ import annotations

from transport.client.tcp import WatchEvent

from tests.validation.kueue_ledger import QUEUE_LABEL, Ledger, QueueLimit

LIMITS = {"team-a": QueueLimit("a", 3000, 1000), "team-b": QueueLimit("b", 3000, None)}


def workload(name: str, cq: str, cpu: str, finished: bool = False) -> WatchEvent:
    conds = [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": "t"}]
    if finished:
        conds.append({"type": "Finished", "status": "True"})
    status = {"conditions": conds, "admission": {"clusterQueue": cq, "podSetAssignments": [
        {"name": "main", "count": 1, "resourceUsage": {"cpu": cpu}}]}}
    return WatchEvent("ADDED", {"kind": "Workload", "metadata": {"name": name, "namespace": "default"},
                                "status": status}, 1)


def bound_pod(name: str, uid: str, node: str, queue: str, cpu: str) -> WatchEvent:
    return WatchEvent("MODIFIED", {"kind": "Pod", "metadata": {"name": name, "uid": uid, "labels": {QUEUE_LABEL: queue}},
                                   "spec": {"nodeName": node, "containers": [
                                       {"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}, 2)


def test_a_cluster_queue_within_nominal_plus_borrowing_limit_passes_and_over_it_is_flagged():
    ledger = Ledger(LIMITS)
    ledger.see(workload("w1", "team-a", "4"))
    assert ledger.violations == [] and ledger.figures["admissions observed"] == 1
    ledger.see(workload("w2", "team-a", "500m"))
    assert ledger.violations == ["at resourceVersion 1: admitted Workloads of team-a use 4500m cpu > 4000m"]


def test_finished_workloads_hold_no_quota_and_the_cohort_sum_is_bounded():
    ledger = Ledger(LIMITS)
    ledger.see(workload("done", "team-b", "6", finished=True))
    ledger.see(workload("w1", "team-b", "6"))  # no borrowing limit: the whole cohort (6 cpu)
    assert ledger.violations == []
    ledger.see(workload("w2", "team-a", "1"))
    assert ledger.violations == ["at resourceVersion 1: admitted Workloads of the cohort use 7000m cpu > 6000m"]


def test_a_pod_seen_on_a_second_node_is_flagged_and_bound_pods_count_against_quota():
    ledger = Ledger(LIMITS)
    ledger.see(bound_pod("p", "u1", "n1", "a", "4"))
    ledger.reset_view()  # a restarted daemon: the watch lists again, the first node is remembered
    ledger.see(bound_pod("p", "u1", "n2", "a", "4"))
    assert ledger.violations == ["pod p (uid u1) moved from n1 to n2"]
    ledger.see(bound_pod("q", "u2", "n1", "a", "1"))
    assert ledger.violations[-1] == "at resourceVersion 2: bound pods of team-a use 5000m cpu > 4000m"
