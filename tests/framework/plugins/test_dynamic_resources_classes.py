"""DynamicResources' PreFilter check of a claim's device classes: upstream's first
refusal in request order (a missing class, a request type it cannot read, subrequests
with DRAPrioritizedList off, a request without a class), each naming its own claim, read
once per claim spec object while a class's existence is asked every time."""
from __future__ import annotations

from typing import Any

from framework.api.dra_kinds import DeviceClass, ResourceClaim, ResourceSlice
from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.dra.allocator import Features
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, Status
from framework.plugins.dynamicresources.classes import ClassCheck
from framework.plugins.dynamicresources.dynamic_resources import DynamicResources
from tests import dra_manifests as m

GPU = "gpu.example.com"


def _claim(name: str, requests: list[dict[str, Any]]) -> ResourceClaim:
    return ResourceClaim({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                          "metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid"},
                          "spec": {"devices": {"requests": requests}}})


def _exactly(name: str, cls: str | None) -> dict[str, Any]:
    return {"name": name, "exactly": {} if cls is None else {"deviceClassName": cls}}


def _first(name: str, *subs: tuple[str, str | None]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": [{"name": n, **({} if c is None else {"deviceClassName": c})}
                                             for n, c in subs]}


def _check(classes: set[str], prioritized_list: bool = True) -> ClassCheck:
    return ClassCheck(lambda name: name in classes, prioritized_list)


def _unschedulable(message: str) -> Status:
    return Status(Code.UnschedulableAndUnresolvable, message)


def test_a_missing_class_of_an_earlier_request_is_named_before_a_later_requests_refusal() -> None:
    check = _check({GPU}, prioritized_list=False)
    claim = _claim("c", [_exactly("a", "tpu"), _first("b", ("s", GPU))])
    assert check.check(claim) == _unschedulable("request a: device class tpu does not exist")
    claim = _claim("c", [_exactly("a", GPU), _first("b", ("s", GPU))])
    assert check.check(claim) == _unschedulable(
        "resource claim default/c, request b: has subrequests, but the DRAPrioritizedList feature is disabled")


def test_an_unknown_request_type_and_a_subrequest_without_a_class_are_refused_in_order() -> None:
    check = _check({GPU})
    assert check.check(_claim("c", [_exactly("a", GPU), {"name": "b"}])) == _unschedulable(
        "resource claim default/c, request b: unknown request type")
    assert check.check(_claim("c", [_first("b", ("s1", "tpu"), ("s2", None))])) == _unschedulable(
        "request b/s1: device class tpu does not exist")
    assert check.check(_claim("c", [_first("b", ("s1", GPU), ("s2", None))])) == Status.error_of(
        "request b/s2: unsupported request type", "DynamicResources")
    assert check.check(_claim("c", [_exactly("a", None)])) == Status.error_of(
        "request a: unsupported request type", "DynamicResources")


def test_claims_sharing_one_spec_are_each_named_and_a_class_made_later_is_seen() -> None:
    classes: set[str] = set()
    check = _check(classes)
    first = _claim("one", [_exactly("a", GPU), {"name": "b"}])
    second = ResourceClaim({**first.raw, "metadata": {**first.raw["metadata"], "name": "two"}})
    assert second.spec is first.spec
    assert check.check(first) == _unschedulable(f"request a: device class {GPU} does not exist")
    classes.add(GPU)
    assert check.check(first) == _unschedulable("resource claim default/one, request b: unknown request type")
    assert check.check(second) == _unschedulable("resource claim default/two, request b: unknown request type")


def test_the_plugin_asks_its_view_for_each_class_at_every_pre_filter() -> None:
    claim = ResourceClaim({**m.resource_claim("gpu-claim", count=1), "metadata": {
        "name": "gpu-claim", "namespace": "default", "uid": "gpu-claim-uid", "resourceVersion": "5"}})
    objects = InMemoryObjects([claim])
    snap = Snapshot.build([Node({"metadata": {"name": "node-1"}})], [])
    plugin = DynamicResources(FrameworkHandle(snapshot=snap, objects=objects), features=Features())
    pod = Pod({"metadata": {"name": "p", "namespace": "default", "uid": "p-uid"},
               "spec": {"containers": [{"name": "c", "image": "x"}],
                        "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]}})
    request = claim.spec["devices"]["requests"][0]["name"]
    class_name = claim.spec["devices"]["requests"][0]["exactly"]["deviceClassName"]
    assert plugin.pre_filter(CycleState(), pod, snap.list())[1] == _unschedulable(
        f"request {request}: device class {class_name} does not exist")
    objects.put(DeviceClass(m.device_class()))
    assert plugin.pre_filter(CycleState(), pod, snap.list())[1] is None


def test_a_class_changed_or_removed_between_two_pods_is_what_the_next_pods_filter_reads() -> None:
    claim = ResourceClaim({**m.resource_claim("gpu-claim", count=1), "metadata": {
        "name": "gpu-claim", "namespace": "default", "uid": "gpu-claim-uid", "resourceVersion": "5"}})
    objects = InMemoryObjects([claim, ResourceSlice(m.resource_slice()),
                               DeviceClass(m.device_class(expression='device.driver == "other.example.com"'))])
    snap = Snapshot.build([Node({"metadata": {"name": "node-1"}})], [])
    plugin = DynamicResources(FrameworkHandle(snapshot=snap, objects=objects), features=Features())
    pod = Pod({"metadata": {"name": "p", "namespace": "default", "uid": "p-uid"},
               "spec": {"containers": [{"name": "c", "image": "x"}],
                        "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]}})
    [node] = snap.list()

    def filtered() -> Status | None:
        state = CycleState()
        assert plugin.pre_filter(state, pod, snap.list())[1] is None
        return plugin.filter(state, pod, node)

    assert filtered() is not None  # the class selects no device of the slice
    assert filtered() is not None  # (read again from what it kept: the same answer)
    objects.put(DeviceClass(m.device_class()))  # now it selects the slice's GPUs
    assert filtered() is None
    objects.put(DeviceClass(m.device_class(expression='device.driver == "other.example.com"')))
    assert filtered() is not None
    objects.delete("DeviceClass", DeviceClass(m.device_class()).key)
    assert plugin.pre_filter(CycleState(), pod, snap.list())[1] is not None  # a missing class: refused
