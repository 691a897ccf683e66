"""Kueue's pkg/scheduler/scheduler_fs_test.go, translated: "multiple preemptions within
cq when fair sharing". Three ClusterQueues of one cohort each borrow 1 cpu from a
resource bank to run a priority-0 workload of 3 cpu; a priority-100 preemptor of 3 cpu
arrives in each. Each preemptor preempts the workload in its own ClusterQueue, all in
the same cycle, and waits for it.

The ClusterQueues are built as upstream's test builds them, without the API server's
defaults: `Preemption{WithinClusterQueue: LowerPriority}` leaves reclaimWithinCohort
"" (not Never), so with fair sharing the preemptor may preempt while it borrows
(flavorassigner.go: canPreemptWhileBorrowing)."""
from __future__ import annotations

from framework.kueue.cycle import Config
from framework.kueue.manager import AdmissionState
from framework.kueue.workload import parse_workload
from tests.framework.kueue.builders import cq, flavor, lq

LOWER = {"withinClusterQueue": "LowerPriority"}
TEAMS = ("alpha", "beta", "gamma")
FIRST = {"alpha": "a1", "beta": "b1", "gamma": "c1"}  # upstream's names of the priority-0 workloads


def _workload(name: str, namespace: str, priority: int, uid: str, job_uid: str = ""):
    labels = {"kueue.x-k8s.io/job-uid": job_uid} if job_uid else {}
    return parse_workload({
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "labels": labels,
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"queueName": "other", "priority": priority, "podSets": [
            {"name": "main", "count": 1, "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": "3"}}}]}}}]}})


def test_multiple_preemptions_within_cq_when_fair_sharing():
    s = AdmissionState(Config(fair_sharing=True))
    s.set_objects([flavor("default")],
                  [*(cq(f"other-{t}", "other", {"default": {"cpu": "2"}}, preemption=LOWER, strict=False)
                     for t in TEAMS),
                   cq("resource-bank", "other", {"default": {"cpu": "3"}}, strict=False)],
                  [], [lq("other", f"other-{t}", namespace=f"eng-{t}") for t in TEAMS])
    for t in TEAMS:  # a1, b1, c1: 3 cpu each, 1 of it borrowed from the bank
        s.add_workload(_workload(FIRST[t], f"eng-{t}", 0, uid=FIRST[t]))
    for now in (1, 2, 3):
        s.schedule(now)
    assert sorted(w.name for t in TEAMS for w in s.holding(f"other-{t}")) == ["a1", "b1", "c1"]

    for t in TEAMS:
        s.add_workload(_workload("preemptor", f"eng-{t}", 100, uid="wl-preemptor", job_uid="job-preemptor"))
    report = s.schedule(10)

    assert sorted(w.key for w in report.evicted) == ["eng-alpha/a1", "eng-beta/b1", "eng-gamma/c1"]
    assert not report.admitted
    for t in TEAMS:
        victim = s.workloads[f"eng-{t}/{FIRST[t]}"]
        message = ("Preempted to accommodate a workload (UID: wl-preemptor, JobUID: job-preemptor) due to "
                   f"prioritization in the ClusterQueue; preemptor path: /other/other-{t}; "
                   f"preemptee path: /other/other-{t}")
        evicted, preempted = victim.conditions["Evicted"], victim.conditions["Preempted"]
        assert (evicted.status, evicted.reason, evicted.message) == ("True", "Preempted", message)
        assert (preempted.status, preempted.reason, preempted.message) == ("True", "InClusterQueue", message)
        reserved = s.workloads[f"eng-{t}/preemptor"].conditions["QuotaReserved"]
        assert (reserved.status, reserved.reason, reserved.message) == (
            "False", "WaitingForPreemptedWorkloads",
            "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, "
            "3 more needed. Pending the preemption of 1 workload(s)")
        # wantLeft: each preemptor stays queued in its ClusterQueue
        assert f"eng-{t}/preemptor" in s.queues[f"other-{t}"]
