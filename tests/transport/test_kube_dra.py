"""DRA's kinds over the REST API: discovery under resource.k8s.io/v1, CRUD, a
ResourceClaim's status subresource (only the status changes there), Tables with the
columns of upstream's printers, and upstream's messages for bad manifests."""
from __future__ import annotations

from tests import dra_manifests as m
from tests.transport.test_kube_api import TABLE, api  # noqa: F401 - the fixture: a store behind the HTTP port

G = "/apis/resource.k8s.io/v1"


def _rows(t: dict) -> tuple[list[tuple[str, int]], list[list]]:
    return [(c["name"], c["priority"]) for c in t["columnDefinitions"]], [r["cells"] for r in t["rows"]]


async def test_discovery_lists_the_four_dra_kinds_with_the_claims_status(api):  # noqa: F811
    _, gv = await api.call("GET", G)
    names = {r["name"]: r["namespaced"] for r in gv["resources"]}
    assert names == {"deviceclasses": False, "resourceclaims": True, "resourceclaims/status": True,
                     "resourceclaimtemplates": True, "resourceslices": False}


async def test_tables_have_upstreams_columns_and_the_claims_state(api):  # noqa: F811
    for path, obj in [(f"{G}/deviceclasses", m.device_class()), (f"{G}/resourceslices", m.resource_slice()),
                      (f"{G}/namespaces/default/resourceclaimtemplates", m.claim_template()),
                      (f"{G}/namespaces/default/resourceclaims", m.resource_claim())]:
        status, body = await api.call("POST", path, obj)
        assert status == 201, body
    cols, rows = _rows((await api.call("GET", f"{G}/resourceslices", accept=TABLE))[1])
    assert cols == [("Name", 0), ("Node", 0), ("Driver", 0), ("Pool", 0), ("Age", 0)]
    assert rows[0][:4] == ["node-1-gpus", "node-1", m.DRIVER, "node-1"]
    cols, rows = _rows((await api.call("GET", f"{G}/namespaces/default/resourceclaims", accept=TABLE))[1])
    assert cols == [("Name", 0), ("State", 0), ("Age", 0)] and rows[0][:2] == ["one-gpu", "pending"]
    status, body = await api.call("PATCH", f"{G}/namespaces/default/resourceclaims/one-gpu/status",
                                  {"status": {"allocation": m.allocation(), "reservedFor": [
                                      {"resource": "pods", "name": "p", "uid": "u-1"}]}},
                                  ctype="application/merge-patch+json")
    assert status == 200, body
    _, rows = _rows((await api.call("GET", f"{G}/namespaces/default/resourceclaims", accept=TABLE))[1])
    assert rows[0][:2] == ["one-gpu", "allocated,reserved"]
    cols, _ = _rows((await api.call("GET", f"{G}/deviceclasses", accept=TABLE))[1])
    assert cols == [("Name", 0), ("Age", 0)]


async def test_a_write_to_the_claim_keeps_its_status_and_a_spec_change_is_refused(api):  # noqa: F811
    path = f"{G}/namespaces/default/resourceclaims"
    await api.call("POST", path, m.resource_claim())
    status, body = await api.call("PATCH", f"{path}/one-gpu/status", {"status": {"allocation": m.allocation()}},
                                  ctype="application/merge-patch+json")
    assert status == 200, body
    status, body = await api.call("PATCH", f"{path}/one-gpu", {"metadata": {"labels": {"a": "b"}},
                                                               "status": {"allocation": None}},
                                  ctype="application/merge-patch+json")
    assert status == 200 and body["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    status, body = await api.call("PATCH", f"{path}/one-gpu", {"spec": m.claim_spec(count=3)},
                                  ctype="application/merge-patch+json")
    assert status == 422 and body["details"]["causes"][0]["field"] == "spec"
    assert "field is immutable" in body["message"]


async def test_a_bad_slice_is_refused_with_upstreams_message(api):  # noqa: F811
    bad = m.resource_slice()
    bad["spec"]["allNodes"] = True
    status, body = await api.call("POST", f"{G}/resourceslices", bad)
    assert status == 422
    assert body["details"]["causes"][0] == {
        "reason": "FieldValueInvalid", "field": "spec",
        "message": 'Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, '
                   "`allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"}


async def test_a_put_to_the_claims_status_is_the_status_only_write_with_the_stored_spec_untouched(api):  # noqa: F811
    path = f"{G}/namespaces/default/resourceclaims"
    _, created = await api.call("POST", path, m.resource_claim())
    before = api.store.peek("ResourceClaim", "default", "one-gpu")
    body = {**created, "spec": m.claim_spec(count=3),  # a spec in the body is not the status's business
            "status": {"allocation": m.allocation(), "unknownField": 1}}
    status, got = await api.call("PUT", f"{path}/one-gpu/status?fieldValidation=Strict", body)
    assert status == 400 and 'unknown field "status.unknownField"' in got["message"], got
    status, got = await api.call("PUT", f"{path}/one-gpu/status", body)  # Warn: dropped, and said
    assert status == 200, got
    assert got["status"] == {"allocation": m.allocation()} and got["spec"] == created["spec"]
    after = api.store.peek("ResourceClaim", "default", "one-gpu")
    # the stored spec kept as it was, neither copied nor walked again (the full update admits a new copy)
    assert after.raw["spec"] is before.raw["spec"]
    moved = {**got, "status": {"allocation": m.allocation(device="gpu-1")}}
    status, refused = await api.call("PUT", f"{path}/one-gpu/status", moved)
    assert status == 422 and refused["details"]["causes"][0]["field"] == "status.allocation"
    assert "field is immutable" in refused["message"]
