"""DefaultSelectors: the pod's default selector kept while what it reads stays."""
from framework.api.objects import Pod, PodGroup, ReplicaSet, Service
from framework.cache import Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import CycleState
from framework.plugins.selectorspread.selector_spread import (PRE_SCORE_STATE_KEY, DefaultSelectors, SelectorSpread,
                                                              default_selector)

WEB = {"app": "web"}
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True}


def pod(name: str) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "labels": dict(WEB), "ownerReferences": [OWNER]},
                "spec": {"containers": []}})


def replica_set(labels: dict) -> ReplicaSet:
    return ReplicaSet({"metadata": {"name": "rs", "namespace": "default"}, "spec": {"selector": {"matchLabels": labels}}})


def pod_group(name: str) -> PodGroup:
    return PodGroup({"metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": 2}})


def handle_with(*objects) -> tuple[FrameworkHandle, InMemoryObjects]:
    lister = InMemoryObjects(list(objects))
    return FrameworkHandle(snapshot=Snapshot.build([], []), objects=lister), lister


def test_a_change_of_a_kind_the_selector_does_not_read_keeps_the_selector_made_before_it():
    handle, lister = handle_with(replica_set(WEB))
    selectors = DefaultSelectors()
    first = selectors.of(pod("p1"), handle)
    lister.put(pod_group("g1"))  # moves the lister's revision; no Service, RC, RS or StatefulSet changed
    assert selectors.of(pod("p2"), handle) is first


def test_a_replica_set_changed_after_another_kind_moved_the_revision_gives_the_new_selector():
    handle, lister = handle_with(replica_set(WEB))
    selectors = DefaultSelectors()
    selectors.of(pod("p1"), handle)
    lister.put(pod_group("g1"))
    selectors.of(pod("p2"), handle)
    lister.put(replica_set({"app": "web", "tier": "front"}))
    got = selectors.of(pod("p3"), handle)
    assert got.requirements == default_selector(pod("p3"), handle).requirements
    assert got.matches({"app": "web"}) is False


def test_selector_spread_sees_a_service_added_between_two_pods_of_one_template():
    handle, lister = handle_with(replica_set(WEB))
    plugin = SelectorSpread(handle)
    state = CycleState()
    plugin.pre_score(state, pod("p1"), [])
    assert state.get(PRE_SCORE_STATE_KEY).selector.matches({"app": "web"}) is True
    lister.put(pod_group("g1"))
    plugin.pre_score(state, pod("p2"), [])
    lister.put(Service({"metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}))
    lister.put(pod_group("g2"))
    plugin.pre_score(state, pod("p3"), [])
    # The Service selects the pod: its selector joins the RS's.
    got = state.get(PRE_SCORE_STATE_KEY).selector
    assert got.requirements == default_selector(pod("p3"), handle).requirements
    assert len(got.requirements) == 2
