"""Each object a client writes is admitted once (actors.store.front_door.decode_stage):
one walk of its kind's schema finds its errors and its unknown fields together, on
every front door; a big apply (taken in slices between turns of the event loop)
stays all or nothing, and an object refused in it is named with its field."""
from __future__ import annotations

from typing import Any

import pytest

from actors.store import Invalid, WatchEvent
from actors.store.messages import BadRequest
from framework.api import schema
from framework.api.schema import admit

from tests.actors.store_helpers import pod, running
from tests.transport.conftest import start_daemon, stop_daemon

BIG = 300  # above the pacer's 256 steps: the apply gives the loop turns while it is stored


def manifest(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", **pod(name, **spec)}


class CountingSchema:
    """The Pod schema, counting the walks that start at an object's root."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.walks = inner, 0

    def check(self, value: Any, path: str, ctx: Any) -> None:
        self.walks += path == ""
        self.inner.check(value, path, ctx)


@pytest.fixture
def pod_walks(monkeypatch: pytest.MonkeyPatch) -> CountingSchema:
    counting = CountingSchema(schema.SCHEMAS["Pod"])
    monkeypatch.setitem(schema.SCHEMAS, "Pod", counting)
    return counting


@pytest.mark.parametrize("mode", ["Strict", "Warn", "Ignore"])
async def test_each_object_of_a_client_apply_walks_its_schema_once(pod_walks: CountingSchema, mode: str) -> None:
    async with running() as (store, c):
        items, actions = await c.apply_with_actions([manifest(f"p{i}") for i in range(BIG)], field_validation=mode)
    assert actions == ["created"] * BIG and len(store.peek_all("Pod")) == BIG
    assert pod_walks.walks == BIG


async def test_an_unknown_field_found_in_the_same_walk_is_dropped_with_a_warning(pod_walks: CountingSchema) -> None:
    odd = manifest("odd")
    odd["spec"]["containers"][0]["colour"] = "blue"
    warnings: list[str] = []
    async with running() as (store, c):
        items, _ = await c.apply_with_actions([manifest("a"), odd], field_validation="Warn", warnings=warnings)
    assert warnings == ['unknown field "spec.containers[0].colour"']
    assert "colour" not in items[1]["spec"]["containers"][0]
    assert "colour" not in store.peek("Pod", "default", "odd").raw["spec"]["containers"][0]
    assert pod_walks.walks == 2


async def test_an_invalid_object_late_in_a_big_apply_is_named_with_its_field_and_nothing_is_stored() -> None:
    objects = [manifest(f"p{i}") for i in range(BIG)]
    objects[BIG - 3] = manifest(f"p{BIG - 3}", cpu="1.5.5")
    seen: list[WatchEvent] = []
    async with running() as (store, c):
        await c.watch(seen.append)
        with pytest.raises(Invalid) as err:
            await c.apply_with_actions(objects, field_validation="Strict")
        items, rv = await c.list("Pod")
    assert err.value.field == "spec.containers[0].resources.requests[cpu]"
    assert err.value.message.startswith(f"objects[{BIG - 3}] (Pod default/p{BIG - 3}): spec.containers[0]")
    assert items == [] and rv == 0 and seen == [] and store.commits == 0


async def test_an_unknown_field_late_in_a_big_strict_apply_is_a_bad_request_and_nothing_is_stored() -> None:
    objects = [manifest(f"p{i}") for i in range(BIG)]
    objects[-1]["spec"]["colour"] = "blue"
    async with running() as (store, c):
        with pytest.raises(BadRequest) as err:
            await c.apply_with_actions(objects, field_validation="Strict")
        items, rv = await c.list("Pod")
    assert err.value.message == (f'objects[{BIG - 1}] (Pod default/p{BIG - 1}): Pod in version "v1" cannot be handled '
                                 'as a Pod: strict decoding error: unknown field "spec.colour"')
    assert items == [] and rv == 0


async def test_over_the_wire_a_big_apply_with_one_bad_object_is_refused_whole() -> None:
    from transport.client.tcp import Client
    from transport.protocol.wire import ApiError, Reason

    objects = [manifest(f"p{i}") for i in range(BIG)]
    objects[BIG // 2]["metadata"]["name"] = "Not_A_Name"
    d, task = await start_daemon(max_frame=1 << 22)
    try:
        async with await Client.connect(d.address) as c:
            with pytest.raises(ApiError) as err:
                await c.request("apply", objects=objects, fieldValidation="Strict")
            listed = await c.list("Pod")
    finally:
        await stop_daemon(d, task)
    assert err.value.reason == Reason.INVALID
    assert f"objects[{BIG // 2}] (Pod default/Not_A_Name): metadata.name: Invalid value" in err.value.message
    assert listed == ([], 0)


def test_admit_refuses_what_json_cannot_hold_as_the_slow_walk_names_it() -> None:
    nested: dict[str, Any] = {}
    deepest = nested
    for _ in range(70):
        deepest["a"] = {}
        deepest = deepest["a"]
    deepest["b"] = 1
    too_deep = admit({**pod("p"), "metadata": {"name": "p", "annotations": nested}})
    assert len(too_deep.errors) == 1 and "must not nest more than 64 levels deep" in str(too_deep.errors[0])
    not_finite = admit({**pod("p"), "spec": {**pod("p")["spec"], "priority": float("nan")}})
    assert [e.field for e in not_finite.errors] == ["spec.priority"]
    raw_bytes = admit({**pod("p"), "metadata": {"name": "p", "labels": {"a": b"x"}}})
    assert raw_bytes.errors and raw_bytes.errors[0].field == "metadata.labels.a"


def test_a_nan_only_an_unknown_field_held_goes_with_it() -> None:
    odd = manifest("p")
    odd["spec"]["colour"] = float("nan")
    checked = admit(odd, unknown=True)
    assert checked.unknown == ["spec.colour"] and checked.errors == [] and "colour" not in checked.raw["spec"]


async def test_pods_of_one_template_share_one_containers_list_and_only_identical_ones_do() -> None:
    def with_tty(name: str, tty: Any) -> dict[str, Any]:
        m = manifest(name)
        m["spec"]["containers"][0]["tty"] = tty
        return m

    async with running() as (store, c):
        await c.apply_with_actions([manifest("a"), manifest("b"), with_tty("c", True), with_tty("d", 1)],
                                   field_validation="Strict")
        kept = {n: store.peek("Pod", "default", n).raw["spec"]["containers"] for n in "abcd"}
    assert kept["a"] is kept["b"]
    assert kept["c"] is not kept["d"] and kept["c"][0]["tty"] is True and type(kept["d"][0]["tty"]) is int
