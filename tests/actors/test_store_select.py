"""List selectors as kubectl and the API server parse them: labels.Parse grammar,
keys and values checked; field selectors over the fields the store supports."""
from __future__ import annotations

import pytest

from actors.store import Invalid

from tests.actors.store_helpers import pod, running

PODS = [pod("a", labels={"app": "web", "tier": "1"}), pod("b", labels={"app": "db", "tier": "3"}),
        pod("c", labels={"env": "prod"})]


@pytest.mark.parametrize(("selector", "names"), [
    ("app=web", ["a"]),
    ("app==web", ["a"]),
    ("app!=web", ["b", "c"]),
    ("app in (web, db)", ["a", "b"]),
    ("app notin (web)", ["b", "c"]),
    ("app", ["a", "b"]),
    ("!app", ["c"]),
    ("app,!env", ["a", "b"]),
    ("tier>2", ["b"]),
    ("tier<2", ["a"]),
    ("app in (in, notin)", []),
    ("  app = web  ", ["a"]),
], ids=["eq", "double-eq", "neq", "in", "notin", "exists", "not-exists", "and", "gt", "lt", "keywords-as-values",
        "spaces"])
async def test_label_selectors_select_as_upstream(selector: str, names: list[str]) -> None:
    async with running() as (_, c):
        await c.apply(PODS)
        items, _ = await c.list("Pod", label_selector=selector)
    assert sorted(i["metadata"]["name"] for i in items) == names


@pytest.mark.parametrize(("selector", "message"), [
    ("!!!", "unable to parse requirement: found '!', expected: identifier"),
    ("app web", "unable to parse requirement: found 'web', expected: in, notin, =, ==, !=, gt, lt"),
    ("app in web", "unable to parse requirement: found 'web' expected: '('"),
    ("app=web,", "found '', expected: identifier after ','"),
    (",app", "found ',', expected: !, identifier, or 'end of string'"),
    ("app=a/b", 'unable to parse requirement: values[0][app]: Invalid value: "a/b": a valid label must be'),
    ("a/b/c=x", 'unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name must consist of'),
    ("tier>high", 'unable to parse requirement: values[0]: Invalid value: "high": for \'Gt\', \'Lt\' operators, '
     "the value must be an integer"),
], ids=["bangs", "no-operator", "in-without-parens", "trailing-comma", "leading-comma", "bad-value", "bad-key",
        "gt-not-integer"])
async def test_a_bad_label_selector_is_invalid_naming_label_selector(selector: str, message: str) -> None:
    async with running() as (_, c):
        await c.apply(PODS)
        with pytest.raises(Invalid) as err:
            await c.list("Pod", label_selector=selector)
    assert err.value.field == "labelSelector"
    assert err.value.message.startswith(f"labelSelector: {message}")


@pytest.mark.parametrize(("selector", "names"), [
    ("metadata.name=a", ["a"]),
    ("metadata.name==a", ["a"]),
    ("metadata.name!=a,metadata.namespace=default", ["b", "c"]),
    ("spec.nodeName=", ["a", "b", "c"]),
    ("status.phase!=Pending", []),
    ("spec.schedulerName=default-scheduler,spec.hostNetwork=false", ["a", "b", "c"]),
    ("spec.schedulerName!=default-scheduler", []),
    ("status.nominatedNodeName=,status.podIP=", ["a", "b", "c"]),
], ids=["eq", "double-eq", "neq-and-eq", "unbound", "phase", "scheduler-defaulted", "other-scheduler",
        "status-fields"])
async def test_field_selectors_select_on_supported_fields(selector: str, names: list[str]) -> None:
    async with running() as (_, c):
        await c.apply(PODS)
        items, _ = await c.list("Pod", field_selector=selector)
    assert sorted(i["metadata"]["name"] for i in items) == names


@pytest.mark.parametrize(("kind", "selector", "message"), [
    ("Pod", "spec.foo=x", "field label not supported: spec.foo"),
    ("Node", "spec.nodeName=x", "field label not supported: spec.nodeName"),
    ("Pod", "nonsense", "invalid selector: 'nonsense'; can't understand 'nonsense'"),
    ("Pod", r"metadata.name=a\x", r"invalid field selector: invalid escape sequence: \x"),
], ids=["unsupported-field", "pod-field-on-nodes", "no-operator", "bad-escape"])
async def test_a_bad_field_selector_is_invalid_naming_field_selector(kind: str, selector: str, message: str) -> None:
    async with running() as (_, c):
        with pytest.raises(Invalid) as err:
            await c.list(kind, field_selector=selector)
    assert err.value.field == "fieldSelector" and err.value.message == f"fieldSelector: {message}"


async def test_nodes_select_on_spec_unschedulable() -> None:
    cordoned = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}, "spec": {"unschedulable": True}}
    async with running() as (_, c):
        await c.apply([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}, cordoned])
        items, _ = await c.list("Node", field_selector="spec.unschedulable=false")
        other, _ = await c.list("Node", field_selector="spec.unschedulable!=false")
    assert [i["metadata"]["name"] for i in items] == ["n1"] and [i["metadata"]["name"] for i in other] == ["n2"]


async def test_a_selector_object_is_checked_too() -> None:
    async with running() as (_, c):
        with pytest.raises(Invalid) as err:
            await c.list("Pod", label_selector={"matchLabels": {"app": "a b"}})
    assert err.value.field == "labelSelector" and 'Invalid value: "a b"' in err.value.message
