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
