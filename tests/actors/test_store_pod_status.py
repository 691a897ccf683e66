"""A created pod gets status.phase Pending and its status.qosClass, as the pod
strategy's PrepareForCreate gives them, through the store (every front door); pods
stored before without them keep working."""
from __future__ import annotations

from actors.store.backend import Write
from actors.store.sqlite import SQLiteBackend

from tests.actors.store_helpers import pod, running


async def test_a_created_pod_is_pending_with_its_qos_class() -> None:
    async with running() as (_, c):
        made = await c.create(pod("a"))
        assert (made["status"]["phase"], made["status"]["qosClass"]) == ("Pending", "Burstable")
        stored = await c.get("Pod", "default", "a")
        assert (stored["status"]["phase"], stored["status"]["qosClass"]) == ("Pending", "Burstable")
        applied = (await c.apply([{**pod("b"), "status": {"phase": "Running", "qosClass": "Guaranteed"}}]))[0]
        # a writer's phase is kept; the class is the server's to compute
        assert (applied["status"]["phase"], applied["status"]["qosClass"]) == ("Running", "Burstable")


async def test_a_pod_stored_without_phase_or_qos_class_is_served_updated_and_bound(tmp_path) -> None:
    old = {**pod("old"), "apiVersion": "v1"}
    old["metadata"] = {**old["metadata"], "uid": "u-1", "creationTimestamp": "2026-01-01T00:00:00Z",
                       "resourceVersion": "1"}
    backend = SQLiteBackend(tmp_path)
    await backend.load_all()
    await backend.commit([Write(kind="Pod", key="default/old", raw=old, resource_version=1)])
    await backend.close()
    async with running(SQLiteBackend(tmp_path)) as (_, c):
        got = await c.get("Pod", "default", "old")
        assert "status" not in got
        changed = await c.update({**got, "metadata": {**got["metadata"], "labels": {"a": "b"}}})
        assert changed["metadata"]["labels"] == {"a": "b"}
        await c.create({"kind": "Node", "metadata": {"name": "n"},
                        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}})
        bound = await c.bind("default", "old", "n")
        assert bound["spec"]["nodeName"] == "n"


def _parsed(p: object) -> tuple[object, ...]:
    """Every parsed field of a stored Pod and of its metadata (the lazily parsed
    affinity terms left out: both forms parse them on first use)."""
    from framework.api.meta import ObjectMeta
    from framework.api.pod import _POD_SLOTS
    return (tuple(repr(getattr(p, s)) for s in _POD_SLOTS if s not in ("meta", "raw", "_pod_affinity_terms")),
            tuple(getattr(p.meta, s) for s in ObjectMeta.__slots__))  # type: ignore[attr-defined]


async def test_a_bound_and_a_status_written_pod_are_stored_as_parsing_them_whole_would_give() -> None:
    from actors.store.messages import UpdatePodStatus
    from framework.api.objects import parse_object
    async with running() as (store, c):
        await c.create({"kind": "Node", "metadata": {"name": "n"},
                        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}}})
        await c.create({**pod("a"), "metadata": {"name": "a", "labels": {"app": "web"}, "annotations": {"x": "y"}}})
        await c.create(pod("b"))
        await c.bind("default", "a", "n")
        c.send(UpdatePodStatus(namespace="default", name="b", uid="", nominated_node_name="n",
                               condition={"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                          "message": "0/1 nodes are available"}))
        await c.get("Pod", "default", "b")
        for name in ("a", "b"):
            stored = store.peek("Pod", "default", name)
            assert stored is not None and stored.meta.resource_version
            assert _parsed(stored) == _parsed(parse_object(stored.raw))
        assert store.peek("Pod", "default", "a").node_name == "n"
        assert store.peek("Pod", "default", "b").nominated_node_name == "n"


async def test_pods_of_one_template_share_a_qos_class_but_equal_looking_resources_of_other_types_do_not() -> None:
    """The class is remembered by the exact encoding of what it is computed from: 1 and
    True (equal in Python) are classed apart, and a changed request changes the class."""
    from actors.store.strategies import created_pod_status
    from framework.api.qos import pod_qos_class

    def shaped(name: str, cpu: object, memory: object) -> dict:
        amounts = {"cpu": cpu, "memory": memory}
        return {"kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": dict(amounts), "limits": dict(amounts)}}]}}

    pods = [shaped("a", 1, 1), shaped("b", True, True), shaped("c", 1, 1), shaped("d", 1.0, 1)]
    classes = [created_pod_status(p)["status"]["qosClass"] for p in pods]
    assert classes == ["Guaranteed", "BestEffort", "Guaranteed", "Guaranteed"]
    assert classes == [pod_qos_class(p) for p in pods]
    async with running() as (_, c):
        small = (await c.apply([pod("x"), pod("y")]))
        assert [p["status"]["qosClass"] for p in small] == ["Burstable", "Burstable"]
        same = {**pod("z"), "spec": {**pod("z")["spec"], "containers": [
            {**k, "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}} for k in pod("z")["spec"]["containers"]]}}
        assert (await c.create(same))["status"]["qosClass"] == "Guaranteed"
