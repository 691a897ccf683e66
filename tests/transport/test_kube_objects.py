"""The REST API's writes decode a body as kube-apiserver does: fieldValidation
(Strict: 400 naming each unknown field; Warn, the default: stored without them, a
Warning header each), apiVersion, and a namespace that must exist."""
from __future__ import annotations

import json

from tests.transport.test_kube_api import api  # noqa: F401 - the fixture: a store behind the HTTP port

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labesl": {"a": "b"}},
       "spec": {"nodeSelecter": {"disk": "ssd"}, "containers": [{"name": "c", "image": "nginx"}]}}


async def _post(api, path: str, body: dict) -> tuple[int, dict, list[str]]:  # noqa: F811
    async with api.s.post(api.base + path, data=json.dumps(body).encode(),
                          headers={"Content-Type": "application/json"}) as r:
        return r.status, json.loads(await r.text()), r.headers.getall("Warning", [])


async def test_strict_is_400_naming_each_unknown_field(api):  # noqa: F811
    status, err, _ = await _post(api, "/api/v1/namespaces/demo/pods?fieldValidation=Strict", POD)
    assert (status, err["reason"]) == (400, "BadRequest")
    assert err["message"] == ('Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
                              'unknown field "metadata.labesl", unknown field "spec.nodeSelecter"')


async def test_warn_by_default_stores_without_them_and_sends_a_warning_header_each(api):  # noqa: F811
    status, pod, warnings = await _post(api, "/api/v1/namespaces/demo/pods", POD)
    assert status == 201 and "nodeSelecter" not in pod["spec"]
    assert warnings == ['299 - "unknown field \\"metadata.labesl\\""', '299 - "unknown field \\"spec.nodeSelecter\\""']


async def test_a_missing_namespace_is_404_and_a_wrong_api_version_400(api):  # noqa: F811
    status, err, _ = await _post(api, "/api/v1/namespaces/nons/pods", {**POD, "metadata": {"name": "x"}})
    assert (status, err["message"]) == (404, 'namespaces "nons" not found')
    status, err, _ = await _post(api, "/api/v1/namespaces/demo/pods", {**POD, "apiVersion": "apps/v1"})
    assert status == 400 and "does not match the expected API version (v1)" in err["message"]


async def _patch(api, path: str, body, ctype: str) -> tuple[int, dict, list[str]]:  # noqa: F811
    async with api.s.patch(api.base + path, data=json.dumps(body).encode(), headers={"Content-Type": ctype}) as r:
        return r.status, json.loads(await r.text()), r.headers.getall("Warning", [])


MERGE, JSONP, SMP = "application/merge-patch+json", "application/json-patch+json", "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


async def test_a_patch_bringing_unknown_fields_is_422_under_strict_as_kube_apiserver_words_it(api):  # noqa: F811
    web = {**POD, "metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    assert (await _post(api, "/api/v1/namespaces/demo/pods", web))[0] == 201
    path = "/api/v1/namespaces/demo/pods/web?fieldValidation=Strict"
    for ctype, body, value in [
        (MERGE, {"spec": {"nodeSelecter": {"a": "b"}}}, '{"apiVersion":"v1"'),
        (JSONP, [{"op": "add", "path": "/spec/nodeSelecter", "value": {"a": "b"}}], '{"apiVersion":"v1"'),
        (SMP, {"spec": {"nodeSelecter": {"a": "b"}}}, "map[spec:map[nodeSelecter:map[a:b]]]"),
    ]:
        status, err, _ = await _patch(api, path, body, ctype)
        assert (status, err["reason"]) == (422, "Invalid"), ctype
        assert err["message"].startswith(' "" is invalid: patch: Invalid value: "' + value.replace('"', '\\"'))
        assert err["message"].endswith('": strict decoding error: unknown field "spec.nodeSelecter"')
        assert err["details"]["causes"][0]["field"] == "patch"
    status, pod, _ = await _patch(api, "/api/v1/namespaces/demo/pods/web", {"metadata": {"labels": {"a": "b"}}}, SMP)
    assert status == 200 and "nodeSelecter" not in pod["spec"]  # nothing refused was stored


async def test_warn_drops_them_with_a_warning_each_and_ignore_drops_them_silently(api):  # noqa: F811
    web = {**POD, "metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    await _post(api, "/api/v1/namespaces/demo/pods", web)
    body = {"metadata": {"labels": {"x": "1"}}, "spec": {"nodeSelecter": {"a": "b"},
                                                        "containers": [{"name": "c", "imagePullPolicee": "Never"}]}}
    status, pod, warnings = await _patch(api, "/api/v1/namespaces/demo/pods/web", body, SMP)  # Warn: the default
    assert status == 200 and pod["metadata"]["labels"] == {"x": "1"} and "nodeSelecter" not in pod["spec"]
    assert "imagePullPolicee" not in pod["spec"]["containers"][0]
    assert warnings == ['299 - "unknown field \\"spec.containers[0].imagePullPolicee\\""',
                        '299 - "unknown field \\"spec.nodeSelecter\\""']
    status, pod, warnings = await _patch(api, "/api/v1/namespaces/demo/pods/web?fieldValidation=Ignore",
                                         {"metadata": {"labels": {"y": "2"}}, "spec": {"nodeSelecter": {}}}, MERGE)
    assert (status, warnings, pod["metadata"]["labels"]) == (200, [], {"x": "1", "y": "2"})
    assert "nodeSelecter" not in pod["spec"]


async def test_server_side_apply_refuses_unknown_fields_under_every_field_validation(api):  # noqa: F811
    web = {**POD, "metadata": {"name": "web", "namespace": "demo"},
           "spec": {"containers": [{"name": "c", "image": "nginx", "imagePullPolicee": "Never"}], "nodeSelecter": {}}}
    for mode in ("Strict", "Warn", "Ignore"):
        status, err, _ = await _patch(api, f"/api/v1/namespaces/demo/pods/web?fieldManager=kubectl&fieldValidation={mode}",
                                      web, APPLY)
        assert (status, err["reason"]) == (400, "BadRequest"), mode
        assert err["message"] == ("failed to create typed patch object (demo/web; /v1, Kind=Pod): errors:\n"
                                  '  .spec.containers[name="c"].imagePullPolicee: field not declared in schema\n'
                                  "  .spec.nodeSelecter: field not declared in schema")
    async with api.s.get(api.base + "/api/v1/namespaces/demo/pods/web") as r:
        assert r.status == 404  # nothing was created
    status, err, _ = await _patch(api, "/api/v1/namespaces/nons/pods/web?fieldManager=kubectl",
                                  {**POD, "metadata": {"name": "web"}, "spec": {"containers": [{"name": "c"}]}}, APPLY)
    assert (status, err["message"]) == (404, 'namespaces "nons" not found')
