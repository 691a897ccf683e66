"""Every value the store keeps can be written back out as JSON, and the fields the
server owns are the server's (issue 19).

- NaN and Infinity (which msgpack carries and Kubernetes' JSON has not) are refused
  wherever they sit, apiVersion and kind must be strings: one pod with `spec.x: NaN`
  made the web page show 0 nodes and `ksched get pods -o json` print invalid JSON.
- On create the server sets uid, creationTimestamp, generation and resourceVersion
  and drops deletionTimestamp (a pod created with one was never scheduled); on
  update they are the stored object's.
"""
from __future__ import annotations

import json
import math
from typing import Any

import pytest

from actors.store import Invalid
from tests.actors.store_helpers import pod, running
from tests.e2e.conftest import poll
from tests.e2e.test_daemon import nodes_yaml, pod_manifest
from transport.protocol.wire import ApiError

NAN, INF = math.nan, math.inf


def _no_constants(text: str) -> Any:
    """json.loads as strict JSON: NaN and Infinity are not JSON."""
    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")
    return json.loads(text, parse_constant=refuse)


def bad_values() -> list[tuple[str, dict[str, Any], str]]:
    """(what, manifest, the field the error must name)."""
    def with_(name: str, **patch: Any) -> dict[str, Any]:
        raw = pod(name)
        for path, value in patch.items():
            section, key = path.split("__")
            raw.setdefault(section, {})[key] = value
        return raw

    deep = pod("deep-inf")
    deep["spec"]["x"] = [1, {"y": [-INF]}]
    return [
        ("nan in an unknown spec field", with_("spec-nan", spec__x=NAN), "spec.x"),
        ("infinity in status", with_("status-inf", status__extra=INF), "status.extra"),
        ("nested -infinity", deep, "spec.x[1].y[0]"),
        ("nan apiVersion", {**pod("api-nan"), "apiVersion": NAN}, "apiVersion"),
        ("number apiVersion", {**pod("api-num"), "apiVersion": 1}, "apiVersion"),
        ("object apiVersion", {**pod("api-obj"), "apiVersion": {"v": 1}}, "apiVersion"),
        ("number kind", {**pod("kind-num"), "kind": 5}, "kind"),
        ("nan in a quantity", with_("qty-nan", spec__overhead={"cpu": NAN}), "spec.overhead[cpu]"),
    ]


@pytest.mark.parametrize(("manifest", "field"), [pytest.param(m, f, id=w) for w, m, f in bad_values()])
async def test_non_finite_numbers_and_non_string_type_meta_are_refused_on_every_write(manifest, field) -> None:
    async with running() as (store, c):
        good = await c.create(pod(manifest["metadata"]["name"] + "-ok"))
        for write in (c.create, lambda m: c.apply([m])):
            with pytest.raises(Invalid) as err:
                await write(manifest)
            assert err.value.field == field, str(err.value)
        # An update of a stored object to the bad value is refused too.
        named = {**manifest, "metadata": {**manifest["metadata"], "name": good["metadata"]["name"]}}
        with pytest.raises(Invalid) as err:
            await c.update(named)
        assert err.value.field == field
        assert [o.name for o in store.peek_all("Pod")] == [good["metadata"]["name"]]
        assert store.peek_all("Pod")[0].raw == good


async def test_a_refused_non_finite_number_says_which_in_its_message() -> None:
    async with running() as (_, c):
        with pytest.raises(Invalid) as err:
            await c.create({**pod("p"), "spec": {**pod("p")["spec"], "x": NAN}})
    assert str(err.value) == 'spec.x: Invalid value: "NaN": must be a finite number (JSON has no NaN or Infinity)'


def test_a_daemon_refuses_nan_over_msgpack_and_every_listing_stays_json(daemon_factory, tmp_path) -> None:
    d = daemon_factory()
    (tmp_path / "nodes.yaml").write_text(nodes_yaml(2))
    d.cli("apply", "-f", str(tmp_path / "nodes.yaml"))
    refused = []
    with d.client() as c:
        c.create(pod_manifest("fine", "100m"))
        for what, manifest, field in bad_values():
            for op in ("create", "apply"):
                try:
                    c.create(manifest) if op == "create" else c.apply([manifest])
                except ApiError as e:
                    assert e.reason == "Invalid" and field in e.message, (what, e.message)
                    refused.append((what, op))
        pods, _ = c.list("Pod", "default")
    assert len(refused) == 2 * len(bad_values())
    assert [p["metadata"]["name"] for p in pods] == ["fine"]
    listed = _no_constants(d.cli("get", "pods", "-A", "-o", "json").stdout)
    assert [p["metadata"]["name"] for p in listed["items"]] == ["fine"]
    nodes = _no_constants(d.cli("get", "nodes", "-o", "json").stdout)
    assert len(nodes["items"]) == 2


def test_a_daemon_schedules_a_pod_created_with_a_deletion_timestamp_and_owns_its_system_fields(
        daemon_factory, tmp_path) -> None:
    d = daemon_factory()
    (tmp_path / "nodes.yaml").write_text(nodes_yaml(2))
    d.cli("apply", "-f", str(tmp_path / "nodes.yaml"))
    given = {"uid": "chosen-uid", "creationTimestamp": "2001-01-01T00:00:00Z", "generation": 42,
             "deletionTimestamp": "2001-01-01T00:00:00Z", "deletionGracePeriodSeconds": 0}
    manifest = pod_manifest("terminating-looking", "100m")
    manifest["metadata"].update(given)
    with d.client() as c:
        created = c.create(manifest)

    def bound() -> dict[str, Any] | None:
        with d.client() as c:
            got = c.get("Pod", "terminating-looking", "default")
        return got if got["spec"].get("nodeName") else None

    stored = poll(bound, "the pod created with a deletionTimestamp bound")
    for obj in (created, stored):
        meta = obj["metadata"]
        assert meta["uid"] != "chosen-uid" and meta["creationTimestamp"] != "2001-01-01T00:00:00Z"
        assert meta["generation"] == 1
        assert "deletionTimestamp" not in meta and "deletionGracePeriodSeconds" not in meta
    # A re-apply naming other system fields keeps the stored ones.
    again = dict(manifest, metadata={**manifest["metadata"], "uid": stored["metadata"]["uid"]})
    with d.client() as c:
        applied = c.apply([again])[0]
    assert {k: applied["metadata"].get(k) for k in given} == \
        {k: stored["metadata"].get(k) for k in given}
    assert applied["spec"]["nodeName"] == stored["spec"]["nodeName"]
