"""GangScheduling's hint keys (its registrations' event_keys / pod_keys): a pod added,
bound or not, and a PodGroup added are offered only to the waiting pods of that
group, and the queue moves the same pods as one that offers every event to every
waiting pod (random members of random groups, random rejectors, random events)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.queue.scheduling_queue import SchedulingQueue
from framework.api.groups import POD_GROUP_KEY
from framework.api.objects import Pod
from framework.api.workload_api import SchedulingPodGroup
from framework.cache import Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, QueuedPodInfo
from framework.plugins.gangscheduling.gangscheduling import GangScheduling
from framework.plugins.queuesort.priority_sort import PrioritySort

GANG = "GangScheduling"
NS = ["default", "other"]
GROUPS = ["g0", "g1", "g2", None]
UNSCHEDULED_ADD = ClusterEvent("UnschedulablePod", ActionType.Add)
ASSIGNED_ADD = ClusterEvent("AssignedPod", ActionType.Add)
GROUP_ADD = ClusterEvent(POD_GROUP_KEY, ActionType.Add)
NODE_ADD = ClusterEvent("Node", ActionType.Add)
# (unschedulable plugins, pending plugins) of a waiting pod
REJECTIONS = [(set(), {GANG}), ({GANG}, set()), ({"NodeResourcesFit"}, set()), (set(), set())]


def _pod(name: str, ns: str, group: str | None, node: str = "") -> Pod:
    spec: dict = {"containers": [{"name": "c", "image": "x"}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    return Pod({"metadata": {"name": name, "namespace": ns, "uid": f"{ns}-{name}"}, "spec": spec})


def _group(ns: str, name: str) -> SchedulingPodGroup:
    return SchedulingPodGroup({
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": name, "namespace": ns},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                 "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": name}}}})


def _queues() -> tuple[SchedulingQueue, SchedulingQueue]:
    plugin = GangScheduling(FrameworkHandle(snapshot=Snapshot.build([], []), objects=InMemoryObjects()))
    hint_map = {GANG: plugin.events_to_register(),
                "NodeResourcesFit": [ClusterEventWithHint(ClusterEvent("Node", ActionType.Add)),
                                     ClusterEventWithHint(ClusterEvent("Pod", ActionType.Delete))]}
    made = [SchedulingQueue(less=PrioritySort().less, hints_for=lambda p: hint_map, hint_maps=[hint_map])
            for _ in range(2)]
    made[1].unschedulable.hint_index = None  # the reference: every event offered to every pod
    return made[0], made[1]


def _wait(q: SchedulingQueue, pod: Pod, rejection: int, now: float) -> None:
    unschedulable, pending = REJECTIONS[rejection]
    q.add_unschedulable_if_not_present(QueuedPodInfo(pod=pod, attempts=1, unschedulable_plugins=set(unschedulable),
                                                     pending_plugins=set(pending)), now)


pods_st = st.lists(st.tuples(st.sampled_from(NS), st.sampled_from(GROUPS), st.integers(0, len(REJECTIONS) - 1)),
                   min_size=1, max_size=8)
events_st = st.lists(st.one_of(
    st.tuples(st.just("pod"), st.sampled_from(NS), st.sampled_from(GROUPS), st.booleans()),
    # a PodGroup event always names its group: None (a pod of no group) is only for pods
    st.tuples(st.just("group"), st.sampled_from(NS), st.sampled_from(GROUPS[:-1])),
    st.tuples(st.just("node"),),
    st.tuples(st.just("requeue"),),
), min_size=1, max_size=20)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pods_st, events_st)
def test_the_gang_hint_keys_move_the_same_pods_as_offering_every_event_to_every_pod(pods: list, events: list) -> None:
    indexed, walking = _queues()
    waiting = {f"{ns}/w{i}": (_pod(f"w{i}", ns, group), r) for i, (ns, group, r) in enumerate(pods)}
    now = 1.0

    def requeue() -> None:
        for q in (indexed, walking):
            for pod, rejection in waiting.values():
                if q.where(pod.key) in ("unschedulable", "gated"):
                    continue
                q.delete(pod, now)
                _wait(q, pod, rejection, now)

    requeue()
    for n, event in enumerate(events):
        now += 0.25
        match event:
            case ("pod", ns, group, bound):
                new = _pod(f"new{n}", ns, group, node="n1" if bound else "")
                ce = ASSIGNED_ADD if bound else UNSCHEDULED_ADD
                moved = [q.move_all_to_active_or_backoff(ce, None, new, now, cross_topology_only=bound)
                         for q in (indexed, walking)]
            case ("group", ns, group):
                pg = _group(ns, group)
                moved = [q.move_all_to_active_or_backoff(GROUP_ADD, None, pg, now) for q in (indexed, walking)]
            case ("node",):
                moved = [q.move_all_to_active_or_backoff(NODE_ADD, None, object(), now) for q in (indexed, walking)]
            case _:
                requeue()
                moved = [0, 0]
        assert moved[0] == moved[1]
        assert {k: indexed.where(k) for k in waiting} == {k: walking.where(k) for k in waiting}


def test_a_pod_or_podgroup_added_is_offered_only_to_its_own_groups_waiting_pods() -> None:
    indexed, _ = _queues()
    for g in range(40):
        for i in range(3):
            _wait(indexed, _pod(f"g{g}-{i}", "default", f"g{g}"), 0, 1.0)
    index = indexed.unschedulable.hint_index
    assert index is not None
    mates = {"default/g7-0", "default/g7-1", "default/g7-2"}
    assert index.candidates(UNSCHEDULED_ADD, None, _pod("g7-3", "default", "g7")) == mates
    assert index.candidates(ASSIGNED_ADD, None, _pod("g7-4", "default", "g7", node="n1")) == mates
    assert index.candidates(GROUP_ADD, None, _group("default", "g7")) == mates
    assert index.candidates(GROUP_ADD, None, _group("other", "g7")) == set()
    assert index.candidates(UNSCHEDULED_ADD, None, _pod("loose", "default", None)) == set()
    assert indexed.move_all_to_active_or_backoff(GROUP_ADD, None, _group("default", "g7"), 2.0) == 3
    assert all(indexed.where(k) in ("active", "backoff") for k in mates)
