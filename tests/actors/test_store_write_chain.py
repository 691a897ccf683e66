"""The store's one write chain (actors/store/write_chain.py): warnings come back in
the reply, each kind's rules come from its strategy in one registry
(actors/store/strategies.py), and each WriteRules knob has one effect."""
from __future__ import annotations

from typing import Any

import pytest

from actors.base import new_reply
from actors.store import Invalid
from actors.store.messages import Apply, Create, Update
from actors.store.strategies import STRATEGIES, KindStrategy, strategy
from actors.store.write_chain import WriteRules
from framework.api.errors import ValidationError
from framework.api.validation import invalid
from tests.actors.store_helpers import running


def pod(name: str = "web", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "nginx", "colour": "red"}]}, **extra}


async def test_the_store_answers_warnings_in_its_reply_and_changes_no_list_of_the_caller() -> None:
    async with running() as (store, _):
        stored, said = await store.ask(Create(obj=pod(), field_validation="Warn", with_warnings=True,
                                              reply=new_reply()))
        assert stored["metadata"]["name"] == "web"
        assert said == ('unknown field "spec.containers[0].colour"',)
        updated, said = await store.ask(Update(obj=stored, field_validation="Warn", with_warnings=True,
                                               reply=new_reply()))
        assert said == () and updated["metadata"]["name"] == "web"
        items, actions, said = await store.ask(Apply(objects=[pod("a"), pod("b")], with_actions=True,
                                                     field_validation="Warn", reply=new_reply()))
        assert actions == ["created", "created"] and len(said) == 2
        plain = await store.ask(Create(obj=pod("c"), field_validation="Warn", reply=new_reply()))
        assert plain["metadata"]["name"] == "c"  # without with_warnings: the stored object alone


def _no_new_labels(new: Any, old: Any) -> list[ValidationError]:
    if new["metadata"].get("labels") != old["metadata"].get("labels"):
        return [invalid("metadata.labels", new["metadata"].get("labels"), "field is immutable")]
    return []


async def test_a_kind_strategy_in_the_registry_gives_that_kind_its_update_rules(monkeypatch) -> None:
    node = {"kind": "Node", "metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "4", "pods": "110"}}}
    plain_node = strategy("Node")
    monkeypatch.setitem(STRATEGIES, "Node", KindStrategy(default=plain_node.default, validate_update=(_no_new_labels,)))
    async with running() as (_, c):
        stored = await c.create(node)
        assert stored["status"]["allocatable"] == {"cpu": "4", "pods": "110"}  # the kind's defaulting still runs
        with pytest.raises(Invalid) as e:
            await c.update({**stored, "metadata": {**stored["metadata"], "labels": {"a": "b"}}})
        assert e.value.field == "metadata.labels"
        assert (await c.get("Node", "", "n1"))["metadata"].get("labels") in (None, {})


@pytest.mark.parametrize("rules, name_ok, uid_kept, status_kept", [
    (WriteRules(), False, False, False),
    (WriteRules(name_formats=False), True, False, False),
    (WriteRules(server_fields=False), False, True, False),
    (WriteRules(pod_create_status=False), False, False, True),
], ids=["strict", "name-formats-off", "server-fields-off", "pod-create-status-off"])
async def test_each_write_rule_has_one_effect(rules: WriteRules, name_ok: bool, uid_kept: bool,
                                              status_kept: bool) -> None:
    async with running(rules=rules) as (_, c):
        if name_ok:
            assert (await c.create(pod("p_x")))["metadata"]["name"] == "p_x"
        else:
            with pytest.raises(Invalid):
                await c.create(pod("p_x"))
        given = pod("p", status={"phase": "Running"})
        given["metadata"]["uid"] = "chosen-uid"
        stored = await c.create(given)
        assert (stored["metadata"]["uid"] == "chosen-uid") is uid_kept
        assert ("qosClass" not in stored["status"]) is status_kept
