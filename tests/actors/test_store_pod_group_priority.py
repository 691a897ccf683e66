"""KEP-5710's PodGroup fields at the store's door (gate WorkloadAwarePreemption, on in
ksched): disruptionMode Pod|PodGroup, priorityClassName resolved to spec.priority by
the Priority admission step (the globalDefault class when none is named), a missing
class refused naming the field, the three fields immutable and kept across an update
that leaves the admitted priority out, and Forbidden while the gate is off."""
from __future__ import annotations

import pytest

from actors.store import Store
from actors.store.messages import Invalid
from framework.features import FeatureGates
from tests.actors.store_helpers import running, serving
from tests.actors.test_store_scheduling_kinds import pod_group, workload


def priority_class(name: str, value: int, default: bool = False) -> dict:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "globalDefault": default}


async def test_a_pod_groups_priority_class_name_is_resolved_to_its_priority() -> None:
    async with running() as (store, client):
        await client.create(priority_class("high", 1000))
        made = await client.create(pod_group(priorityClassName="high", disruptionMode="PodGroup"),
                                   field_validation="Strict")
        assert made["spec"]["priority"] == 1000
        pg = store.peek("PodGroup.scheduling.k8s.io", "default", "training")
        assert (pg.priority, pg.disruption_mode, pg.disrupted_whole) == (1000, "PodGroup", True)


async def test_a_pod_group_with_no_class_takes_the_global_default_and_without_one_stays_unset() -> None:
    async with running() as (store, client):
        made = await client.create(pod_group("a"), field_validation="Strict")
        assert "priority" not in made["spec"]
        assert store.peek("PodGroup.scheduling.k8s.io", "default", "a").disruption_mode == "Pod"
        await client.create(priority_class("normal", 7, default=True))
        made = await client.create(pod_group("b"), field_validation="Strict")
        assert (made["spec"]["priorityClassName"], made["spec"]["priority"]) == ("normal", 7)
        made = await client.create(workload(), field_validation="Strict")
        assert made["spec"]["podGroupTemplates"][0]["priority"] == 7


@pytest.mark.parametrize("spec, field, message", [
    ({"priorityClassName": "missing"}, "spec.priorityClassName", "no PriorityClass with name missing was found"),
    ({"disruptionMode": "All"}, "spec.disruptionMode", 'supported values: "Pod", "PodGroup"'),
    ({"priority": 1_000_000_001}, "spec.priority", "must be less than or equal to 1000000000"),
])
async def test_a_bad_disruption_field_is_refused_naming_it(spec, field, message) -> None:
    async with running() as (store, client):
        with pytest.raises(Invalid) as err:
            await client.create(pod_group(**spec), field_validation="Strict")
        assert err.value.field == field and message in err.value.message
        assert store.peek("PodGroup.scheduling.k8s.io", "default", "training") is None


async def test_the_disruption_fields_are_immutable_and_the_admitted_priority_is_kept() -> None:
    async with running() as (store, client):
        await client.create(priority_class("high", 1000))
        made = await client.create(pod_group(priorityClassName="high"), field_validation="Strict")
        spec = {k: v for k, v in made["spec"].items() if k != "priority"}
        kept = await client.update({**made, "spec": spec}, field_validation="Strict")
        assert kept["spec"]["priority"] == 1000 and kept["metadata"]["generation"] == made["metadata"]["generation"]
        with pytest.raises(Invalid) as err:
            await client.update({**kept, "spec": {**kept["spec"], "disruptionMode": "PodGroup"}},
                                field_validation="Strict")
        assert err.value.field == "spec.disruptionMode" and "field is immutable" in err.value.message


async def test_with_workload_aware_preemption_off_the_fields_are_forbidden() -> None:
    store = Store()
    store.features = FeatureGates({"WorkloadAwarePreemption": False})
    async with serving(store) as (_, client):
        with pytest.raises(Invalid) as err:
            await client.create(pod_group(disruptionMode="PodGroup"), field_validation="Strict")
        assert err.value.field == "spec.disruptionMode" and "Forbidden" in err.value.message
        await client.create(priority_class("normal", 7, default=True))
        made = await client.create(pod_group(), field_validation="Strict")
        assert "priority" not in made["spec"]
