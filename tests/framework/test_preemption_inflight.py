"""The scheduling cycle's half of asynchronous preemption and DefaultPreemption's
PreEnqueue (upstream's prepareCandidateAsync and IsPodRunningPreemption)."""
from __future__ import annotations

from framework.runtime import run_unsuspended
from framework.api.objects import Pod
from framework.interface import Code, CycleState, NodeToStatus, Status
from framework.api.groups import POD_GROUP_KEY
from framework.features import FeatureGates
from framework.preemption_inflight import PREEMPTION_RUNNING, PREEMPTION_RUNNING_GROUP
from tests.framework.preemption_builders import Cluster, node, pod
from tests.framework.workload_preemption_builders import gang, gang_group

HELD = Status(Code.UnschedulableAndUnresolvable, PREEMPTION_RUNNING)
GROUP_HELD = Status(Code.UnschedulableAndUnresolvable, PREEMPTION_RUNNING_GROUP)


def _post_filter(c: Cluster, preemptor: Pod):  # noqa: ANN202
    state = CycleState()
    c.fwk.run_pre_filter(state, preemptor)
    failed = NodeToStatus({ni.name: Status(Code.Unschedulable, "Insufficient cpu") for ni in c.snapshot.list()})
    return run_unsuspended(c.preemption.post_filter(state, preemptor, failed))


def _deleting(p: Pod) -> Pod:
    raw = p.raw
    return Pod({**raw, "metadata": {**raw["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"}})


def test_the_cycle_nominates_and_hands_the_victims_on_without_evicting() -> None:
    victims = [pod("v1", cpu="200m", priority=1, node_name="n1"), pod("v2", cpu="200m", priority=0, node_name="n1")]
    c = Cluster([node("n1", cpu="400m")], victims, nominated={"n1": [pod("lower", priority=5)]}, async_preemption=True)
    high = pod("high", cpu="400m", priority=100)
    result, st = _post_filter(c, high)
    assert st.is_success() and result.nominated_node_name == "n1"
    assert c.handle.evicted == [] and c.handle.cleared_nominations == []
    [job] = c.handle.preemption_jobs
    assert (job.node_name, [v.name for v in job.victims], [p.name for p in job.lower_nominated]) == \
        ("n1", ["v1", "v2"], ["lower"])
    assert job.plugin == "DefaultPreemption" and "high" in c.handle.preemptions
    assert c.preemption.pre_enqueue(high) == HELD
    assert c.preemption.pre_enqueue(pod("other")) is None


def test_the_preemptor_is_let_go_once_its_last_victim_is_gone_or_terminating() -> None:
    last = pod("v", cpu="400m", node_name="n1")
    c = Cluster([node("n1", cpu="400m")], [last], async_preemption=True)
    high = pod("high", cpu="400m", priority=100)
    _post_filter(c, high)
    c.handle.preemptions.last_victim(high.uid, last)
    assert c.preemption.pre_enqueue(high) == HELD  # the last victim still runs
    c.handle.objects.put(_deleting(last))
    assert c.preemption.pre_enqueue(high) is None  # terminating
    c.handle.objects.delete("Pod", last.key)
    assert c.preemption.pre_enqueue(high) is None  # gone, though the actor has not ended the entry
    c.handle.preemptions.end(high.uid)
    assert c.preemption.pre_enqueue(high) is None


def test_victims_already_terminating_need_no_job_and_do_not_hold_the_preemptor() -> None:
    c = Cluster([node("n1", cpu="400m")], [_deleting(pod("v", cpu="400m", node_name="n1"))], async_preemption=True)
    high = pod("high", cpu="400m", priority=100)
    result, st = _post_filter(c, high)
    assert st.is_success() and result.nominated_node_name == "n1"
    assert c.handle.preemption_jobs == [] and c.preemption.pre_enqueue(high) is None


def test_with_the_gate_off_pre_enqueue_never_holds_and_no_pod_delete_event_is_registered() -> None:
    c = Cluster([node("n1", cpu="400m")], [pod("v", cpu="400m", node_name="n1")])
    high = pod("high", cpu="400m", priority=100)
    c.handle.preemptions.begin(high.uid)
    assert c.preemption.pre_enqueue(high) is None and c.preemption.events_to_register() == []
    on = Cluster([node("n1")], [], async_preemption=True).preemption.events_to_register()
    assert [(e.event.resource, e.event.action.name) for e in on] == [("Pod", "Delete")]


def _gang_preempting(workload_aware: bool = True) -> tuple[Cluster, list[Pod]]:
    """A gang of 3 (minCount 2) whose first member preempts a low pod on the one node."""
    high = gang("high", ["", "", ""], cpu="200m", priority=100)
    c = Cluster([node("n1", cpu="400m")], [pod("low", cpu="400m", node_name="n1")],
                objects=[gang_group("high", 2), *high], async_preemption=True)
    c.handle.features = FeatureGates({"SchedulerAsyncPreemption": True, "WorkloadAwarePreemption": workload_aware})
    _, st = _post_filter(c, high[0])
    assert st.is_success(), st.message()
    return c, high


def test_a_gang_preempting_for_its_group_holds_every_member_until_the_victims_are_gone() -> None:
    # Issue 29 (h29-gangfix): the record held only the member that preempted, so its
    # siblings (still minCount) ran a cycle while the victim was still there, failed,
    # preempted again with another plan, and the nominations of both plans together
    # asked more than the node had: the gang stayed pending with room for it.
    # Upstream keys a pod group's preemption by the PodGroup (IsPodGroupRunningPreemption).
    c, high = _gang_preempting()
    assert [c.preemption.pre_enqueue(m) for m in high] == [GROUP_HELD] * 3
    assert c.preemption.pre_enqueue(pod("other")) is None
    [job] = c.handle.preemption_jobs
    pg = c.handle.get_object(POD_GROUP_KEY, "default", "high")
    assert job.uid == pg.uid and job.uid in c.handle.preemptions and high[0].uid not in c.handle.preemptions
    assert [p.name for p in job.held] == ["high-0", "high-1", "high-2"]
    c.handle.preemptions.end(job.uid)
    assert [c.preemption.pre_enqueue(m) for m in high] == [None] * 3


def test_with_workload_aware_preemption_off_a_member_preempts_and_waits_alone() -> None:
    c, high = _gang_preempting(workload_aware=False)
    assert [c.preemption.pre_enqueue(m) for m in high] == [HELD, None, None]
    [job] = c.handle.preemption_jobs
    assert job.uid == high[0].uid and [p.name for p in job.held] == ["high-0"]
