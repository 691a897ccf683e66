"""scheduling.k8s.io/v1alpha2 Workload and PodGroup in the store: keyed by group
beside Kueue's Workload and Coscheduling's PodGroup of the same names, validated
with upstream's rules, immutable where upstream is, kept across a restart, and
refused (or, for Pod.spec.schedulingGroup, dropped) while their gates are off."""
from __future__ import annotations

import pytest

from actors.store import Store
from actors.store.messages import BadRequest, Invalid, NotFound
from actors.store.sqlite import SQLiteBackend
from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY
from framework.features import FeatureGates
from tests.actors.store_helpers import pod, running, serving

V1A2 = "scheduling.k8s.io/v1alpha2"


def workload(name: str = "training", **template: object) -> dict:
    t = {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}, **template}
    return {"apiVersion": V1A2, "kind": "Workload", "metadata": {"name": name, "namespace": "default"},
            "spec": {"podGroupTemplates": [t]}}


def pod_group(name: str = "training", min_count: int = 4, **spec: object) -> dict:
    return {"apiVersion": V1A2, "kind": "PodGroup", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, **spec}}


def kueue_workload(name: str = "training") -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def coscheduling_group(name: str = "training") -> dict:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": 2}}


async def test_a_workload_and_a_pod_group_of_each_group_with_the_same_name_are_four_objects(tmp_path) -> None:
    path = str(tmp_path / "s.db")
    async with running(SQLiteBackend(path)) as (store, client):
        for obj in (workload(), pod_group(), kueue_workload(), coscheduling_group()):
            await client.create(obj, field_validation="Strict")
        assert [o["apiVersion"] for o in (await client.list(WORKLOAD_KEY))[0]] == [V1A2]
        assert [o["apiVersion"] for o in (await client.list("Workload"))[0]] == ["kueue.x-k8s.io/v1beta2"]
        assert [o["apiVersion"] for o in (await client.list(POD_GROUP_KEY))[0]] == [V1A2]
        assert [o["apiVersion"] for o in (await client.list("PodGroup"))[0]] == ["scheduling.x-k8s.io/v1alpha1"]
        await client.delete(WORKLOAD_KEY, "default", "training")
        assert (await client.list("Workload"))[0] and not (await client.list(WORKLOAD_KEY))[0]
    reloaded = Store(SQLiteBackend(path))
    await reloaded.load()
    group = reloaded.peek(POD_GROUP_KEY, "default", "training")
    assert group is not None and group.min_count == 4 and reloaded.peek("PodGroup", "default", "training") is not None
    assert reloaded.peek(WORKLOAD_KEY, "default", "training") is None
    await reloaded.close()


@pytest.mark.parametrize("obj, field, message", [
    (pod_group(min_count=0), "spec.schedulingPolicy.gang.minCount", "must be greater than or equal to 1"),
    ({**pod_group(), "spec": {"schedulingPolicy": {"basic": {}, "gang": {"minCount": 2}}}}, "spec.schedulingPolicy",
     "must specify exactly one of: `basic`, `gang`"),
    (pod_group(schedulingConstraints={"topology": [{"key": "a"}, {"key": "b"}]}), "spec.schedulingConstraints.topology",
     "Too many: 2: must have at most 1 items"),
    (pod_group(schedulingConstraints={"topology": [{"key": "not a key!"}]}),
     "spec.schedulingConstraints.topology[0].key", "Invalid value"),
    (workload(name="w", schedulingPolicy={}), "spec.podGroupTemplates[0].schedulingPolicy", "Required value"),
    ({**workload(), "spec": {"podGroupTemplates": [
        {"name": f"t{i}", "schedulingPolicy": {"basic": {}}} for i in range(9)]}},
     "spec.podGroupTemplates", "Too many: 9: must have at most 8 items"),
    ({**workload(), "spec": {}}, "spec.podGroupTemplates", "Required value"),
])
async def test_a_bad_workload_or_pod_group_is_invalid_naming_the_field_and_nothing_is_stored(obj, field, message) -> None:
    async with running() as (store, client):
        with pytest.raises(Invalid) as err:
            await client.create(obj, field_validation="Strict")
        assert err.value.field == field and message in err.value.message
        assert not (await client.list(POD_GROUP_KEY))[0] and not (await client.list(WORKLOAD_KEY))[0]


async def test_a_pod_group_from_another_api_version_of_scheduling_k8s_io_is_a_bad_request() -> None:
    async with running() as (store, client):
        with pytest.raises(BadRequest, match=r"does not match the expected API version \(scheduling.k8s.io/v1alpha2\)"):
            await client.create({**pod_group(), "apiVersion": "scheduling.k8s.io/v1alpha1"}, field_validation="Strict")


@pytest.mark.parametrize("obj, change, field", [
    (pod_group(), {"schedulingPolicy": {"gang": {"minCount": 5}}}, "spec.schedulingPolicy"),
    (pod_group(), {"schedulingConstraints": {"topology": [{"key": "rack"}]}}, "spec.schedulingConstraints"),
    (workload(), {"podGroupTemplates": [{"name": "w2", "schedulingPolicy": {"basic": {}}}]}, "spec.podGroupTemplates"),
])
async def test_the_spec_fields_upstream_makes_immutable_cannot_change(obj, change, field) -> None:
    async with running() as (store, client):
        made = await client.create(obj, field_validation="Strict")
        with pytest.raises(Invalid) as err:
            await client.update({**made, "spec": {**made["spec"], **change}}, field_validation="Strict")
        assert err.value.field == field and "field is immutable" in err.value.message


async def test_a_pod_keeps_its_scheduling_group_and_the_pod_reads_it() -> None:
    async with running() as (store, client):
        await client.create({**pod("p", schedulingGroup={"podGroupName": "training"}), "apiVersion": "v1"},
                            field_validation="Strict")
        assert store.peek("Pod", "default", "p").scheduling_group == "training"


async def test_with_generic_workload_off_the_kinds_are_not_served_and_a_pods_scheduling_group_is_dropped() -> None:
    store = Store()
    store.features = FeatureGates({"GenericWorkload": False})
    async with serving(store) as (_, client):
        for obj in (workload(), pod_group()):
            with pytest.raises(NotFound, match="GenericWorkload feature gate is off"):
                await client.create(obj, field_validation="Strict")
        made = await client.create({**pod("p", schedulingGroup={"podGroupName": "training"}), "apiVersion": "v1"},
                                   field_validation="Strict")
        assert "schedulingGroup" not in made["spec"] and store.peek("Pod", "default", "p").scheduling_group == ""
        await client.create(kueue_workload(), field_validation="Strict")  # Kueue's Workload is not gated
        await client.create(coscheduling_group(), field_validation="Strict")


async def test_with_topology_aware_scheduling_off_a_topology_constraint_is_forbidden() -> None:
    store = Store()
    store.features = FeatureGates({"TopologyAwareWorkloadScheduling": False})
    async with serving(store) as (_, client):
        with pytest.raises(Invalid) as err:
            await client.create(pod_group(schedulingConstraints={"topology": [{"key": "rack"}]}),
                                field_validation="Strict")
        assert err.value.field == "spec.schedulingConstraints" and "Forbidden" in err.value.message
        await client.create(pod_group())


async def test_a_pods_scheduling_group_cannot_change_after_creation() -> None:
    async with running() as (store, client):
        made = await client.create({**pod("p", schedulingGroup={"podGroupName": "a"}), "apiVersion": "v1"})
        with pytest.raises(Invalid) as err:
            await client.update({**made, "spec": {**made["spec"], "schedulingGroup": {"podGroupName": "b"}}})
        assert err.value.field == "spec" and "pod updates may not change fields" in err.value.message
        assert store.peek("Pod", "default", "p").scheduling_group == "a"


async def test_a_pod_keeps_the_scheduling_group_it_had_when_generic_workload_is_turned_off(tmp_path) -> None:
    path = str(tmp_path / "s.db")
    async with running(SQLiteBackend(path)) as (_, client):
        await client.create({**pod("p", schedulingGroup={"podGroupName": "a"}), "apiVersion": "v1"})
    store = Store(SQLiteBackend(path))
    store.features = FeatureGates({"GenericWorkload": False})
    async with serving(store) as (_, client):
        have = await client.get("Pod", "default", "p")
        updated = await client.update({**have, "metadata": {**have["metadata"], "labels": {"x": "y"}}})
        assert updated["spec"]["schedulingGroup"] == {"podGroupName": "a"}
