"""A binding or status update writes a new version of the pod that shares its
unchanged parts with the previous one and leaves the previous one as it was."""
from __future__ import annotations

from tests.actors.store_helpers import pod, running


async def test_binding_leaves_the_previous_version_unchanged_and_shares_its_containers() -> None:
    async with running() as (store, c):
        await c.create(pod("p"))
        before = store.peek("Pod", "default", "p")
        await c.bind("default", "p", "n1")
        after = store.peek("Pod", "default", "p")
        assert (before.node_name, after.node_name) == ("", "n1")
        assert "nodeName" not in before.raw["spec"] and "conditions" not in (before.raw.get("status") or {})
        assert [x["type"] for x in after.raw["status"]["conditions"]] == ["PodScheduled"]
        assert after.raw["spec"]["containers"] is before.raw["spec"]["containers"]


async def test_a_status_update_does_not_change_the_conditions_of_the_version_before_it() -> None:
    async with running() as (store, c):
        await c.create(pod("p"))
        await c.bind("default", "p", "n1")
        bound = store.peek("Pod", "default", "p")
        await c.update_pod_status("default", "p", phase="Succeeded",
                                  condition={"type": "Ready", "status": "False"})
        done = store.peek("Pod", "default", "p")
        assert [x["type"] for x in bound.raw["status"]["conditions"]] == ["PodScheduled"]
        assert [x["type"] for x in done.raw["status"]["conditions"]] == ["PodScheduled", "Ready"]
        assert (bound.phase, done.phase) == ("Pending", "Succeeded")


async def test_a_replayed_binding_carries_the_pod_before_and_after_it_parsed_again() -> None:
    seen = []
    async with running() as (_, c):
        created = await c.create(pod("p"))
        await c.bind("default", "p", "n1")
        await c.watch(seen.append, frozenset({"Pod"}), from_rv=int(created["metadata"]["resourceVersion"]))
    assert [(e.type, e.old.node_name, e.obj.node_name) for e in seen] == [("MODIFIED", "", "n1")]


async def test_the_pod_a_binding_or_status_update_stores_reads_as_its_stored_dict_parsed_afresh() -> None:
    from framework.api.objects import parse_object

    async with running() as (store, c):
        await c.create(pod("p", labels={"app": "web"}))
        await c.update_pod_status("default", "p", nominated_node_name="n2")
        await c.bind("default", "p", "n1")
        await c.update_pod_status("default", "p", phase="Running", condition={"type": "Ready", "status": "True"})
        stored = store.peek("Pod", "default", "p")
        fresh = parse_object(stored.raw)
    fields = ("key", "uid", "labels", "node_name", "phase", "nominated_node_name", "conditions", "start_time",
              "priority", "scheduler_name", "requests", "non_zero_cpu", "non_zero_memory")
    assert [getattr(stored, f) for f in fields] == [getattr(fresh, f) for f in fields]
    assert stored.meta.resource_version == fresh.meta.resource_version == stored.raw["metadata"]["resourceVersion"]
    assert (stored.node_name, stored.phase, stored.nominated_node_name) == ("n1", "Running", "")


async def test_a_created_object_shares_no_dict_with_the_manifest_the_caller_keeps() -> None:
    async with running() as (store, c):
        manifest = pod("p", labels={"app": "web"})
        await c.create(manifest)
        manifest["metadata"]["labels"]["app"] = "changed"
        manifest["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
        stored = store.peek("Pod", "default", "p")
        assert stored.labels == {"app": "web"}
        assert stored.raw["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "100m"
        assert stored.resource.milli_cpu == 100


async def test_pods_from_one_template_store_one_containers_list_and_a_different_pod_its_own() -> None:
    async with running() as (store, c):
        for name, cpu in (("a", "100m"), ("b", "100m"), ("c", "200m")):
            await c.create(pod(name, cpu=cpu))
        a, b, other = (store.peek("Pod", "default", n) for n in ("a", "b", "c"))
        assert a.raw["spec"]["containers"] is b.raw["spec"]["containers"]
        assert other.raw["spec"]["containers"] is not a.raw["spec"]["containers"]
        assert (a.resource.milli_cpu, other.resource.milli_cpu) == (100, 200)


async def test_pods_loaded_from_a_real_sqlite_file_share_their_containers_and_read_as_stored(tmp_path) -> None:
    from actors.store import Store
    from actors.store.sqlite import SQLiteBackend

    async with running(SQLiteBackend(str(tmp_path))) as (first, c):  # type: ignore[arg-type]
        for name in ("a", "b"):
            await c.create(pod(name, labels={"app": "web"}))
        await c.bind("default", "a", "n1")
    store = Store(SQLiteBackend(str(tmp_path)))
    await store.load()
    a, b = store.peek("Pod", "default", "a"), store.peek("Pod", "default", "b")
    await store.close()
    assert a.raw["spec"]["containers"] is b.raw["spec"]["containers"]
    assert (a.node_name, b.node_name, a.labels, a.resource.milli_cpu) == ("n1", "", {"app": "web"}, 100)
