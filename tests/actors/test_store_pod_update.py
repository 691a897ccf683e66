"""Pod spec updates through the store follow ValidatePodUpdate: only images,
activeDeadlineSeconds, added tolerations, removed schedulingGates (and the
terminationGracePeriodSeconds quirk) may change; spec.nodeName only by binding."""
from __future__ import annotations

from typing import Any

import pytest

from actors.store import Invalid

from tests.actors.store_helpers import pod, running

TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
GATE = {"name": "example.com/wait"}


def changed(base: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {**base, "spec": {**base["spec"], **spec}}


@pytest.mark.parametrize(("before", "after"), [
    (pod("p"), changed(pod("p"), containers=[{"name": "c", "image": "busybox:2",
                                                "resources": {"requests": {"cpu": "100m"}}}])),
    (pod("p", activeDeadlineSeconds=60), pod("p", activeDeadlineSeconds=30)),
    (pod("p"), pod("p", activeDeadlineSeconds=30)),
    (pod("p", tolerations=[TOLERATION]), pod("p", tolerations=[TOLERATION, {"key": "x", "operator": "Exists"}])),
    (pod("p", tolerations=[{**TOLERATION, "effect": "NoExecute", "tolerationSeconds": 5}]),
     pod("p", tolerations=[{**TOLERATION, "effect": "NoExecute", "tolerationSeconds": 9}])),
    (pod("p", schedulingGates=[GATE, {"name": "b"}]), pod("p", schedulingGates=[{"name": "b"}])),
    (pod("p", terminationGracePeriodSeconds=-1), pod("p", terminationGracePeriodSeconds=1)),
    (pod("p", schedulingGates=[GATE], nodeSelector={"a": "1"}),
     pod("p", schedulingGates=[GATE], nodeSelector={"a": "1", "b": "2"})),
    (pod("p", cpu="1"), pod("p", cpu="1000m")),
], ids=["image", "deadline-lowered", "deadline-set", "toleration-added", "toleration-seconds", "gate-removed",
        "grace-quirk", "gated-node-selector-added", "same-quantity"])
async def test_allowed_pod_spec_changes_are_applied(before: dict, after: dict) -> None:
    async with running() as (_, c):
        await c.apply([before])
        items, actions = await c.apply_with_actions([after])
    assert actions[0] in ("configured", "unchanged")
    assert all(items[0]["spec"][k] == v for k, v in after["spec"].items())


@pytest.mark.parametrize(("before", "after", "field", "text"), [
    (pod("p", cpu="100m"), pod("p", cpu="2"), "spec", "spec.containers[0].resources.requests.cpu"),
    (pod("p"), changed(pod("p"), containers=[*pod("p")["spec"]["containers"], {"name": "d", "image": "busybox"}]),
     "spec.containers", "pod updates may not add or remove containers"),
    (pod("p", activeDeadlineSeconds=30), pod("p", activeDeadlineSeconds=60), "spec.activeDeadlineSeconds",
     "must be less than or equal to previous value"),
    (pod("p", tolerations=[TOLERATION]), pod("p"), "spec.tolerations",
     "existing toleration can not be modified except its tolerationSeconds"),
    (pod("p"), pod("p", schedulingGates=[GATE]), "spec.schedulingGates[0].name",
     "only deletion is allowed, but found new scheduling gate 'example.com/wait'"),
    (pod("p", nodeSelector={"a": "1"}), pod("p", nodeSelector={"a": "1", "b": "2"}), "spec",
     "spec.nodeSelector.b"),
    (pod("p", schedulingGates=[GATE], nodeSelector={"a": "1"}), pod("p", schedulingGates=[GATE]),
     "spec.nodeSelector", "only additions to spec.nodeSelector are allowed"),
    (pod("p"), pod("p", nodeName="n1"), "spec", 'spec.nodeName: <none> -> "n1"'),
], ids=["requests-grow", "containers-removed", "deadline-raised", "toleration-removed", "gate-added",
        "node-selector", "gated-node-selector-removed", "node-name-set"])
async def test_other_pod_spec_changes_are_invalid_and_change_nothing(before: dict, after: dict, field: str,
                                                                    text: str) -> None:
    async with running() as (store, c):
        await c.apply([before])
        rv = store.resource_version
        with pytest.raises(Invalid) as err:
            await c.apply([after])
        with pytest.raises(Invalid):
            await c.update(after)
    assert err.value.field == field and text in err.value.message
    assert store.resource_version == rv and store.peek("Pod", "default", "p").raw["spec"] == before["spec"] | \
        {"priority": 0, "preemptionPolicy": "PreemptLowerPriority"}


async def test_a_bound_pod_cannot_be_moved_by_re_apply_but_keeps_its_node_when_the_manifest_omits_it() -> None:
    async with running() as (store, c):
        await c.apply([pod("p")])
        await c.bind("default", "p", "n1")
        with pytest.raises(Invalid) as err:
            await c.apply([pod("p", nodeName="n2")])
        items, actions = await c.apply_with_actions([pod("p")])
    assert err.value.message.startswith(
        "objects[0] (Pod default/p): spec: Forbidden: pod updates may not change fields other than "
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
        "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if "
        "it was previously negative)\n")
    assert 'spec.nodeName: "n1" -> "n2"' in err.value.message
    assert actions == ["unchanged"] and items[0]["spec"]["nodeName"] == "n1"
    assert store.peek("Pod", "default", "p").node_name == "n1"


async def test_growing_the_requests_of_a_bound_pod_is_refused() -> None:
    async with running() as (store, c):
        await c.apply([pod("p", cpu="100m")])
        bound = await c.bind("default", "p", "n1")
        with pytest.raises(Invalid) as err:
            await c.update(changed(bound, containers=pod("p", cpu="4")["spec"]["containers"]))
    assert err.value.field == "spec"
    assert err.value.message.endswith('\n  spec.containers[0].resources.requests.cpu: "100m" -> "4"')
    assert store.peek("Pod", "default", "p").resource.milli_cpu == 100
