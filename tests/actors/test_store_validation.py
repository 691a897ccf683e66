"""Create-time validation in the store: names, namespaces, labels and a pod's
containers, with kube-apiserver's field paths and texts; skippable for the
conformance driver."""
from __future__ import annotations

from typing import Any

import pytest

from actors.store import Invalid
from actors.store.write_chain import AS_WRITTEN

from tests.actors.store_helpers import pod, running

SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
             "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def named(kind: str, name: str) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name}}


async def test_a_bad_pod_name_is_invalid_with_upstream_text() -> None:
    async with running() as (store, c):
        with pytest.raises(Invalid) as err:
            await c.create(pod("Bad_Name!"))
    assert err.value.field == "metadata.name"
    assert err.value.message == f'metadata.name: Invalid value: "Bad_Name!": {SUBDOMAIN}'
    assert store.resource_version == 0


@pytest.mark.parametrize(("obj", "field", "text"), [
    (named("Node", "node_1"), "metadata.name", "a lowercase RFC 1123 subdomain"),
    (named("PodGroup", "Gang"), "metadata.name", "a lowercase RFC 1123 subdomain"),
    (named("Namespace", "team.a"), "metadata.name", 'Invalid value: "team.a": must not contain dots'),
    (named("Service", "1web"), "metadata.name", "a DNS-1035 label must consist of"),
    (pod("p", ns="Team_A"), "metadata.namespace", "a lowercase RFC 1123 label must consist of"),
    (pod("p", labels={"bad key": "x"}), "metadata.labels", 'Invalid value: "bad key": name part must consist of'),
    (pod("p", labels={"app": "-web"}), "metadata.labels", 'Invalid value: "-web": a valid label must be'),
    (pod("p", labels={"a" * 64: "x"}), "metadata.labels", "name part must be no more than 63 characters"),
], ids=["node", "podgroup", "namespace-is-a-label", "service-is-a-dns1035-label", "namespace", "label-key",
        "label-value", "label-key-length"])
async def test_names_namespaces_and_labels_are_validated_per_kind(obj: dict, field: str, text: str) -> None:
    async with running() as (_, c):
        with pytest.raises(Invalid) as err:
            await c.apply([obj])
    assert err.value.field == field and text in err.value.message


@pytest.mark.parametrize(("spec", "field", "message"), [
    ({"containers": []}, "spec.containers", "spec.containers: Required value"),
    ({"containers": [{"name": "Web"}]}, "spec.containers[0].name", 'Invalid value: "Web": a lowercase RFC 1123 label'),
    ({"containers": [{"name": ""}]}, "spec.containers[0].name", "spec.containers[0].name: Required value"),
    ({"containers": [{"name": "web"}, {"name": "web"}]}, "spec.containers[1].name",
     'spec.containers[1].name: Duplicate value: "web"'),
    ({"containers": [{"name": "web"}], "initContainers": [{"name": "web"}]}, "spec.initContainers[0].name",
     'spec.initContainers[0].name: Duplicate value: "web"'),
], ids=["no-containers", "container-name", "empty-container-name", "duplicate", "duplicate-with-init"])
async def test_a_pod_needs_containers_with_unique_label_names(spec: dict, field: str, message: str) -> None:
    manifest = {"kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    async with running() as (_, c):
        with pytest.raises(Invalid) as err:
            await c.create(manifest)
    assert err.value.field == field and message in err.value.message


async def test_a_generated_name_is_validated_like_a_given_one() -> None:
    async with running() as (_, c):
        ok = await c.create({"kind": "Pod", "metadata": {"generateName": "web-"}, "spec": pod("x")["spec"]})
        with pytest.raises(Invalid) as err:
            await c.create({"kind": "Pod", "metadata": {"generateName": "Web_"}, "spec": pod("x")["spec"]})
    assert ok["metadata"]["name"].startswith("web-")
    assert err.value.field == "metadata.name"


async def test_the_conformance_driver_can_turn_name_checks_off() -> None:
    upstream_style = {"kind": "Pod", "metadata": {"name": "p_without_nominated_node"}, "spec": {}}
    async with running(rules=AS_WRITTEN) as (_, c):
        created = await c.create(upstream_style)
    assert created["metadata"]["name"] == "p_without_nominated_node"


async def test_an_invalid_object_in_an_apply_is_named_by_its_place_and_nothing_is_applied() -> None:
    async with running() as (store, c):
        with pytest.raises(Invalid) as err:
            await c.apply([named("Node", "n1"), pod("Bad")])
    assert err.value.message.startswith('objects[1] (Pod default/Bad): metadata.name: Invalid value: "Bad"')
    assert store.resource_version == 0 and store.peek("Node", "", "n1") is None
