"""Defence in depth: objects that got into the backend without validation (an older
version, a bug) never crash-loop the daemon and never stop other pods scheduling.
They are written straight into the real backend, bypassing the store."""
from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from actors.store import Invalid
from actors.store.backend import Write
from actors.store.memory import InMemoryBackend
from actors.store.sqlite import SQLiteBackend
from actors.store.write_chain import AS_WRITTEN

from tests.actors.store_helpers import pod, running
from tests.e2e.conftest import poll
from tests.e2e.test_daemon import nodes_yaml, pod_manifest

AFFINITY_X = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": "x"}]}}


HARMLESS = {"default/status-null", "default/namespace-null"}  # a null field is a field left out


def malformed_objects() -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, key, raw): each once made the daemon exit or every pod fail (the two
    HARMLESS ones through a null the store now reads as absent)."""
    bound = {"nodeName": "node-0", "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    return [
        ("Pod", "default/status-null", {**pod("status-null"), "status": None}),
        ("Pod", "default/conditions-null", {**pod("conditions-null"), "status": {"conditions": [None]}}),
        ("Pod", "default/conditions-str", {**pod("conditions-str"), "status": {"conditions": ["x", 1]}}),
        ("Pod", "default/poison-affinity", {"kind": "Pod", "metadata": {"name": "poison-affinity", "namespace": "default"},
                                            "spec": {**bound, "affinity": AFFINITY_X}}),
        ("Pod", "default/namespace-null", {**pod("namespace-null"), "metadata": {"name": "namespace-null", "namespace": None}}),
        ("Node", "huge", {"kind": "Node", "metadata": {"name": "huge"},
                          "status": {"allocatable": {"cpu": 1e308, "memory": "8Gi", "pods": 110}}}),
    ]


async def _write_straight(backend: Any, objects: list[tuple[str, str, dict[str, Any]]]) -> None:
    await backend.commit([Write(kind=k, key=key, raw={**raw, "metadata": {**raw["metadata"], "resourceVersion": str(i)}},
                                resource_version=i) for i, (k, key, raw) in enumerate(objects, 1)])


async def test_stored_objects_that_do_not_validate_are_quarantined_with_an_event_and_the_rest_is_served():
    backend = InMemoryBackend()
    good = ("Pod", "default/good", {**pod("good"), "status": {"phase": "Pending"}})
    await _write_straight(backend, [*malformed_objects(), good])
    async with running(backend) as (store, c):
        assert sorted(o.name for o in store.peek_all("Pod")) == ["good", "namespace-null", "status-null"]
        assert "namespace" not in store.peek("Pod", "default", "namespace-null").raw["metadata"]
        assert not store.peek_all("Node")
        assert set(store.quarantined) == {(k, key) for k, key, _ in malformed_objects() if key not in HARMLESS}
        events = await c.events("Pod", "default/conditions-null")
        assert [(e.type, e.reason) for e in events] == [("Warning", "Quarantined")]
        assert "status.conditions[0]: Invalid value" in events[0].message
        assert "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight" in \
            store.quarantined[("Pod", "default/poison-affinity")]
        # The name is free again: a valid object replaces the quarantined row.
        created = await c.create(pod("conditions-null"))
        assert created["metadata"]["name"] == "conditions-null"


async def test_a_status_write_on_a_pod_stored_with_a_null_status_does_not_fail():
    async with running(rules=AS_WRITTEN) as (store, c):
        await c.create(pod("p"))
        # What an older version stored: a null status, then the scheduler binds the pod.
        raw = dict(store.peek("Pod", "default", "p").raw)
        store._objects["Pod"]["default/p"] = type(store.peek("Pod", "default", "p"))({**raw, "status": None})
        bound = await c.bind("default", "p", "node-0")
        assert bound["spec"]["nodeName"] == "node-0"
        assert bound["status"]["conditions"] == [{"type": "PodScheduled", "status": "True"}]


async def test_the_store_refuses_the_objects_that_used_to_crash_the_daemon():
    async with running() as (store, c):
        refused = []
        for _, key, raw in malformed_objects():
            try:
                await c.create(raw)
            except Invalid as e:
                refused.append((key, e.field))
        assert refused == [
            ("default/conditions-null", "status.conditions[0]"), ("default/conditions-str", "status.conditions[0]"),
            ("default/poison-affinity", "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
                                        ".weight"),
            ("huge", "status.allocatable[cpu]")]
        assert sorted(o.key for o in store.peek_all("Pod")) == sorted(HARMLESS)
        # the null status is a status left out: the pod gets the one the server gives on create
        status = store.peek("Pod", "default", "status-null").raw["status"]
        assert status == {"phase": "Pending", "qosClass": "Burstable"}


def test_a_daemon_started_on_a_backend_holding_malformed_objects_keeps_serving_and_binds_every_pod(
        daemon_factory, tmp_path: Path, summary):
    data = tmp_path / "data"
    backend = SQLiteBackend(data)

    async def seed() -> None:
        await backend.load_all()
        await _write_straight(backend, malformed_objects())
        await backend.close()

    asyncio.run(seed())
    with sqlite3.connect(backend.path) as db:  # a row that is not JSON at all
        db.execute("INSERT INTO objects VALUES ('Pod', 'default/garbage', 99, '{not json')")
    restarts = 0
    for _ in range(2):  # before and after a restart
        d = daemon_factory(data_dir=data)
        restarts += 1
        manifests = tmp_path / "m.yaml"
        manifests.write_text(nodes_yaml(3))
        d.cli("apply", "-f", str(manifests))
        with d.client() as c:
            c.apply([pod_manifest(f"ordinary-{restarts}-{i}", "100m") for i in range(20)])
            events = c.events("Pod", "garbage", "default")
        assert [e["reason"] for e in events] == ["Quarantined"]

        def all_bound() -> bool | None:
            with d.client() as c:
                pods, _ = c.list("Pod", "default")
            mine = [p for p in pods if p["metadata"]["name"].startswith(f"ordinary-{restarts}-")]
            return True if len(mine) == 20 and all(p["spec"].get("nodeName") for p in mine) else None

        poll(all_bound, "20 ordinary pods bound")
        listed = d.cli("get", "pods", "-A", "-o", "json")
        assert "poison-affinity" not in listed.stdout
        assert d.terminate() == 0
    summary(f"stored-malformed: objects={len(malformed_objects()) + 1} "
            f"quarantined={len(malformed_objects()) + 1 - len(HARMLESS)} "
            f"restarts={restarts} ordinary-bound=40/40 crashes=0")


async def test_a_stored_object_an_older_version_accepted_stays_served_when_only_its_rules_tightened():
    """Only shapes are checked on load: a bound pod refused today for a rule (not a
    type) keeps being served, so its node's resources stay counted."""
    backend = InMemoryBackend()
    older = {**pod("older", nodeName="node-0", tolerations=[{"key": "k", "operator": "Exists", "value": "v"}],
                   containers=[]),
             "metadata": {"name": "Older_Name", "namespace": "default"}}
    await _write_straight(backend, [("Pod", "default/Older_Name", older)])
    async with running(backend) as (store, c):
        assert store.quarantined == {}
        assert store.peek("Pod", "default", "Older_Name").node_name == "node-0"
        with pytest.raises(Invalid):  # a client writing it today is refused
            await c.create({**older, "metadata": {"name": "older", "namespace": "default"}})


async def test_loading_fills_the_objects_it_is_handed_and_says_what_it_left_out_without_a_store():
    from actors.store.loading import load_objects

    backend = InMemoryBackend()
    good = ("Pod", "default/good", {**pod("good"), "status": {"phase": "Pending"}})
    await _write_straight(backend, [malformed_objects()[1], good])
    objects: dict[str, dict[str, Any]] = {"Pod": {}, "Node": {}}
    loaded = await load_objects(backend, 1 << 20, objects)
    assert list(objects["Pod"]) == ["default/good"] and not objects["Node"]
    assert loaded.resource_version == 2
    assert [(kind, key) for kind, key, _ in loaded.quarantined] == [("Pod", "default/conditions-null")]
