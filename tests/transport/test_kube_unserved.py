"""What ksched does not serve is said so: workload controllers' kinds (listed in
discovery so kubectl reaches the server) and subresources a kubelet would answer are
404 Status objects naming them and what ksched serves; /openapi/v2 describes the
served kinds (JSON, or the protobuf kubectl asks for) and the CRD list is empty."""
from __future__ import annotations

import yaml

from tests.transport.conftest import pod
from tests.transport.test_kube_api import api  # noqa: F401 - the fixture: a store behind the HTTP port
from transport.kube.protobuf import fields
from transport.kube.openapi_v2 import PROTOBUF_ACCEPT


async def test_deployments_and_jobs_are_listed_for_kubectl_and_every_request_is_a_404_naming_them(api):  # noqa: F811
    _, apps = await api.call("GET", "/apis/apps/v1")
    assert "deployments" in {r["name"] for r in apps["resources"]}
    _, groups = await api.call("GET", "/apis")
    assert "batch" in {g["name"] for g in groups["groups"]}
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {}}
    status, err = await api.call("POST", "/apis/batch/v1/namespaces/demo/jobs", body)
    assert (status, err["reason"], err["details"]) == (404, "NotFound", {"group": "batch", "kind": "jobs"})
    assert err["message"].startswith("ksched stores no jobs.batch: it is a scheduler")
    assert "ksched serves: pods, nodes, namespaces" in err["message"]
    assert "podgroups.scheduling.x-k8s.io" in err["message"]
    status, err = await api.call("GET", "/apis/apps/v1/namespaces/demo/deployments/d")
    assert (status, err["details"]) == (404, {"name": "d", "group": "apps", "kind": "deployments"})


async def test_pod_logs_exec_and_eviction_are_404s_saying_why_and_which_subresources_are_served(api):  # noqa: F811
    await api.call("POST", "/api/v1/namespaces/demo/pods", pod("p", namespace="demo"))
    status, err = await api.call("GET", "/api/v1/namespaces/demo/pods/p/log")
    assert (status, err["message"]) == (404, "ksched serves no pods/log: ksched runs no containers (there is no "
                                             "kubelet); the subresources of pods it serves: pods/binding, pods/status")
    status, err = await api.call("POST", "/api/v1/namespaces/demo/pods/p/eviction", {})
    assert (status, err["message"]) == (404, "ksched serves no pods/eviction: ksched does not serve it; the "
                                             "subresources of pods it serves: pods/binding, pods/status")
    _, v1 = await api.call("GET", "/api/v1")  # kubectl drain evicts only when discovery lists pods/eviction
    assert "pods/eviction" not in {r["name"] for r in v1["resources"]}


async def test_openapi_v2_tags_each_served_kinds_patch_with_its_gvk_and_field_validation(api):  # noqa: F811
    status, doc = await api.call("GET", "/openapi/v2")
    assert status == 200 and doc["swagger"] == "2.0" and doc["definitions"] == {}
    op = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert op["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod", "version": "v1"}
    assert {"name": "fieldValidation", "in": "query", "type": "string"} in op["parameters"]
    assert not any("deployments" in path for path in doc["paths"])


def _one(buf: bytes, number: int) -> bytes:
    return next(v for n, v in fields(buf) if n == number)  # type: ignore[return-value]


async def test_openapi_v2_as_protobuf_is_gnostics_document_with_the_same_paths(api):  # noqa: F811
    async with api.s.get(api.base + "/openapi/v2", headers={"Accept": PROTOBUF_ACCEPT}) as r:
        assert r.headers["Content-Type"].endswith("+protobuf")
        body = await r.read()
    assert _one(body, 1) == b"2.0"
    _, doc = await api.call("GET", "/openapi/v2")
    paths = {}
    for n, named in fields(_one(body, 8)):  # Paths {2 path: NamedPathItem {1 name, 2 PathItem {8 patch}}}
        assert n == 2
        paths[_one(named, 1).decode()] = _one(_one(named, 2), 8)
    assert list(paths) == list(doc["paths"])
    op = paths["/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{namespace}/podgroups/{name}"]
    extensions = {_one(e, 1).decode(): yaml.safe_load(_one(_one(e, 2), 2)) for n, e in fields(op) if n == 13}
    assert extensions["x-kubernetes-group-version-kind"] == {"group": "scheduling.x-k8s.io", "kind": "PodGroup",
                                                             "version": "v1alpha1"}
    query_names = [_one(_one(_one(_one(p, 1), 2), 3), 4) for n, p in fields(op) if n == 8]
    assert b"fieldValidation" in query_names


async def test_ksched_has_no_custom_resource_definitions(api):  # noqa: F811
    status, crds = await api.call("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
    assert (status, crds["kind"], crds["items"]) == (200, "CustomResourceDefinitionList", [])


async def test_openapi_v3_describes_each_validated_kind_field_by_field(api):  # noqa: F811
    _, index = await api.call("GET", "/openapi/v3")
    _, doc = await api.call("GET", index["paths"]["api/v1"]["serverRelativeURL"])
    pod = doc["components"]["schemas"]["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    container = pod["properties"]["spec"]["properties"]["containers"]["items"]
    assert container["required"] == ["name"] and container["properties"]["name"] == {"type": "string"}
    assert container["properties"]["resources"]["properties"]["requests"]["additionalProperties"] == {
        "oneOf": [{"type": "string"}, {"type": "number"}]}
    assert pod["properties"]["status"]["properties"]["qosClass"]["enum"] == ["Guaranteed", "Burstable", "BestEffort"]
    op = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" not in op["requestBody"]["content"]  # apply keeps its own types
