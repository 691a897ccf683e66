"""Objects as kube-apiserver keeps them, at the store (every front door goes through
it): the decode stage for a client's manifest (apiVersion, unknown fields per
fieldValidation), namespaces that must exist and take their contents when deleted,
defaulting (a Node's allocatable), workloads accepted with a warning, and the
create-time SchedulingGated condition."""
from __future__ import annotations

from typing import Any

import pytest

from actors.store import NotFound, StoreClient
from actors.store.messages import BadRequest
from tests.actors.store_helpers import running


def pod(name: str = "web", ns: str = "default", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}],
                     **spec}}


def misspelled() -> dict[str, Any]:
    p = pod()
    p["metadata"]["labesl"] = {"app": "web"}
    p["spec"]["nodeSelecter"] = {"disk": "ssd"}
    p["spec"]["containers"][0]["resources"]["requets"] = {"cpu": "1"}
    return p


async def _create(c: StoreClient, obj: dict[str, Any], mode: str | None = "Strict") -> tuple[dict[str, Any], list[str]]:
    said: list[str] = []
    return await c.create(obj, field_validation=mode, warnings=said), said


async def test_strict_refuses_every_unknown_field_by_its_path_and_stores_nothing() -> None:
    async with running() as (store, c):
        with pytest.raises(BadRequest) as e:
            await _create(c, misspelled())
        assert e.value.message == (
            'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
            'unknown field "metadata.labesl", unknown field "spec.containers[0].resources.requets", '
            'unknown field "spec.nodeSelecter"')
        assert store.peek("Pod", "default", "web") is None


async def test_warn_stores_the_object_without_the_unknown_fields_and_says_which() -> None:
    async with running() as (_, c):
        stored, said = await _create(c, misspelled(), "Warn")
        assert said == ['unknown field "metadata.labesl"', 'unknown field "spec.containers[0].resources.requets"',
                        'unknown field "spec.nodeSelecter"']
        assert "nodeSelecter" not in stored["spec"] and "labesl" not in stored["metadata"]
        assert stored["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "100m"}}


async def test_ignore_drops_unknown_fields_silently() -> None:
    async with running() as (_, c):
        stored, said = await _create(c, misspelled(), "Ignore")
        assert said == [] and "nodeSelecter" not in stored["spec"]


async def test_upstream_fields_ksched_does_not_read_are_known_not_unknown() -> None:
    p = pod(securityContext={"runAsUser": 1000}, imagePullSecrets=[{"name": "r"}])
    p["spec"]["containers"][0].update(livenessProbe={"httpGet": {"path": "/", "port": 80}}, tty=True)
    p["metadata"]["selfLink"] = "/api/v1/namespaces/default/pods/web"
    async with running() as (_, c):
        stored, said = await _create(c, p)
        assert said == [] and stored["spec"]["securityContext"] == {"runAsUser": 1000}


async def test_in_process_writers_without_field_validation_keep_the_lenient_decode() -> None:
    p = misspelled()
    del p["apiVersion"]
    async with running() as (_, c):
        stored, _ = await _create(c, p, None)
        assert stored["spec"]["nodeSelecter"] == {"disk": "ssd"}  # kept unread, as before


@pytest.mark.parametrize("version, message", [
    (None, "Object 'apiVersion' is missing in '"),
    ("apps/v1", "the API version in the data (apps/v1) does not match the expected API version (v1)"),
])
async def test_a_missing_or_wrong_api_version_is_refused(version: str | None, message: str) -> None:
    p = pod()
    if version is None:
        del p["apiVersion"]
    else:
        p["apiVersion"] = version
    async with running() as (_, c):
        with pytest.raises(BadRequest) as e:
            await _create(c, p)
        assert e.value.message.startswith(message)


async def test_an_apply_names_the_object_whose_fields_are_unknown_and_applies_none() -> None:
    good, bad = pod("a"), misspelled()
    async with running() as (store, c):
        with pytest.raises(BadRequest) as e:
            await c.apply_with_actions([good, bad], field_validation="Strict")
        assert e.value.message.startswith("objects[1] (Pod default/web): Pod in version")
        assert store.peek("Pod", "default", "a") is None


async def test_a_namespace_must_exist_and_the_builtin_ones_always_do() -> None:
    async with running() as (_, c):
        for ns in ("default", "kube-system", "kube-public"):
            await _create(c, pod("p", ns))
        with pytest.raises(NotFound) as e:
            await _create(c, pod("p", "team-a"))
        assert e.value.message == 'namespaces "team-a" not found'
        await _create(c, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
        await _create(c, pod("p", "team-a"))


async def test_deleting_a_namespace_deletes_what_it_holds_and_nothing_else() -> None:
    async with running() as (store, c):
        await _create(c, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
        await _create(c, pod("p", "team-a"))
        await _create(c, {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                          "metadata": {"name": "g", "namespace": "team-a"}, "spec": {"minMember": 1}})
        await _create(c, pod("p", "default"))
        await c.delete("Namespace", "", "team-a")
        assert store.peek("Pod", "team-a", "p") is None and store.peek("PodGroup", "team-a", "g") is None
        assert store.peek("Pod", "default", "p") is not None


async def test_a_node_without_allocatable_gets_its_capacity_on_create_and_on_update() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    async with running() as (_, c):
        stored, _ = await _create(c, node, None)
        assert stored["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}
        node["status"]["capacity"]["cpu"] = "8"
        updated = await c.update(node)
        assert updated["status"]["allocatable"]["cpu"] == "8"
        given = await c.update({**node, "status": {**node["status"], "allocatable": {"cpu": "7"}}})
        assert given["status"]["allocatable"] == {"cpu": "7"}  # one given is kept


REPLICA_SET = {  # kubernetes/website's controllers/frontend.yaml
    "apiVersion": "apps/v1", "kind": "ReplicaSet",
    "metadata": {"name": "frontend", "labels": {"app": "guestbook", "tier": "frontend"}},
    "spec": {"replicas": 3, "selector": {"matchLabels": {"tier": "frontend"}},
             "template": {"metadata": {"labels": {"tier": "frontend"}},
                          "spec": {"containers": [{"name": "php-redis",
                                                   "image": "us-docker.pkg.dev/google-samples/containers/gke/gb-frontend:v5"}]}}},
}
STATEFUL_SET = {  # kubernetes/website's application/web/web.yaml (the StatefulSet)
    "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
    "spec": {"serviceName": "nginx", "replicas": 2, "selector": {"matchLabels": {"app": "nginx"}},
             "template": {"metadata": {"labels": {"app": "nginx"}},
                          "spec": {"containers": [{"name": "nginx", "image": "registry.k8s.io/nginx-slim:0.21",
                                                   "ports": [{"containerPort": 80, "name": "web"}],
                                                   "volumeMounts": [{"name": "www",
                                                                     "mountPath": "/usr/share/nginx/html"}]}]}},
             "volumeClaimTemplates": [{"metadata": {"name": "www"},
                                       "spec": {"accessModes": ["ReadWriteOnce"],
                                                "resources": {"requests": {"storage": "1Gi"}}}}]},
}


@pytest.mark.parametrize("workload", [REPLICA_SET, STATEFUL_SET], ids=["ReplicaSet", "StatefulSet"])
async def test_the_official_workload_examples_are_accepted_with_a_no_controller_warning(workload: dict) -> None:
    async with running() as (_, c):
        stored, said = await _create(c, workload)
        assert stored["metadata"]["name"] == workload["metadata"]["name"]
        assert said == [f"ksched runs no controllers: no pods will be created from this {workload['kind']}"]


async def test_a_gated_pod_is_created_with_podscheduled_false_schedulinggated() -> None:
    async with running() as (_, c):
        stored, _ = await _create(c, pod(schedulingGates=[{"name": "example.com/quota"}]), None)
        assert stored["status"]["conditions"] == [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
             "message": "Scheduling is blocked due to non-empty scheduling gates"}]
        plain, _ = await _create(c, pod("plain"), None)
        assert "conditions" not in plain.get("status", {})


async def test_generate_name_is_honoured_on_a_client_create() -> None:
    p = pod()
    p["metadata"] = {"generateName": "web-"}
    async with running() as (_, c):
        a, _ = await _create(c, p)
        b, _ = await _create(c, p)
        assert a["metadata"]["name"].startswith("web-") and a["metadata"]["name"] != b["metadata"]["name"]


async def test_a_pod_created_again_under_the_same_name_shows_only_its_own_events() -> None:
    from actors.store.messages import GetEvents, RecordEvent
    from actors.base import new_reply

    async with running() as (store, c):
        await _create(c, pod("p"), None)
        store.tell(RecordEvent(kind="Pod", key="default/p", type="Warning", reason="FailedScheduling", message="old"))
        await c.delete("Pod", "default", "p")
        store.tell(RecordEvent(kind="Pod", key="default/p", type="Normal", reason="Preempted", message="gone"))
        assert [r.reason for r in await store.ask(GetEvents(kind="Pod", key="default/p", reply=new_reply()))] == [
            "FailedScheduling", "Preempted"]  # no object there: everything under the name
        await _create(c, pod("p"), None)
        store.tell(RecordEvent(kind="Pod", key="default/p", type="Normal", reason="Scheduled", message="new"))
        events = await store.ask(GetEvents(kind="Pod", key="default/p", reply=new_reply()))
        assert [(r.reason, r.message) for r in events] == [("Scheduled", "new")]
