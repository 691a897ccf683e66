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
