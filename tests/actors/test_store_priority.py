"""Priority admission on the store's write path (upstream's Priority admission
plugin): a new pod's priority comes from its PriorityClass or the globalDefault one."""
from __future__ import annotations

import pytest

from actors.store import Invalid

from tests.actors.store_helpers import pod, priority_class, running


@pytest.mark.parametrize(("name", "value"), [("system-cluster-critical", 2_000_000_000),
                                              ("system-node-critical", 2_000_001_000)],
                         ids=["cluster-critical", "node-critical"])
async def test_a_built_in_class_gives_its_value_without_being_stored(name: str, value: int) -> None:
    async with running() as (_, c):
        created = await c.create(pod("p", priorityClassName=name))
    assert created["spec"]["priority"] == value
    assert created["spec"]["preemptionPolicy"] == "PreemptLowerPriority"


async def test_a_named_class_sets_priority_and_its_preemption_policy() -> None:
    async with running() as (_, c):
        await c.create(priority_class("batch", 100, policy="Never"))
        created = await c.create(pod("p", priorityClassName="batch"))
    assert (created["spec"]["priority"], created["spec"]["preemptionPolicy"]) == (100, "Never")


async def test_a_missing_class_is_invalid_naming_the_class_name_and_nothing_is_stored() -> None:
    async with running() as (store, c):
        with pytest.raises(Invalid) as err:
            await c.create(pod("p", priorityClassName="gold"))
    assert err.value.field == "spec.priorityClassName"
    assert err.value.message == "spec.priorityClassName: no PriorityClass with name gold was found"
    assert store.peek("Pod", "default", "p") is None


async def test_a_class_created_earlier_in_the_same_apply_resolves() -> None:
    async with running() as (_, c):
        items = await c.apply([priority_class("gold", 1000), pod("p", priorityClassName="gold")])
    assert items[1]["spec"]["priority"] == 1000


@pytest.mark.parametrize(("given", "ok"), [(100, True), (7, False)], ids=["same-value", "other-value"])
async def test_a_pod_priority_must_agree_with_its_class(given: int, ok: bool) -> None:
    async with running() as (_, c):
        await c.create(priority_class("batch", 100))
        if ok:
            assert (await c.create(pod("p", priorityClassName="batch", priority=given)))["spec"]["priority"] == 100
            return
        with pytest.raises(Invalid) as err:
            await c.create(pod("p", priorityClassName="batch", priority=given))
    assert err.value.field == "spec.priority"
    assert err.value.message == ("spec.priority: the integer value of priority (7) must not be provided in pod spec; "
                                 "priority admission controller computed 100 from the given PriorityClass name")


async def test_a_pod_preemption_policy_must_agree_with_its_class() -> None:
    async with running() as (_, c):
        await c.create(priority_class("batch", 100))
        with pytest.raises(Invalid) as err:
            await c.create(pod("p", priorityClassName="batch", preemptionPolicy="Never"))
    assert err.value.field == "spec.preemptionPolicy"
    assert "the string value of PreemptionPolicy (Never) must not be provided in pod spec" in err.value.message


async def test_the_global_default_class_applies_to_a_pod_without_class_or_priority() -> None:
    async with running() as (_, c):
        await c.create(priority_class("normal", 50, default=True, policy="Never"))
        plain = await c.create(pod("plain"))
        explicit = await c.create(pod("explicit", priority=9))
    assert (plain["spec"]["priorityClassName"], plain["spec"]["priority"], plain["spec"]["preemptionPolicy"]) == \
        ("normal", 50, "Never")
    # ksched has no admission chain in front of it: a client-given priority without a class stands
    assert explicit["spec"]["priority"] == 9 and "priorityClassName" not in explicit["spec"]


@pytest.mark.parametrize(("spec", "priority"), [({}, 0), ({"priority": 42}, 42)], ids=["nothing", "given"])
async def test_without_class_or_default_a_pod_keeps_its_own_priority_or_gets_zero(spec: dict, priority: int) -> None:
    async with running() as (_, c):
        created = await c.create(pod("p", **spec))
    assert created["spec"]["priority"] == priority


async def test_only_one_priority_class_may_be_the_global_default() -> None:
    async with running() as (store, c):
        await c.create(priority_class("first", 10, default=True))
        with pytest.raises(Invalid) as err:
            await c.apply([priority_class("second", 20, default=True)])
        await c.apply([priority_class("first", 10, default=True)])  # the default itself may be re-applied
    assert err.value.field == "globalDefault"
    assert "PriorityClass first is already marked as default. Only one default can exist" in err.value.message
    assert store.peek("PriorityClass", "", "second") is None


async def test_a_priority_class_value_cannot_change_and_system_names_are_reserved() -> None:
    async with running() as (_, c):
        await c.create(priority_class("batch", 100))
        with pytest.raises(Invalid) as changed:
            await c.apply([priority_class("batch", 200)])
        with pytest.raises(Invalid) as reserved:
            await c.create(priority_class("system-mine", 5))
    assert changed.value.field == "value" and "may not be changed in an update" in changed.value.message
    assert reserved.value.field == "metadata.name"
    assert "system-mine is not a known system priority class" in reserved.value.message


async def test_a_re_applied_pod_keeps_the_priority_admission_gave_it() -> None:
    async with running() as (_, c):
        await c.create(priority_class("normal", 50, default=True))
        await c.apply([pod("p")])
        items, actions = await c.apply_with_actions([pod("p")])
    assert actions == ["unchanged"] and items[0]["spec"]["priority"] == 50
