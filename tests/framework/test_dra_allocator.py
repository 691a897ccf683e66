"""The structured allocator (framework/dra/allocator.py) on resource.k8s.io/v1 objects."""
import pytest

from framework.dra.allocator import AllocationError, Allocator, Features

NODE = {"metadata": {"name": "node-1", "labels": {"zone": "a"}}}
GPU_CLASS = {"metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}


def gpu_slice(names, node="node-1", pool="pool-1", numa=None, generation=1, count=1):
    devices = [{"name": n, "attributes": {"numa": {"int": (numa or {}).get(n, 0)}}} for n in names]
    return {"metadata": {"name": f"{pool}-{node}"},
            "spec": {"driver": "gpu.example.com", "nodeName": node, "devices": devices,
                     "pool": {"name": pool, "generation": generation, "resourceSliceCount": count}}}


def claim(name, *requests, constraints=None):
    devices = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": name}, "spec": {"devices": devices}}


def exactly(name, count=1, mode="ExactCount", **extra):
    return {"name": name, "exactly": {"deviceClassName": "gpu", "allocationMode": mode, "count": count, **extra}}


def devices_of(result):
    return sorted(r["device"] for r in result["devices"]["results"])


def allocator(*slices, allocated=(), features=Features()):
    return Allocator(features=features, classes={"gpu": GPU_CLASS}, slices=list(slices), allocated=set(allocated))


def test_claims_allocated_together_never_share_a_device():
    a = allocator(gpu_slice(["g0", "g1", "g2"]))
    results = a.allocate(NODE, [claim("c1", exactly("r", 2)), claim("c2", exactly("r", 1))])
    assert devices_of(results[0]) + devices_of(results[1]) == ["g0", "g1", "g2"]
    assert a.allocate(NODE, [claim("c1", exactly("r", 2)), claim("c2", exactly("r", 2))]) == []


def test_devices_in_use_are_skipped_unless_the_request_asks_for_admin_access():
    a = allocator(gpu_slice(["g0"]), allocated={"gpu.example.com/pool-1/g0"})
    assert a.allocate(NODE, [claim("c", exactly("r"))]) == []
    [result] = a.allocate(NODE, [claim("c", exactly("r", adminAccess=True))])
    assert result["devices"]["results"] == [
        {"request": "r", "driver": "gpu.example.com", "pool": "pool-1", "device": "g0", "adminAccess": True}]


def test_a_match_attribute_constraint_backtracks_to_devices_with_one_value():
    a = allocator(gpu_slice(["g0", "g1", "g2"], numa={"g0": 0, "g1": 1, "g2": 1}))
    [result] = a.allocate(NODE, [claim("c", exactly("r", 2),
                                       constraints=[{"matchAttribute": "gpu.example.com/numa"}])])
    assert devices_of(result) == ["g1", "g2"]
    assert result["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["node-1"]


def test_first_available_takes_the_first_subrequest_that_fits():
    a = allocator(gpu_slice(["g0", "g1"]))
    request = {"name": "r", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 4},
        {"name": "small", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 2}]}
    [result] = a.allocate(NODE, [claim("c", request)])
    assert {r["request"] for r in result["devices"]["results"]} == {"r/small"}


def test_a_slice_for_another_node_offers_nothing_here():
    assert allocator(gpu_slice(["g0"], node="node-2")).allocate(NODE, [claim("c", exactly("r"))]) == []


def test_all_mode_refuses_a_pool_that_is_being_updated():
    a = allocator(gpu_slice(["g0"], count=2))
    with pytest.raises(AllocationError, match="asks for all devices, but resource pool gpu.example.com/pool-1 "
                                              "is currently being updated"):
        a.allocate(NODE, [claim("c", exactly("r", 0, mode="All"))])


def test_more_than_32_devices_in_one_claim_is_an_error():
    a = allocator(gpu_slice([f"g{i}" for i in range(40)]))
    with pytest.raises(AllocationError, match="number of requested devices 33 exceeds the claim limit of 32"):
        a.allocate(NODE, [claim("c", exactly("r", 33))])


def test_a_selector_that_fails_on_a_device_is_an_error_naming_it():
    bad = exactly("r", selectors=[{"cel": {"expression": 'device.attributes["gpu.example.com"].speed > 1'}}])
    with pytest.raises(AllocationError, match="claim c: selector #0: "
                                              "CEL runtime error: no such key: speed"):
        allocator(gpu_slice(["g0"])).allocate(NODE, [claim("c", bad)])


def shared_gpu(memory="40Gi", policy=None):
    s = gpu_slice(["g0"])
    s["spec"]["devices"][0].update(allowMultipleAllocations=True,
                                   capacity={"memory": dict({"value": memory}, **({"requestPolicy": policy} if policy else {}))})
    return s


def share(name, memory=None):
    extra = {"capacity": {"requests": {"memory": memory}}} if memory else {}
    return claim(name, exactly("r", **extra))


def test_with_consumable_capacity_a_shared_device_is_given_out_in_shares_until_its_capacity_is_used():
    a = allocator(shared_gpu(), features=Features(consumable_capacity=True))
    results = a.allocate(NODE, [share("a", "16Gi"), share("b", "16Gi")])
    entries = [r["devices"]["results"][0] for r in results]
    assert [e["device"] for e in entries] == ["g0", "g0"]
    assert [e["consumedCapacity"] for e in entries] == [{"memory": "16Gi"}] * 2
    assert entries[0]["shareID"] != entries[1]["shareID"]
    assert a.allocate(NODE, [share("a", "16Gi"), share("b", "16Gi"), share("c", "16Gi")]) == []
    used = Allocator(features=Features(consumable_capacity=True), classes={"gpu": GPU_CLASS}, slices=[shared_gpu()],
                     allocated=set(), aggregated_capacity={"gpu.example.com/pool-1/g0": {"memory": 30 * 2**30}})
    assert used.allocate(NODE, [share("a", "16Gi")]) == []


def test_a_capacity_request_is_rounded_up_to_the_devices_request_policy():
    policy = {"default": "8Gi", "validRange": {"min": "8Gi", "step": "8Gi", "max": "32Gi"}}
    a = allocator(shared_gpu(policy=policy), features=Features(consumable_capacity=True))
    consumed = a.allocate(NODE, [share("a", "9Gi")])[0]["devices"]["results"][0]["consumedCapacity"]
    assert consumed == {"memory": "16Gi"}
    assert a.allocate(NODE, [share("a")])[0]["devices"]["results"][0]["consumedCapacity"] == {"memory": "8Gi"}


def test_without_the_consumable_capacity_gate_a_shared_device_is_taken_whole():
    a = allocator(shared_gpu())
    results = a.allocate(NODE, [claim("a", exactly("r")), claim("b", exactly("r"))])
    assert results == []
    assert "shareID" not in a.allocate(NODE, [claim("a", exactly("r"))])[0]["devices"]["results"][0]


def test_a_device_attribute_without_a_value_is_a_selector_error():
    s = gpu_slice(["g0"])
    s["spec"]["devices"][0]["attributes"]["broken"] = {}
    with pytest.raises(AllocationError, match="class gpu: selector #0: CEL runtime error: "
                                              "attribute broken: unsupported attribute value"):
        allocator(s).allocate(NODE, [claim("c", exactly("r"))])


def tainted_slice(*taints_per_device):
    s = gpu_slice([f"g{i}" for i in range(len(taints_per_device))])
    for device, taints in zip(s["spec"]["devices"], taints_per_device):
        device["taints"] = list(taints)
    return s


NO_SCHEDULE = {"key": "broken", "value": "fan", "effect": "NoSchedule"}


def test_with_device_taints_on_a_tainted_device_goes_only_to_a_request_that_tolerates_it():
    taints = Features(device_taints=True)
    a = allocator(tainted_slice([NO_SCHEDULE], [{"key": "note", "effect": "None"}]), features=taints)
    assert devices_of(a.allocate(NODE, [claim("c", exactly("r"))])[0]) == ["g1"]
    assert a.allocate(NODE, [claim("c", exactly("r", 2))]) == []
    tolerate = {"key": "broken", "operator": "Exists", "effect": "NoSchedule"}
    result = a.allocate(NODE, [claim("c", exactly("r", 2, tolerations=[tolerate]))])[0]
    assert devices_of(result) == ["g0", "g1"]
    assert [r["tolerations"] for r in result["devices"]["results"]] == [[tolerate], [tolerate]]


def test_without_the_device_taints_gate_taints_are_ignored():
    a = allocator(tainted_slice([NO_SCHEDULE]))
    assert devices_of(a.allocate(NODE, [claim("c", exactly("r"))])[0]) == ["g0"]


def test_with_binding_conditions_the_result_carries_the_devices_conditions_and_binds_to_the_node():
    s = gpu_slice(["g0"])
    device = s["spec"]["devices"][0]
    device.update(bindingConditions=["Attached"], bindingFailureConditions=["AttachFailed"], bindsToNode=True)
    del s["spec"]["nodeName"]
    s["spec"]["allNodes"] = True
    assert allocator(s).allocate(NODE, [claim("c", exactly("r"))]) == []  # gate off: such a device is never taken
    result = allocator(s, features=Features(binding_conditions=True)).allocate(NODE, [claim("c", exactly("r"))])[0]
    assert result["devices"]["results"][0]["bindingConditions"] == ["Attached"]
    assert result["devices"]["results"][0]["bindingFailureConditions"] == ["AttachFailed"]
    assert result["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}


def test_with_binding_conditions_on_and_consumable_capacity_off_a_capacity_request_is_an_error():
    with pytest.raises(AllocationError, match="claim c, request r: has capacity requests, but the "
                                              "DRAConsumableCapacity feature is disabled"):
        allocator(gpu_slice(["g0"]), features=Features(binding_conditions=True)).allocate(
            NODE, [claim("c", exactly("r", capacity={"requests": {"memory": "1Gi"}}))])


def partitioned_pool(memory="8Gi", parts=("4Gi", "6Gi", "4Gi")):
    """A GPU published as partitions sharing one counter set (two slices of one pool)."""
    devices = gpu_slice([f"part{i}" for i in range(len(parts))], count=2)
    for d, amount in zip(devices["spec"]["devices"], parts):
        d["consumesCounters"] = [{"counterSet": "gpu-0", "counters": {"memory": {"value": amount}}}]
    counters = gpu_slice([], count=2)
    counters["metadata"]["name"] = "counters"
    del counters["spec"]["devices"]
    counters["spec"]["sharedCounters"] = [{"name": "gpu-0", "counters": {"memory": {"value": memory}}}]
    return devices, counters


def test_with_partitionable_devices_partitions_are_taken_only_while_their_shared_counters_last():
    part = Features(partitionable_devices=True)
    a = allocator(*partitioned_pool(), features=part)
    assert devices_of(a.allocate(NODE, [claim("c", exactly("r", 2))])[0]) == ["part0", "part2"]  # 4Gi + 4Gi
    assert a.allocate(NODE, [claim("c", exactly("r", 3))]) == []
    taken = allocator(*partitioned_pool(), allocated={"gpu.example.com/pool-1/part1"}, features=part)
    assert taken.allocate(NODE, [claim("c", exactly("r", 1))]) == []  # 6Gi of 8Gi used, each other part needs 4Gi


def test_without_the_gate_counter_slices_are_ignored_and_consuming_devices_never_taken():
    a = allocator(*partitioned_pool())
    assert a.allocate(NODE, [claim("c", exactly("r"))]) == []


def test_a_pool_whose_device_consumes_an_unknown_counter_set_is_invalid():
    devices, counters = partitioned_pool()
    devices["spec"]["devices"][0]["consumesCounters"][0]["counterSet"] = "gpu-9"
    with pytest.raises(AllocationError, match="invalid resource pools were encountered"):
        allocator(devices, counters, features=Features(partitionable_devices=True)).allocate(
            NODE, [claim("c", exactly("r"))])
