"""The Store actor: validation, versions, selectors, bind/status, watch, group commit."""
from __future__ import annotations

import asyncio

import pytest

from actors.store import AlreadyExists, Conflict, Invalid, NotFound, StoreError, WatchEvent
from actors.store.memory import InMemoryBackend

from tests.actors.store_helpers import running


def pod(name: str, node: str = "", labels: dict | None = None, cpu: str = "100m", ns: str = "default") -> dict:
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels or {}}, "spec": spec}


async def test_resource_version_is_one_increasing_integer_across_kinds() -> None:
    async with running() as (_, c):
        a = await c.create({"kind": "Node", "metadata": {"name": "n1"}})
        b = await c.create(pod("p"))
        d = await c.delete("Pod", "default", "p")
        assert int(a["metadata"]["resourceVersion"]) < int(b["metadata"]["resourceVersion"])
        e = await c.create({"kind": "Node", "metadata": {"name": "n2"}})
        assert int(e["metadata"]["resourceVersion"]) == int(b["metadata"]["resourceVersion"]) + 2
        assert d["metadata"]["name"] == "p"


async def test_invalid_object_names_the_field_and_changes_nothing() -> None:
    async with running() as (store, c):
        bad = pod("bad", cpu="1.5.5")
        with pytest.raises(Invalid) as err:
            await c.apply([pod("good"), bad])
        assert err.value.field == "spec.containers[0].resources.requests[cpu]"
        assert store.resource_version == 0
        assert (await c.list("Pod"))[0] == []


async def test_stale_resource_version_is_a_conflict() -> None:
    async with running() as (_, c):
        created = await c.create(pod("p"))
        await c.update({**created, "metadata": {**created["metadata"], "labels": {"a": "b"}}})
        with pytest.raises(Conflict):
            await c.update({**created, "metadata": {**created["metadata"], "labels": {"a": "c"}}})


async def test_create_twice_is_already_exists_and_missing_objects_are_not_found() -> None:
    async with running() as (_, c):
        await c.create(pod("p"))
        with pytest.raises(AlreadyExists):
            await c.create(pod("p"))
        with pytest.raises(NotFound):
            await c.get("Pod", "default", "nope")
        with pytest.raises(NotFound):
            await c.delete("Node", "", "nope")


@pytest.mark.parametrize(
    ("label_selector", "field_selector", "namespace", "names"),
    [
        ("app=web", None, "", ["a", "c"]),
        ("app!=web", None, "", ["b"]),
        ("app in (web,db)", None, "", ["a", "b", "c"]),
        (None, "spec.nodeName=n1", "", ["a"]),
        (None, "spec.nodeName=", "", ["b", "c"]),
        ("app=web", "spec.nodeName!=n1", "", ["c"]),
        (None, None, "other", ["c"]),
        (None, "status.phase=Pending", "", ["a", "b", "c"]),
    ],
    ids=["label-eq", "label-neq", "label-set", "node", "unbound", "label-and-field", "namespace", "phase"],
)
async def test_list_filters_by_namespace_label_and_field_selectors(label_selector, field_selector, namespace, names) -> None:  # noqa: ANN001
    async with running() as (_, c):
        await c.apply([pod("a", "n1", {"app": "web"}), pod("b", "", {"app": "db"}), pod("c", "", {"app": "web"}, ns="other")])
        items, _ = await c.list("Pod", namespace, label_selector, field_selector)
        assert sorted(i["metadata"]["name"] for i in items) == names


async def test_unknown_field_selector_is_invalid() -> None:
    async with running() as (_, c):
        with pytest.raises(Invalid):
            await c.list("Pod", field_selector="spec.foo=x")


async def test_bind_sets_node_name_and_pod_scheduled_true_once() -> None:
    async with running() as (_, c):
        await c.create(pod("p"))
        bound = await c.bind("default", "p", "n1")
        assert bound["spec"]["nodeName"] == "n1"
        assert {"type": "PodScheduled", "status": "True"} in bound["status"]["conditions"]
        with pytest.raises(Conflict):
            await c.bind("default", "p", "n2")


async def test_status_update_sets_condition_and_nominated_node_and_clears_it() -> None:
    async with running() as (_, c):
        await c.create(pod("p"))
        cond = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes are available"}
        got = await c.update_pod_status("default", "p", condition=cond, nominated_node_name="n1")
        assert got["status"]["conditions"] == [cond]
        assert got["status"]["nominatedNodeName"] == "n1"
        got = await c.update_pod_status("default", "p", nominated_node_name="")
        assert "nominatedNodeName" not in got["status"]


async def test_events_are_kept_per_object() -> None:
    async with running() as (_, c):
        c.record_event("Pod", "default/p", "Warning", "FailedScheduling", "0/3 nodes are available")
        c.record_event("Pod", "default/q", "Normal", "Scheduled", "Successfully assigned default/q to n1")
        events = await c.events("Pod", "default/p")
        assert [(e.reason, e.message) for e in events] == [("FailedScheduling", "0/3 nodes are available")]


async def test_watch_replays_from_a_resource_version_then_streams_changes() -> None:
    seen: list[tuple[str, str, int]] = []

    def sink(ev: WatchEvent) -> None:
        seen.append((ev.type, ev.obj.name, ev.resource_version))

    async with running() as (_, c):
        first = await c.create(pod("a"))
        await c.create(pod("b"))
        await c.watch(sink, frozenset({"Pod"}), from_rv=int(first["metadata"]["resourceVersion"]))
        await c.create({"kind": "Node", "metadata": {"name": "n"}})  # another kind: not delivered
        await c.delete("Pod", "default", "a")
        assert [(t, n) for t, n, _ in seen] == [("ADDED", "b"), ("DELETED", "a")]
        assert [rv for _, _, rv in seen] == sorted(rv for _, _, rv in seen)


async def test_writes_queued_together_are_committed_in_one_batch() -> None:
    backend = InMemoryBackend()
    async with running(backend) as (store, c):
        results = await asyncio.gather(*(c.create(pod(f"p{i}")) for i in range(20)))
        assert len(results) == 20
        assert backend.commits == 1


async def test_a_failed_commit_fails_every_write_in_the_batch_and_rolls_back() -> None:
    backend = InMemoryBackend()
    async with running(backend) as (store, c):
        await c.create(pod("kept"))
        backend.fail_next = OSError("disk full")
        results = await asyncio.gather(c.create(pod("x")), c.delete("Pod", "default", "kept"), return_exceptions=True)
        assert all(isinstance(r, StoreError) for r in results)
        assert sorted(i["metadata"]["name"] for i in (await c.list("Pod"))[0]) == ["kept"]
        again = await c.create(pod("x"))
        assert again["metadata"]["name"] == "x"


async def test_a_new_store_on_the_same_backend_sees_what_was_committed() -> None:
    backend = InMemoryBackend()
    async with running(backend) as (_, c):
        await c.create(pod("p"))
        await c.bind("default", "p", "n1")
    async with running(backend) as (store, c):
        got = await c.get("Pod", "default", "p")
        assert got["spec"]["nodeName"] == "n1"
        assert store.resource_version == 2
