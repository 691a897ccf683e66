"""The queue's hint index (actors/queue/hint_index.py) moves the same pods as offering
every event to every pod: over random pods waiting for claims (named, or made from a
template and recorded in the pod's status or not yet), random rejectors and random
claim, pod and node events (claims made, allocated, deallocated, changed without a
status change, pods' statuses recording their claims), a queue with the index and one
without end every event with every pod in the same sub-queue, and the index offers
a claim event to the pods of that claim only."""
from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from actors.queue.scheduling_queue import SchedulingQueue
from framework.api.dra_kinds import ResourceClaim
from framework.api.objects import Pod
from framework.cache import Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, QueuedPodInfo
from framework.plugins.dynamicresources.dynamic_resources import DynamicResources
from framework.plugins.dynamicresources.tracker import DeviceTracker
from framework.plugins.queuesort.priority_sort import PrioritySort
from tests import dra_manifests as m

DRA = "DynamicResources"
CLAIM_ADD = ClusterEvent("ResourceClaim", ActionType.Add)
CLAIM_UPDATE = ClusterEvent("ResourceClaim", ActionType.Update)
POD_CLAIM = ClusterEvent("Pod", ActionType.UpdatePodGeneratedResourceClaim)
NODE_ADD = ClusterEvent("Node", ActionType.Add)
POD_DELETE = ClusterEvent("AssignedPod", ActionType.Delete)
NAMES = ["c0", "c1"]
REJECTORS = [frozenset({DRA}), frozenset({DRA}), frozenset({"NodeResourcesFit"}),
             frozenset({DRA, "ClaimWatcher"}), frozenset()]


def _pod(i: int, named: str | None) -> Pod:
    entry = {"name": "gpu", "resourceClaimName": named} if named else {"name": "gpu",
                                                                        "resourceClaimTemplateName": "one-gpu"}
    return Pod({"metadata": {"name": f"p{i}", "namespace": "default", "uid": f"uid-{i}"},
                "spec": {"containers": [{"name": "c", "image": "x"}], "resourceClaims": [entry]}})


def _recorded(pod: Pod, claim: str) -> Pod:
    return Pod({**pod.raw, "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": claim}]}})


def _claim(name: str, owner: int | None, allocated: bool, rv: int) -> ResourceClaim:
    raw: dict[str, Any] = m.resource_claim(name, count=1)
    raw["metadata"].update(uid=f"{name}-uid", resourceVersion=str(rv))
    if owner is not None:
        raw["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": f"p{owner}",
                                               "uid": f"uid-{owner}", "controller": True}]
    if allocated:
        raw["status"] = {"allocation": m.allocation()}
    return ResourceClaim(raw)


def _queues(plugin: DynamicResources) -> tuple[SchedulingQueue, SchedulingQueue]:
    hint_map = {
        DRA: plugin.events_to_register(),
        "NodeResourcesFit": [ClusterEventWithHint(ClusterEvent("Node", ActionType.Add)),
                             ClusterEventWithHint(ClusterEvent("Pod", ActionType.Delete))],
        "ClaimWatcher": [ClusterEventWithHint(CLAIM_UPDATE)],  # no hint keys: every pod it rejected
    }
    made = [SchedulingQueue(less=PrioritySort().less, hints_for=lambda p: hint_map, hint_maps=[hint_map])
            for _ in range(2)]
    made[1].unschedulable.hint_index = None  # the reference: every event offered to every pod
    return made[0], made[1]


pods_st = st.lists(st.tuples(st.sampled_from([None, None, *NAMES]), st.integers(0, len(REJECTORS) - 1)),
                   min_size=1, max_size=3)
ops_st = st.lists(st.one_of(
    st.tuples(st.just("claim"), st.sampled_from(NAMES), st.one_of(st.none(), st.integers(0, 2)), st.booleans()),
    st.tuples(st.just("touch"), st.sampled_from(NAMES)),
    st.tuples(st.just("record"), st.integers(0, 2), st.sampled_from(NAMES)),
    st.tuples(st.just("node"),),
    st.tuples(st.just("pod-deleted"),),
    st.tuples(st.just("requeue"),),
), min_size=1, max_size=30)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pods_st, ops_st)
@example([(None, 0)], [("record", 0, "c0"), ("claim", "c0", 0, False)])  # a template claim made after its name
@example([("c1", 0)], [("claim", "c1", None, False), ("requeue",), ("claim", "c0", None, True),
                       ("claim", "c0", None, False)])  # another pod's claim deallocated: devices free for all
def test_the_index_moves_the_same_pods_as_offering_every_event_to_every_pod(pods: list, ops: list) -> None:
    objects = InMemoryObjects()
    plugin = DynamicResources(FrameworkHandle(snapshot=Snapshot.build([], []), objects=objects), DeviceTracker())
    indexed, walking = _queues(plugin)
    current = {i: _pod(i, named) for i, (named, _) in enumerate(pods)}
    rejectors = {i: REJECTORS[r] for i, (_, r) in enumerate(pods)}
    claims: dict[str, ResourceClaim] = {}
    now = 1.0

    def requeue() -> None:
        for q in (indexed, walking):
            for i, pod in current.items():
                if q.where(pod.key) in ("unschedulable", "gated"):
                    continue
                q.delete(pod, now)
                q.add_unschedulable_if_not_present(
                    QueuedPodInfo(pod=pod, attempts=1, unschedulable_plugins=set(rejectors[i])), now)

    def same() -> None:
        assert {p.key: indexed.where(p.key) for p in current.values()} == \
            {p.key: walking.where(p.key) for p in current.values()}

    requeue()
    for rv, op in enumerate(ops, start=10):
        now += 0.25
        match op:
            case ("claim", name, owner, allocated):
                old = claims.get(name)
                new = claims[name] = _claim(name, owner if owner is None or owner in current else None, allocated, rv)
                objects.put(new)
                event = CLAIM_ADD if old is None else CLAIM_UPDATE
                moved = [q.move_all_to_active_or_backoff(event, old, new, now) for q in (indexed, walking)]
                assert moved[0] == moved[1]
            case ("touch", name) if name in claims:
                old = claims[name]
                new = claims[name] = ResourceClaim({**old.raw, "metadata": {**old.raw["metadata"],
                                                                              "resourceVersion": str(rv)}})
                objects.put(new)
                moved = [q.move_all_to_active_or_backoff(CLAIM_UPDATE, old, new, now) for q in (indexed, walking)]
                assert moved[0] == moved[1]
            case ("record", i, name) if i in current:
                old_pod, new_pod = current[i], _recorded(current[i], name)
                current[i] = new_pod
                for q in (indexed, walking):
                    q.update(old_pod, new_pod, now)
                moved = [q.move_all_to_active_or_backoff(POD_CLAIM, old_pod, new_pod, now) for q in (indexed, walking)]
                assert moved[0] == moved[1]
            case ("node",):
                moved = [q.move_all_to_active_or_backoff(NODE_ADD, None, object(), now) for q in (indexed, walking)]
                assert moved[0] == moved[1]
            case ("pod-deleted",):
                moved = [q.move_all_to_active_or_backoff(POD_DELETE, object(), None, now) for q in (indexed, walking)]
                assert moved[0] == moved[1]
            case ("requeue",):
                requeue()
        same()


def test_a_claim_event_is_offered_only_to_the_pods_that_may_use_that_claim() -> None:
    objects = InMemoryObjects()
    plugin = DynamicResources(FrameworkHandle(snapshot=Snapshot.build([], []), objects=objects), DeviceTracker())
    indexed, _ = _queues(plugin)
    waiting = [_recorded(_pod(i, None), f"claim-{i}") for i in range(50)]
    for pod in waiting:
        indexed.add_unschedulable_if_not_present(QueuedPodInfo(pod=pod, attempts=1, unschedulable_plugins={DRA}), 1.0)
    index = indexed.unschedulable.hint_index
    assert index is not None
    made = _claim("claim-7", 7, False, 5)
    assert index.candidates(CLAIM_ADD, None, made) == {"default/p7"}
    assert index.candidates(POD_DELETE, object(), None) == set()  # only NodeResourcesFit's pods care
    freed = _claim("claim-9", 9, False, 6)
    assert len(index.candidates(CLAIM_UPDATE, _claim("claim-9", 9, True, 5), freed) or ()) == 50  # deallocated
    objects.put(made)
    assert indexed.move_all_to_active_or_backoff(CLAIM_ADD, None, made, 2.0) == 1
    assert indexed.where("default/p7") in ("active", "backoff")
