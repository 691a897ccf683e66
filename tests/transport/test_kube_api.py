"""The Kubernetes REST API (transport.kube) over real HTTP on loopback, on a real
Store through the same StoreService the msgpack port uses."""
from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator

import aiohttp
import pytest

from actors.store import Store, StoreClient
from actors.store.memory import InMemoryBackend
from actors.store.messages import RecordEvent
from transport.http.app import HttpDeps, make_http_app, start_http
from transport.http.metrics import SchedulerMetrics
from transport.kube import KubeDeps
from transport.server.service import StoreService

from tests.transport.conftest import node, pod

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"


class Api:
    def __init__(self, base: str, session: aiohttp.ClientSession, store: Store) -> None:
        self.base, self.s, self.store = base, session, store

    async def call(self, method: str, path: str, body: Any = None, ctype: str = "application/json",
                   accept: str = "application/json") -> tuple[int, Any]:
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        headers = {"Accept": accept}
        if data is not None and ctype:
            headers["Content-Type"] = ctype
        async with self.s.request(method, self.base + path, data=data, headers=headers) as r:
            text = await r.text()
            return r.status, json.loads(text) if text.strip().startswith(("{", "[")) else text


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    store = Store(InMemoryBackend())
    await store.load()
    task = asyncio.get_running_loop().create_task(store.run())
    deps = HttpDeps(ready=lambda: True, metrics=SchedulerMetrics(),
                    kube=KubeDeps(service=StoreService(store), profiles=frozenset({"default-scheduler"})))
    runner, (host, port) = await start_http(make_http_app(deps), "127.0.0.1", 0)
    async with aiohttp.ClientSession() as s:
        api = Api(f"http://{host}:{port}", s, store)
        # Creating in a namespace needs the namespace (NamespaceLifecycle), as in kube-apiserver.
        status, _ = await api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                                  "metadata": {"name": "demo"}})
        assert status == 201
        yield api
    await runner.cleanup()
    store.inbox.close()
    await task


async def test_discovery_lists_every_stored_kind_with_scope_short_names_and_subresources(api):
    status, v = await api.call("GET", "/version")
    assert status == 200 and (v["major"], v["minor"]) == ("1", "32")
    _, core = await api.call("GET", "/api")
    assert core["versions"] == ["v1"]
    _, groups = await api.call("GET", "/apis")
    names = {g["name"] for g in groups["groups"]}
    assert {"scheduling.x-k8s.io", "apps", "policy", "scheduling.k8s.io", "storage.k8s.io"} <= names
    _, v1 = await api.call("GET", "/api/v1")
    by_name = {r["name"]: r for r in v1["resources"]}
    assert by_name["pods"]["shortNames"] == ["po"] and by_name["pods"]["namespaced"] is True
    assert by_name["nodes"]["namespaced"] is False and by_name["namespaces"]["shortNames"] == ["ns"]
    assert by_name["pods/binding"]["kind"] == "Binding" and by_name["pods/binding"]["verbs"] == ["create"]
    assert by_name["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert by_name["events"]["shortNames"] == ["ev"] and "watch" in by_name["pods"]["verbs"]
    _, pg = await api.call("GET", "/apis/scheduling.x-k8s.io/v1alpha1")
    assert pg["resources"][0]["shortNames"] == ["pg", "pgs"] and pg["resources"][0]["kind"] == "PodGroup"
    status, missing = await api.call("GET", "/apis/nope.example.com/v1")
    assert status == 404 and missing["kind"] == "Status"


async def test_openapi_v3_tags_each_kinds_patch_with_its_gvk_and_field_validation(api):
    _, index = await api.call("GET", "/openapi/v3")
    url = index["paths"]["apis/scheduling.x-k8s.io/v1alpha1"]["serverRelativeURL"]
    assert "?hash=" in url
    _, doc = await api.call("GET", url)
    op = doc["paths"]["/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups/{name}"]["patch"]
    assert op["x-kubernetes-group-version-kind"] == {"group": "scheduling.x-k8s.io", "version": "v1alpha1",
                                                     "kind": "PodGroup"}
    assert any(p["name"] == "fieldValidation" and p["in"] == "query" for p in op["parameters"])
    assert "application/strategic-merge-patch+json" not in op["requestBody"]["content"]


async def test_create_get_list_with_selectors_paging_and_kube_errors(api):
    for i, labels in enumerate(({"app": "web"}, {"app": "db"}, {"app": "web"})):
        status, created = await api.call("POST", "/api/v1/namespaces/demo/pods", pod(f"p{i}", namespace="demo", labels=labels),
                                         ctype="")  # the Python client sends no Content-Type
        assert status == 201 and created["metadata"]["namespace"] == "demo" and created["metadata"]["uid"]
    status, err = await api.call("POST", "/api/v1/namespaces/demo/pods", pod("p0", namespace="demo"))
    assert (status, err["reason"], err["message"]) == (409, "AlreadyExists", 'pods "p0" already exists')
    status, err = await api.call("GET", "/api/v1/namespaces/demo/pods/nope")
    assert (status, err["reason"], err["message"], err["details"]) == (
        404, "NotFound", 'pods "nope" not found', {"name": "nope", "kind": "pods"})
    status, err = await api.call("POST", "/api/v1/namespaces/demo/pods", pod("x", namespace="other"))
    assert status == 400 and "does not match the namespace" in err["message"]
    _, lst = await api.call("GET", "/api/v1/namespaces/demo/pods?labelSelector=app%3Dweb")
    assert lst["kind"] == "PodList" and [p["metadata"]["name"] for p in lst["items"]] == ["p0", "p2"]
    _, lst = await api.call("GET", "/api/v1/pods?labelSelector=app!%3Dweb")
    assert [p["metadata"]["name"] for p in lst["items"]] == ["p1"]
    status, err = await api.call("GET", "/api/v1/pods?fieldSelector=spec.foo%3Dx")
    assert status == 400 and err["reason"] == "BadRequest" and "field label not supported: spec.foo" in err["message"]
    names, token = [], ""
    while True:
        _, page = await api.call("GET", f"/api/v1/pods?limit=2&continue={token}")
        names += [p["metadata"]["name"] for p in page["items"]]
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert names == ["p0", "p1", "p2"]
    _, gone = await api.call("DELETE", "/api/v1/namespaces/demo/pods/p1", {"propagationPolicy": "Background"})
    assert gone["metadata"]["name"] == "p1"
    status, _ = await api.call("GET", "/api/v1/namespaces/demo/pods/p1")
    assert status == 404


async def test_tables_have_kube_apiservers_columns_and_the_gang_columns(api):
    await api.call("POST", "/api/v1/nodes", {**node("n1"), "spec": {"unschedulable": True}})
    _, t = await api.call("GET", "/api/v1/nodes", accept=TABLE)
    assert t["kind"] == "Table"
    assert [(c["name"], c["priority"]) for c in t["columnDefinitions"]][:5] == [
        ("Name", 0), ("Status", 0), ("Roles", 0), ("Age", 0), ("Version", 0)]
    assert t["rows"][0]["cells"][:2] == ["n1", "Unknown,SchedulingDisabled"]
    assert t["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    await api.call("POST", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/demo/podgroups",
                   {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                    "metadata": {"name": "g"}, "spec": {"minMember": 2}})
    member = pod("m1", namespace="demo", labels={"scheduling.x-k8s.io/pod-group": "g"})
    await api.call("POST", "/api/v1/namespaces/demo/pods", member)
    _, t = await api.call("GET", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/demo/podgroups", accept=TABLE)
    cols = [c["name"] for c in t["columnDefinitions"]]
    row = dict(zip(cols, t["rows"][0]["cells"]))
    assert (row["Name"], row["Min Member"], row["Pods"], row["Bound"]) == ("g", 2, 1, 0)
    _, t = await api.call("GET", "/api/v1/namespaces/demo/pods/m1", accept=TABLE)
    cols = [(c["name"], c["priority"]) for c in t["columnDefinitions"]]
    assert ("Node", 1) in cols and ("Nominated Node", 1) in cols and t["rows"][0]["cells"][0] == "m1"


async def test_patch_types_status_subresource_and_unchanged_writes(api):
    _, n = await api.call("POST", "/api/v1/nodes", node("n1", labels={"a": "1"}))
    rv = n["metadata"]["resourceVersion"]
    _, n = await api.call("PATCH", "/api/v1/nodes/n1", {"spec": {"unschedulable": True}},
                          ctype="application/strategic-merge-patch+json")
    assert n["spec"]["unschedulable"] is True and n["metadata"]["resourceVersion"] != rv
    _, n = await api.call("PATCH", "/api/v1/nodes/n1", {"spec": {"unschedulable": None}},
                          ctype="application/strategic-merge-patch+json")
    assert "unschedulable" not in n["spec"]
    _, n = await api.call("PATCH", "/api/v1/nodes/n1", {"metadata": {"labels": {"a": None, "b": "2"}}},
                          ctype="application/merge-patch+json")
    assert n["metadata"]["labels"] == {"b": "2"}
    _, n = await api.call("PATCH", "/api/v1/nodes/n1", [{"op": "add", "path": "/metadata/labels/c", "value": "3"}],
                          ctype="application/json-patch+json")
    assert n["metadata"]["labels"] == {"b": "2", "c": "3"}
    same_rv = n["metadata"]["resourceVersion"]
    _, n = await api.call("PATCH", "/api/v1/nodes/n1", {"metadata": {"labels": {"c": "3"}}},
                          ctype="application/merge-patch+json")
    assert n["metadata"]["resourceVersion"] == same_rv  # a patch that changes nothing writes nothing
    # writes to the object ignore status; writes to /status change only status
    _, n = await api.call("PATCH", "/api/v1/nodes/n1", {"status": {"allocatable": {"cpu": "1"}}},
                          ctype="application/merge-patch+json")
    assert n["status"]["allocatable"]["cpu"] == "4"
    _, n = await api.call("PATCH", "/api/v1/nodes/n1/status",
                          {"status": {"allocatable": {"cpu": "2"}}, "metadata": {"labels": {"x": "y"}}},
                          ctype="application/merge-patch+json")
    assert n["status"]["allocatable"]["cpu"] == "2" and "x" not in n["metadata"]["labels"]
    status, err = await api.call("PATCH", "/api/v1/nodes/n1", {"spec": {}}, ctype="text/plain")
    assert status == 415 and err["reason"] == "UnsupportedMediaType"
    stale = {**n, "metadata": {**n["metadata"], "resourceVersion": rv}}
    status, err = await api.call("PUT", "/api/v1/nodes/n1", stale)
    assert status == 409 and err["reason"] == "Conflict" and "has been modified" in err["message"]


async def test_podgroups_refuse_strategic_merge_and_server_side_apply_creates_then_merges(api):
    path = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/demo/podgroups/g"
    body = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": {"name": "g"},
            "spec": {"minMember": 2}}
    status, g = await api.call("PATCH", path + "?fieldManager=kubectl&force=false", body,
                               ctype="application/apply-patch+yaml")
    assert status == 201 and g["spec"]["minMember"] == 2
    status, g = await api.call("PATCH", path + "?fieldManager=kubectl", {**body, "spec": {"minMember": 3}},
                               ctype="application/apply-patch+yaml")
    assert status == 200 and g["spec"]["minMember"] == 3
    status, err = await api.call("PATCH", path, {"spec": {"minMember": 4}},
                                 ctype="application/strategic-merge-patch+json")
    assert status == 415 and "strategic" not in err["message"]


async def test_bindings_only_for_pods_no_ksched_profile_serves(api):
    await api.call("POST", "/api/v1/nodes", node("n1"))
    await api.call("POST", "/api/v1/namespaces/demo/pods", pod("ours", namespace="demo"))
    other = pod("theirs", namespace="demo")
    other["spec"]["schedulerName"] = "my-scheduler"
    await api.call("POST", "/api/v1/namespaces/demo/pods", other)
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "ours"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}
    status, err = await api.call("POST", "/api/v1/namespaces/demo/pods/ours/binding", binding)
    assert status == 403 and err["reason"] == "Forbidden"
    status, ok = await api.call("POST", "/api/v1/namespaces/demo/bindings", {**binding, "metadata": {"name": "theirs"}})
    assert (status, ok["status"], ok["code"]) == (201, "Success", 201)
    _, p = await api.call("GET", "/api/v1/namespaces/demo/pods/theirs")
    assert p["spec"]["nodeName"] == "n1"
    assert {"type": "PodScheduled", "status": "True"} in p["status"]["conditions"]
    status, err = await api.call("POST", "/api/v1/namespaces/demo/pods/theirs/binding", binding)
    assert status == 409 and err["message"] == ('Operation cannot be fulfilled on pods/binding "theirs": '
                                                'pod theirs is already assigned to node "n1"')


async def _recorded(api: Api) -> None:
    """The events told to the store are committed (an ask after them is answered after their commit)."""
    await StoreClient(api.store).events("Pod", "demo/none")


async def test_events_are_listed_with_involved_object_selectors(api):
    _, p = await api.call("POST", "/api/v1/namespaces/demo/pods", pod("p1", namespace="demo"))
    api.store.tell(RecordEvent(kind="Pod", key="demo/p1", type="Normal", reason="Scheduled",
                               message="Successfully assigned demo/p1 to n1"))
    api.store.tell(RecordEvent(kind="Pod", key="demo/p2", type="Warning", reason="FailedScheduling", message="no"))
    await _recorded(api)
    uid = p["metadata"]["uid"]
    _, evs = await api.call("GET", "/api/v1/namespaces/demo/events?fieldSelector=involvedObject.name%3Dp1,"
                                   f"involvedObject.namespace%3Ddemo,involvedObject.uid%3D{uid}")
    assert [(e["reason"], e["involvedObject"]["uid"], e["source"]["component"]) for e in evs["items"]] == [
        ("Scheduled", uid, "default-scheduler")]
    _, evs = await api.call("GET", "/api/v1/events?fieldSelector=type!%3DNormal")
    assert [e["reason"] for e in evs["items"]] == ["FailedScheduling"]
    name = evs["items"][0]["metadata"]["name"]
    assert name.startswith("p2.") and evs["items"][0]["count"] == 1
    status, one = await api.call("GET", f"/api/v1/namespaces/demo/events/{name}")
    assert status == 200 and one["metadata"]["resourceVersion"] == evs["items"][0]["metadata"]["resourceVersion"]
    status, err = await api.call("GET", "/api/v1/events?fieldSelector=involvedObject.color%3Dred")
    assert status == 400 and "involvedObject.color" in err["message"]


async def test_a_pod_created_again_lists_only_its_new_lifes_events_by_uid_and_events_are_watched(api):
    _, old = await api.call("POST", "/api/v1/namespaces/demo/pods", pod("p1", namespace="demo"))
    api.store.tell(RecordEvent(kind="Pod", key="demo/p1", type="Warning", reason="FailedScheduling", message="old"))
    await _recorded(api)
    await api.call("DELETE", "/api/v1/namespaces/demo/pods/p1")
    _, new = await api.call("POST", "/api/v1/namespaces/demo/pods", pod("p1", namespace="demo"))
    _, listed = await api.call("GET", "/api/v1/namespaces/demo/events")
    watch = asyncio.ensure_future(_watch_lines(
        api, "/api/v1/namespaces/demo/events?watch=true&fieldSelector=involvedObject.name%3Dp1"
             f"&resourceVersion={listed['metadata']['resourceVersion']}", 1))
    api.store.tell(RecordEvent(kind="Pod", key="demo/p1", type="Normal", reason="Scheduled", message="new"))
    [added] = await asyncio.wait_for(watch, 10)
    assert (added["type"], added["object"]["reason"]) == ("ADDED", "Scheduled")
    uid = new["metadata"]["uid"]
    _, evs = await api.call("GET", "/api/v1/namespaces/demo/events?fieldSelector=involvedObject.name%3Dp1,"
                                   f"involvedObject.namespace%3Ddemo,involvedObject.uid%3D{uid}")
    assert [e["message"] for e in evs["items"]] == ["new"]
    _, evs = await api.call("GET", "/api/v1/namespaces/demo/events?fieldSelector=involvedObject.uid%3D"
                                   + old["metadata"]["uid"])
    assert [e["message"] for e in evs["items"]] == ["old"]


async def test_events_print_kubectls_columns_and_a_client_may_create_one_in_its_objects_namespace(api):
    body = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "n1.abc", "namespace": "default"},
            "involvedObject": {"kind": "Node", "name": "n1"}, "reason": "Rebooted", "type": "Warning",
            "message": "node n1 rebooted", "source": {"component": "kubelet", "host": "n1"}, "count": 3,
            "firstTimestamp": "2020-01-01T00:00:00Z", "lastTimestamp": "2020-01-01T00:00:00Z"}
    status, made = await api.call("POST", "/api/v1/namespaces/default/events", body)
    assert status == 201 and made["count"] == 3
    wrong = {**body, "metadata": {"name": "x.1"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "demo"}}
    status, err = await api.call("POST", "/api/v1/namespaces/default/events", wrong)
    assert status == 422 and "involvedObject.namespace" in err["message"]
    status, tbl = await api.call("GET", "/api/v1/namespaces/default/events",
                                 accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    assert [c["name"] for c in tbl["columnDefinitions"]] == [
        "Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"]
    cells = tbl["rows"][0]["cells"]
    assert cells[1:7] == ["Warning", "Rebooted", "node/n1", "", "kubelet, n1", "node n1 rebooted"]
    assert cells[8:] == [3, "n1.abc"]


async def _watch_lines(api: Api, path: str, n: int, accept: str = "application/json") -> list[dict[str, Any]]:
    out = []
    async with api.s.get(api.base + path, headers={"Accept": accept}) as r:
        assert r.status == 200
        while len(out) < n:
            line = await r.content.readline()
            if not line:
                break
            assert line.endswith(b"\n")
            out.append(json.loads(line))
    return out


async def test_watch_replays_from_a_version_and_sends_deleted_when_a_pod_stops_matching(api):
    _, a = await api.call("POST", "/api/v1/namespaces/demo/pods", pod("a", namespace="demo"))
    rv = a["metadata"]["resourceVersion"]
    await api.call("POST", "/api/v1/namespaces/demo/pods", pod("b", namespace="demo"))
    await api.call("POST", "/api/v1/nodes", node("n1"))
    path = (f"/api/v1/namespaces/demo/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"
            "&fieldSelector=spec.nodeName%3D")  # unbound pods only
    async with api.s.get(api.base + path) as r:
        first = json.loads(await r.content.readline())
        assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "b")  # a is before rv
        await StoreService(api.store).bind("demo", "b", "n1")  # b no longer matches
        gone = json.loads(await r.content.readline())
        assert (gone["type"], gone["object"]["metadata"]["name"]) == ("DELETED", "b")
        await api.call("DELETE", "/api/v1/namespaces/demo/pods/a")
        await api.call("POST", "/api/v1/namespaces/demo/pods", pod("c", namespace="demo"))
        removed, added = json.loads(await r.content.readline()), json.loads(await r.content.readline())
        assert (removed["type"], removed["object"]["metadata"]["name"]) == ("DELETED", "a")
        # a deletion carries its own resourceVersion, so a client resuming from it does not see it again
        assert int(removed["object"]["metadata"]["resourceVersion"]) == int(added["object"]["metadata"]["resourceVersion"]) - 1


async def test_a_watch_from_a_compacted_version_gets_one_410_error_event(api):
    for i in range(3):
        await api.call("POST", "/api/v1/nodes", node(f"n{i}"))
    api.store.history.reset(api.store.resource_version)  # compaction: nothing before now can be replayed
    lines = await _watch_lines(api, "/api/v1/nodes?watch=true&resourceVersion=1", 2)
    assert len(lines) == 1 and lines[0]["type"] == "ERROR"
    assert (lines[0]["object"]["code"], lines[0]["object"]["reason"]) == (410, "Expired")


async def test_table_watch_events_carry_one_row_tables(api):
    await api.call("POST", "/api/v1/nodes", node("n1"))
    lines = await _watch_lines(api, "/api/v1/nodes?watch=true&resourceVersion=0", 1, accept=TABLE)
    assert lines[0]["type"] == "ADDED" and lines[0]["object"]["kind"] == "Table"
    assert lines[0]["object"]["rows"][0]["cells"][0] == "n1" and lines[0]["object"]["columnDefinitions"]


async def test_a_body_larger_than_one_read_is_read_whole_and_one_above_the_limit_is_413(api):
    big = pod("big", namespace="demo")
    big["spec"]["containers"][0]["args"] = ["x" * 1000] * 900  # many TCP reads, under the store's object limit
    status, created = await api.call("POST", "/api/v1/namespaces/demo/pods", big)
    assert status == 201 and len(created["spec"]["containers"][0]["args"]) == 900
    huge = pod("huge", namespace="demo")
    huge["metadata"]["annotations"] = {"blob": "x" * (4 << 20)}
    status, err = await api.call("POST", "/api/v1/namespaces/demo/pods", huge)
    assert status == 413 and err["reason"] == "RequestEntityTooLarge"


async def test_delete_collection_unknown_paths_and_verbs_a_resource_does_not_have(api):
    for name, app in (("a", "web"), ("b", "db"), ("c", "web")):
        await api.call("POST", "/api/v1/namespaces/demo/pods", pod(name, namespace="demo", labels={"app": app}))
    status, gone = await api.call("DELETE", "/api/v1/namespaces/demo/pods?labelSelector=app%3Dweb")
    assert status == 200 and [p["metadata"]["name"] for p in gone["items"]] == ["a", "c"]
    _, left = await api.call("GET", "/api/v1/namespaces/demo/pods")
    assert [p["metadata"]["name"] for p in left["items"]] == ["b"]
    status, err = await api.call("GET", "/api/v1/widgets")
    assert status == 404 and err["reason"] == "NotFound"
    status, err = await api.call("GET", "/api/v1/pods/b")  # a namespaced item needs its namespace
    assert status == 404
    status, err = await api.call("GET", "/api/v1/namespaces/demo/bindings")
    assert status == 405 and err["reason"] == "MethodNotAllowed"
    status, err = await api.call("PUT", "/api/v1/namespaces/demo/pods/b/binding", {})
    assert status == 405
    status, err = await api.call("POST", "/api/v1/namespaces/demo/pods?dryRun=All", pod("d", namespace="demo"))
    assert status == 400 and "dryRun" in err["message"]
    _, left = await api.call("GET", "/api/v1/namespaces/demo/pods")
    assert [p["metadata"]["name"] for p in left["items"]] == ["b"]  # the dry run stored nothing


async def test_an_object_stored_without_its_namespace_is_served_in_default_so_describe_finds_its_events(api):
    await StoreClient(api.store).create({"kind": "Pod", "metadata": {"name": "bare"},
                                         "spec": {"containers": [{"name": "c", "image": "x"}]}})
    _, got = await api.call("GET", "/api/v1/namespaces/default/pods/bare")
    assert got["metadata"]["namespace"] == "default"
    _, listed = await api.call("GET", "/api/v1/pods")
    assert [p["metadata"].get("namespace") for p in listed["items"] if p["metadata"]["name"] == "bare"] == ["default"]
