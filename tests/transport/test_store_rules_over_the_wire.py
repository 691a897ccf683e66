"""kube-apiserver's write-path rules, seen by a real client over loopback: priority
admission, immutable pod specs, selector parsing, name validation, ordered apply."""
from __future__ import annotations

import pytest

from transport.client.tcp import Client
from transport.protocol.wire import ApiError, Reason

from tests.transport.conftest import node, pod


async def test_a_pod_naming_a_priority_class_gets_its_value_and_a_missing_class_is_invalid(daemon):
    gold = {"kind": "PriorityClass", "metadata": {"name": "gold"}, "value": 1000}
    with_class = pod("p1")
    with_class["spec"]["priorityClassName"] = "gold"
    missing = pod("p2")
    missing["spec"]["priorityClassName"] = "silver"
    async with await Client.connect(daemon.address) as c:
        items = await c.apply([gold, with_class])
        with pytest.raises(ApiError) as err:
            await c.create(missing)
    assert items[1]["spec"]["priority"] == 1000
    assert err.value.reason == Reason.INVALID
    assert err.value.message == "spec.priorityClassName: no PriorityClass with name silver was found"


async def test_re_applying_a_pod_with_bigger_requests_is_invalid_and_changes_nothing(daemon):
    async with await Client.connect(daemon.address) as c:
        await c.apply([pod("p", cpu="1")])
        with pytest.raises(ApiError) as err:
            await c.apply([pod("p", cpu="2")])
        stored = await c.get("Pod", "p")
    assert err.value.reason == Reason.INVALID
    assert "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`" in \
        err.value.message
    assert stored["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1"


async def test_a_bad_label_selector_is_invalid_instead_of_listing_everything(daemon):
    async with await Client.connect(daemon.address) as c:
        await c.apply([pod("p1"), pod("p2", labels={"app": "web"})])
        with pytest.raises(ApiError) as err:
            await c.list("Pod", label_selector="!!!")
        web, _ = await c.list("Pod", label_selector="app in (web)")
    assert err.value.reason == Reason.INVALID
    assert err.value.message == "labelSelector: unable to parse requirement: found '!', expected: identifier"
    assert [p["metadata"]["name"] for p in web] == ["p2"]


async def test_a_bad_name_is_invalid_naming_the_field(daemon):
    async with await Client.connect(daemon.address) as c:
        with pytest.raises(ApiError) as err:
            await c.create(node("Node_1"))
    assert err.value.reason == Reason.INVALID
    assert err.value.message.startswith('metadata.name: Invalid value: "Node_1": a lowercase RFC 1123 subdomain')


async def test_the_same_object_twice_in_one_apply_is_reported_once_as_created(daemon):
    async with await Client.connect(daemon.address) as c:
        result = await c.request("apply", objects=[pod("p"), pod("p", labels={"app": "web"})])
    assert result["actions"] == ["created", "configured"]


async def test_kueue_v1beta1_manifests_apply_over_the_wire_and_are_kept_in_v1beta2(daemon):
    v1 = "kueue.x-k8s.io/v1beta1"
    flavor = {"apiVersion": v1, "kind": "ResourceFlavor", "metadata": {"name": "default-flavor"}}
    cq = {"apiVersion": v1, "kind": "ClusterQueue", "metadata": {"name": "cluster-queue"},
          "spec": {"cohort": "team", "namespaceSelector": {}, "resourceGroups": [
              {"coveredResources": ["cpu"], "flavors": [{"name": "default-flavor",
                                                         "resources": [{"name": "cpu", "nominalQuota": 9}]}]}]}}
    async with await Client.connect(daemon.address) as c:
        await c.apply([flavor, cq])
        stored = await c.get("ClusterQueue", "cluster-queue")
        again = await c.apply([cq])  # the same v1beta1 manifest again changes nothing
    assert stored["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert stored["spec"]["cohortName"] == "team" and "cohort" not in stored["spec"]
    assert again[0]["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]


async def test_a_misspelled_kueue_field_is_refused_over_the_wire_under_strict(daemon):
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "cq"},
          "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
              {"name": "f", "resources": [{"name": "cpu", "nominalQuota": 9, "borowingLimit": 1}]}]}]}}
    async with await Client.connect(daemon.address) as c:
        with pytest.raises(ApiError) as err:
            await c.apply([cq], field_validation="Strict")
        listed, _ = await c.list("ClusterQueue")
    assert err.value.reason == Reason.BAD_REQUEST
    assert err.value.message.endswith(
        'unknown field "spec.resourceGroups[0].flavors[0].resources[0].borowingLimit"')
    assert listed == []


async def test_an_object_with_finalizers_is_marked_on_delete_and_goes_with_its_last_finalizer(daemon):
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "value": 5,
          "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    async with await Client.connect(daemon.address) as c:
        await c.create(pc)
        marked = await c.delete("PriorityClass", "held")
        again = await c.delete("PriorityClass", "held")  # already marked: nothing changes
        kept = await c.get("PriorityClass", "held")
        with pytest.raises(ApiError) as err:
            await c.apply([{**kept, "metadata": {**kept["metadata"], "finalizers": ["example.com/hold", "b/c"]}}])
        await c.apply([{**kept, "metadata": {**kept["metadata"], "finalizers": []}}])
        with pytest.raises(ApiError) as gone:
            await c.get("PriorityClass", "held")
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["deletionGracePeriodSeconds"] == 0
    assert again["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]
    assert err.value.reason == Reason.INVALID and err.value.message == (
        'objects[0] (PriorityClass held): metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, '
        'found new finalizers []string{"b/c"}')
    assert gone.value.reason == Reason.NOT_FOUND
