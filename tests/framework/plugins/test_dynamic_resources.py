"""DynamicResources at each extension point, on typed objects in the scheduler's view:
upstream's reasons, devices chosen per node by the allocator, in-flight allocations
holding their devices, claims written at PreBind, deallocation at PostFilter."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from framework.api.dra_kinds import DeviceClass, ResourceClaim, ResourceSlice
from framework.api.objects import KubeObject, Node, Pod
from framework.cache import Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import ActionType, Code, CycleState, QueueingHint, Status
from framework.plugins.dynamicresources.dynamic_resources import DynamicResources
from framework.plugins.dynamicresources.tracker import DeviceTracker
from tests import dra_manifests as m

NODES = [Node({"metadata": {"name": "node-1"}}), Node({"metadata": {"name": "node-2"}})]


def _pod(name: str = "trainer", claim: str = "gpu-claim", uid: str = "") -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": uid or f"{name}-uid"},
                "spec": {"containers": [{"name": "c", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}],
                         "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]}})


def _claim(name: str = "gpu-claim", status: dict | None = None, rv: str = "5") -> ResourceClaim:
    raw: dict[str, Any] = m.resource_claim(name, count=1)  # as the store defaults it
    raw["metadata"].update(uid=f"{name}-uid", resourceVersion=rv)
    if status is not None:
        raw["status"] = status
    return ResourceClaim(raw)


def _world(*objects: KubeObject, gpus: int = 1, tracker: DeviceTracker | None = None,
           ) -> tuple[DynamicResources, FrameworkHandle, Snapshot]:
    snap = Snapshot.build(NODES, [])
    base: list[KubeObject] = [DeviceClass(m.device_class()), ResourceSlice(m.resource_slice("node-1", gpus=gpus))]
    handle = FrameworkHandle(snapshot=snap, objects=InMemoryObjects(base + list(objects)))
    plugin = DynamicResources.new(None, handle) if tracker is None else DynamicResources(handle, tracker)
    return plugin, handle, snap


def _filter(plugin: DynamicResources, pod: Pod, snap: Snapshot) -> tuple[CycleState, Status | None, dict]:
    state = CycleState()
    _, pre = plugin.pre_filter(state, pod, snap.list())
    if pre is not None:
        return state, pre, {}
    return state, pre, {ni.name: plugin.filter(state, pod, ni) for ni in snap.list()}


def test_a_pod_whose_claim_is_not_made_from_its_template_yet_waits_at_pre_enqueue() -> None:
    plugin, _, _ = _world()
    pod = Pod(m.pod_with_template())
    assert plugin.pre_enqueue(pod) == Status(Code.UnschedulableAndUnresolvable,
                                             'pod "default/trainer": ResourceClaim not created yet')


def test_a_pod_naming_a_missing_claim_waits_at_pre_enqueue_with_the_listers_words() -> None:
    plugin, _, _ = _world()
    assert plugin.pre_enqueue(_pod()) == Status(Code.UnschedulableAndUnresolvable,
                                                'resourceclaim.resource.k8s.io "gpu-claim" not found')


def test_a_pod_without_claims_is_skipped_at_pre_filter() -> None:
    plugin, _, snap = _world()
    pod = Pod({"metadata": {"name": "plain", "namespace": "default"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
    assert plugin.pre_filter(CycleState(), pod, snap.list())[1] == Status(Code.Skip)


def test_a_claim_whose_device_class_does_not_exist_makes_the_pod_unschedulable() -> None:
    raw = m.resource_claim("gpu-claim", count=1, class_name="tpu.example.com")
    plugin, _, snap = _world(ResourceClaim(raw))
    _, pre, _ = _filter(plugin, _pod(), snap)
    assert pre == Status(Code.UnschedulableAndUnresolvable, "request gpu: device class tpu.example.com does not exist")


def test_only_the_node_with_a_free_device_passes_filter() -> None:
    plugin, _, snap = _world(_claim())
    _, pre, per_node = _filter(plugin, _pod(), snap)
    assert pre is None
    assert per_node["node-1"] is None
    assert per_node["node-2"] == Status(Code.UnschedulableAndUnresolvable, "cannot allocate all claims")


def test_a_node_whose_only_pool_is_invalid_is_unschedulable_for_that_reason_and_other_nodes_still_fit() -> None:
    halves = [m.resource_slice("node-2", gpus=1, name=f"node-2-gpus-{i}") for i in range(2)]
    for half in halves:  # one pool of two slices that both publish gpu-0: invalid
        half["spec"]["pool"]["resourceSliceCount"] = 2
    plugin, _, snap = _world(_claim(), *[ResourceSlice(h) for h in halves], gpus=0)
    _, pre, per_node = _filter(plugin, _pod(), snap)
    assert pre is None
    assert per_node["node-2"] == Status(Code.UnschedulableAndUnresolvable, "invalid resource pools were encountered")
    assert per_node["node-1"] == Status(Code.UnschedulableAndUnresolvable, "cannot allocate all claims")


def test_a_device_attribute_without_a_value_makes_filter_an_error_naming_the_selector_and_attribute() -> None:
    broken = m.resource_slice("node-1", gpus=1, name="node-1-broken")
    broken["spec"]["pool"]["name"] = "broken"
    broken["spec"]["devices"][0]["attributes"]["flaky"] = {}
    plugin, _, snap = _world(_claim(), ResourceSlice(broken), gpus=0)
    _, pre, per_node = _filter(plugin, _pod(), snap)
    assert pre is None
    assert per_node["node-1"] is not None and per_node["node-1"].code == Code.Error
    assert "CEL runtime error: attribute flaky: unsupported attribute value" in per_node["node-1"].message()


def test_a_device_reserved_for_a_pod_in_flight_is_not_given_to_a_second_pod_until_unreserve() -> None:
    plugin, _, snap = _world(_claim("a"), _claim("b"))
    first, second = _pod("p1", "a"), _pod("p2", "b")
    state, _, _ = _filter(plugin, first, snap)
    assert plugin.reserve(state, first, "node-1") is None
    _, _, per_node = _filter(plugin, second, snap)
    assert per_node["node-1"] == Status(Code.UnschedulableAndUnresolvable, "cannot allocate all claims")
    plugin.unreserve(state, first, "node-1")
    _, _, per_node = _filter(plugin, second, snap)
    assert per_node["node-1"] is None


def test_a_claim_being_allocated_for_another_pod_keeps_a_sharing_pod_waiting() -> None:
    plugin, _, snap = _world(_claim())
    state, _, _ = _filter(plugin, _pod("p1"), snap)
    plugin.reserve(state, _pod("p1"), "node-1")
    _, pre, _ = _filter(plugin, _pod("p2"), snap)
    assert pre == Status(Code.UnschedulableAndUnresolvable,
                         "resource claim default/gpu-claim is in the process of being allocated")


def test_pre_bind_writes_the_allocation_and_the_reservation_into_the_claim_and_the_device_stays_taken() -> None:
    plugin, handle, snap = _world(_claim("a"), _claim("b"))
    pod = _pod("p1", "a")
    state, _, _ = _filter(plugin, pod, snap)
    plugin.reserve(state, pod, "node-1")
    assert asyncio.run(plugin.pre_bind(state, pod, "node-1")) is None
    written = handle.get_object("ResourceClaim", "default", "a")
    assert written.status["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": m.DRIVER, "pool": "node-1", "device": "gpu-0"}]
    assert written.status["reservedFor"] == [{"resource": "pods", "name": "p1", "uid": "p1-uid"}]
    assert written.raw["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    _, _, per_node = _filter(plugin, _pod("p2", "b"), snap)
    assert per_node["node-1"] == Status(Code.UnschedulableAndUnresolvable, "cannot allocate all claims")


def test_devices_allocated_in_stored_claims_stay_taken_for_a_scheduler_started_afresh() -> None:
    held = _claim("a", status={"allocation": m.allocation("node-1", "gpu-0"),
                               "reservedFor": [{"resource": "pods", "name": "p1", "uid": "p1-uid"}]})
    plugin, _, snap = _world(held, _claim("b"), tracker=DeviceTracker())
    _, _, per_node = _filter(plugin, _pod("p2", "b"), snap)
    assert per_node["node-1"] == Status(Code.UnschedulableAndUnresolvable, "cannot allocate all claims")


def test_an_allocated_claim_is_usable_only_on_its_node_and_post_filter_deallocates_it_when_no_one_uses_it() -> None:
    plugin, handle, snap = _world(_claim(status={"allocation": m.allocation("node-2", "gpu-0")}))
    state, pre, per_node = _filter(plugin, _pod(), snap)
    assert per_node["node-1"] == Status(Code.UnschedulableAndUnresolvable, "resourceclaim not available on the node")
    assert per_node["node-2"] is None
    _, status = plugin.post_filter(state, _pod(), None)
    assert status == Status(Code.Unschedulable, "deallocation of ResourceClaim completed")
    assert "allocation" not in handle.get_object("ResourceClaim", "default", "gpu-claim").status


def test_post_filter_leaves_a_claim_another_pod_uses() -> None:
    used = {"allocation": m.allocation("node-2", "gpu-0"),
            "reservedFor": [{"resource": "pods", "name": "other", "uid": "other-uid"}]}
    plugin, handle, snap = _world(_claim(status=used))
    state, _, _ = _filter(plugin, _pod(), snap)
    assert plugin.post_filter(state, _pod(), None)[1] == Status(Code.Unschedulable, "still not schedulable")
    assert handle.updated == []


def test_a_claim_reserved_to_its_limit_by_others_is_in_use() -> None:
    full = {"allocation": m.allocation("node-1", "gpu-0"),
            "reservedFor": [{"resource": "pods", "name": f"o{i}", "uid": f"o{i}"} for i in range(256)]}
    plugin, _, snap = _world(_claim(status=full))
    _, pre, _ = _filter(plugin, _pod(), snap)
    assert pre == Status(Code.UnschedulableAndUnresolvable, "resourceclaim in use")


@pytest.mark.parametrize(("old_status", "new_status", "claim", "hint"), [
    (None, None, "gpu-claim", QueueingHint.Queue),                       # the pod's claim appeared
    (None, None, "someone-else", QueueingHint.QueueSkip),                # another pod's claim
    ({"allocation": m.allocation()}, {}, "someone-else", QueueingHint.Queue),  # devices freed
])
def test_claim_events_wake_the_pods_they_concern(old_status, new_status, claim, hint) -> None:
    new = _claim(claim, status=new_status)
    plugin, _, _ = _world(new, _claim("gpu-claim"))
    old = None if old_status is None else _claim(claim, status=old_status)
    hints = {e.event.resource: e for e in plugin.events_to_register()}
    assert hints["ResourceClaim"].event.action == ActionType.Add | ActionType.Update
    assert hints["ResourceClaim"].hint(_pod(), old, new) == hint


def test_explain_names_per_node_the_claim_not_satisfied_and_why() -> None:
    held = _claim("held", status={"allocation": m.allocation("node-1", "gpu-0")})
    two = ResourceClaim({**m.resource_claim("two", count=2), "metadata": {"name": "two", "namespace": "default",
                                                                        "uid": "two-uid"}})
    plugin, _, snap = _world(held, _claim("a"), two, gpus=2)
    pod = Pod({**_pod("p1", "a").raw, "spec": {**_pod().raw["spec"], "resourceClaims": [
        {"name": "gpu", "resourceClaimName": "a"}, {"name": "pair", "resourceClaimName": "two"}]}})
    state, _, per_node = _filter(plugin, pod, snap)
    node_1, node_2 = snap.list()
    assert per_node["node-1"] == Status(Code.UnschedulableAndUnresolvable, "cannot allocate all claims")
    assert plugin.explain_node(state, pod, node_1) == [
        {"claim": "default/two", "why": "every device that matches is in use by other claims"}]
    assert plugin.explain_node(state, pod, node_2) == [
        {"claim": "default/a", "why": "no device on this node matches"},
        {"claim": "default/two", "why": "no device on this node matches"}]


def test_explain_says_when_claims_fit_alone_but_not_together() -> None:
    plugin, _, snap = _world(_claim("a"), _claim("b"))
    pod = Pod({**_pod("p1", "a").raw, "spec": {**_pod().raw["spec"], "resourceClaims": [
        {"name": "gpu", "resourceClaimName": "a"}, {"name": "other", "resourceClaimName": "b"}]}})
    state, _, _ = _filter(plugin, pod, snap)
    assert plugin.explain_node(state, pod, snap.list()[0]) == [
        {"claim": "default/a, default/b", "why": "each fits alone, but not all together"}]


async def test_ksched_explain_reports_the_unsatisfied_claim_under_each_node() -> None:
    from framework.explain import explain
    from framework.config import build_frameworks, load_config
    from transport.cli.describe import explain_report

    from tests.actors.helpers import node

    snap = Snapshot.build([Node(node("node-1")), Node(node("node-2"))], [])
    handle = FrameworkHandle(snapshot=snap, objects=InMemoryObjects(
        [DeviceClass(m.device_class()), ResourceSlice(m.resource_slice("node-1", gpus=1)), _claim()]))
    fwk = build_frameworks(load_config(None), handle)["default-scheduler"]
    result = await explain(fwk, _pod(), snap)
    assert result["nodes"]["node-2"]["claims"] == [{"claim": "default/gpu-claim", "why": "no device on this node matches"}]
    assert "claims" not in result["nodes"]["node-1"] and result["chosen"] == "node-1"
    report = explain_report(result)
    assert "CLAIM" in report and "NOT SATISFIED BECAUSE" in report
    assert any("default/gpu-claim" in line and "no device on this node matches" in line
               for line in report.splitlines())


def test_the_claim_hint_sees_a_claim_the_pods_newer_status_records_for_it() -> None:
    raw = m.resource_claim("trainer-gpu-x7k2p", count=1)
    raw["metadata"].update(uid="made-uid", resourceVersion="3", ownerReferences=[
        {"apiVersion": "v1", "kind": "Pod", "name": "trainer", "uid": "trainer-uid", "controller": True}])
    made = ResourceClaim(raw)
    plugin, _, _ = _world(made)
    hint = {e.event.resource: e for e in plugin.events_to_register()}["ResourceClaim"].hint
    waiting = Pod({**m.pod_with_template(), "metadata": {"name": "trainer", "namespace": "default",
                                                         "uid": "trainer-uid"}})
    assert hint(waiting, None, made) == QueueingHint.QueueSkip  # its claim not recorded yet
    recorded = Pod({**waiting.raw, "status": {"resourceClaimStatuses": [
        {"name": "gpu", "resourceClaimName": "trainer-gpu-x7k2p"}]}})
    assert hint(recorded, None, made) == QueueingHint.Queue


def test_reserve_on_the_fast_path_allocates_what_the_allocator_does_with_class_and_claim_config() -> None:
    from framework.dra.allocator import Allocator, Features
    opaque = {"opaque": {"driver": m.DRIVER, "parameters": {"mode": "exclusive"}}}
    cls = m.device_class()
    cls["spec"]["config"] = [opaque]
    raw: dict[str, Any] = m.resource_claim("gpu-claim", count=2)
    raw["metadata"].update(uid="gpu-claim-uid", resourceVersion="5")
    raw["spec"]["devices"]["config"] = [{"requests": ["gpu"], **opaque}]
    taken = _claim("taken", status={"allocation": m.allocation(device="gpu-0")})
    snap = Snapshot.build(NODES, [])
    slices = [ResourceSlice(m.resource_slice("node-1", gpus=4))]
    handle = FrameworkHandle(snapshot=snap, objects=InMemoryObjects([DeviceClass(cls), *slices, taken, ResourceClaim(raw)]))
    plugin = DynamicResources.new(None, handle)
    state = CycleState()
    assert plugin.pre_filter(state, _pod(), snap.list())[1] is None
    assert plugin.filter_nodes(state, _pod(), snap.list())[0] is None  # node-1, by count
    assert plugin.reserve(state, _pod(), "node-1") is None
    expected = Allocator(features=Features(), classes={"gpu.example.com": cls}, slices=[sl.raw for sl in slices],
                         allocated=frozenset({f"{m.DRIVER}/node-1/gpu-0"})).allocate(NODES[0].raw, [raw])
    assert state.read("DynamicResources").allocated_here[0] == expected[0]
    assert [r["device"] for r in expected[0]["devices"]["results"]] == ["gpu-1", "gpu-2"]
    assert [c["source"] for c in expected[0]["devices"]["config"]] == ["FromClass", "FromClaim"]


def test_score_prefers_the_node_whose_allocation_takes_the_earlier_first_available_choice() -> None:
    raw = m.resource_claim("gpu-claim", count=1)
    raw["metadata"].update(uid="gpu-claim-uid", resourceVersion="5")
    raw["spec"]["devices"]["requests"] = [{"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu.example.com", "count": 2, "allocationMode": "ExactCount"},
        {"name": "small", "deviceClassName": "gpu.example.com", "count": 1, "allocationMode": "ExactCount"}]}]
    plugin, _, snap = _world(ResourceClaim(raw), ResourceSlice(m.resource_slice("node-2", gpus=1)), gpus=2)
    state, pre, per_node = _filter(plugin, _pod(), snap)
    assert per_node == {"node-1": None, "node-2": None}
    scores, status = plugin.score_nodes(state, _pod(), snap.list())
    assert status is None and scores == [8, 7]  # 8 - the chosen subrequest's position
    plain, _, snap = _world(_claim())
    state, _, _ = _filter(plain, _pod(), snap)
    zeros, status = plain.score_nodes(state, _pod(), snap.list())
    assert status is None and zeros.tolist() == [0, 0] and zeros.strides == (0,)  # no claim: one zero, read-only
    assert not zeros.flags.writeable


def test_filter_gives_up_on_a_node_once_its_filter_timeout_has_passed() -> None:
    ticks = iter(range(10**6))
    two = _claim()  # two requests: the allocator searches (one plain request is only counted)
    two.raw["spec"]["devices"]["requests"].append(dict(two.raw["spec"]["devices"]["requests"][0], name="gpu2"))
    slow = FrameworkHandle(snapshot=Snapshot.build(NODES, []), clock=lambda: float(next(ticks)),
                           objects=InMemoryObjects([DeviceClass(m.device_class()), ResourceClaim(two.raw),
                                                    ResourceSlice(m.resource_slice("node-1", gpus=2))]))
    in_time = DynamicResources.new({"filterTimeout": "1h"}, slow)
    assert _filter(in_time, _pod(), slow.snapshot())[2]["node-1"] is None
    late = DynamicResources.new({"filterTimeout": "500ms"}, slow)  # each clock reading is a second later
    state, _, per_node = _filter(late, _pod(), slow.snapshot())
    assert per_node["node-1"] == Status(Code.UnschedulableAndUnresolvable, "timed out trying to allocate devices")
    unlimited = DynamicResources.new({"filterTimeout": "0s"}, slow)
    assert _filter(unlimited, _pod(), slow.snapshot())[2]["node-1"] is None


@pytest.mark.parametrize(("args", "message"), [
    ({"filterTimeout": "-1s"}, 'filterTimeout: Invalid value: "-1s": must be zero or positive'),
    ({"filterTimeout": "soon"}, 'filterTimeout: Invalid value: "soon": must be a duration such as "5s" or "1m30s"'),
    ({"bindingTimeout": "600s"}, "bindingTimeout: Forbidden: DRADeviceBindingConditions or "
                                 "DRAResourceClaimDeviceStatus feature gate is disabled"),
    ({"filterTimeot": "1s"}, "filterTimeot: unknown field"),
])
def test_dynamic_resources_args_are_checked_as_upstream_checks_them(args, message) -> None:
    with pytest.raises(ValueError) as e:
        DynamicResources.new(args, FrameworkHandle())
    assert str(e.value) == message


def test_binding_a_second_pod_to_a_shared_claim_keeps_the_device_status_its_driver_wrote() -> None:
    device_status = [{"driver": m.DRIVER, "pool": "node-1", "device": "gpu-0",
                      "conditions": [{"type": "Ready", "status": "True", "reason": "Prepared", "message": "",
                                      "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]
    shared = _claim(status={"allocation": m.allocation("node-1", "gpu-0"), "devices": device_status,
                            "reservedFor": [{"resource": "pods", "name": "p1", "uid": "p1-uid"}]})
    plugin, handle, snap = _world(shared)
    pod = _pod("p2")
    state, _, per_node = _filter(plugin, pod, snap)
    assert per_node["node-1"] is None and plugin.reserve(state, pod, "node-1") is None
    assert asyncio.run(plugin.pre_bind(state, pod, "node-1")) is None
    written = handle.get_object("ResourceClaim", "default", "gpu-claim")
    assert [r["name"] for r in written.status["reservedFor"]] == ["p1", "p2"]
    assert written.status["devices"] == device_status
    plugin.unreserve(state, pod, "node-1")
    assert handle.get_object("ResourceClaim", "default", "gpu-claim").status["devices"] == device_status
