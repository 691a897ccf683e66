"""DRA's kinds (resource.k8s.io/v1) as kube-apiserver validates them: upstream's field
paths and messages, CEL selectors compiled with the compile error in the message, and the
update rules (immutable specs, a set status.allocation, a slice's driver/pool/node)."""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from framework.api.dra_kinds import DeviceClass, ResourceClaim, ResourceSlice, _device_ref, _dicts
from framework.api.meta import _map
from framework.api.objects import parse_object
from framework.api.schema import validate_object
from framework.api.schema.dra_update import dra_defaults, validate_dra_update
from tests import dra_manifests as m


def errors(raw: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_object(raw)]


@pytest.mark.parametrize("raw", [m.device_class(), m.resource_slice(), m.resource_claim(), m.claim_template()],
                         ids=["DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"])
def test_upstream_style_manifests_of_every_dra_kind_are_valid_and_parse(raw: dict[str, Any]) -> None:
    assert errors(raw) == []
    assert parse_object(raw).kind == raw["kind"]


def test_a_selector_that_does_not_compile_is_refused_with_the_compile_error() -> None:
    out = errors(m.device_class(expression='device.attributes["gpu.example.com"].model =='))
    assert len(out) == 1
    assert out[0].startswith('spec.selectors[0].cel.expression: Invalid value: '
                             '"device.attributes[\\"gpu.example.com\\"].model ==": compilation failed: ERROR: <input>:1:')


def test_a_selector_that_is_not_boolean_is_refused() -> None:
    assert errors(m.device_class(expression="1 + 1")) == [
        'spec.selectors[0].cel.expression: Invalid value: "1 + 1": must evaluate to bool or the unknown '
        'type, not int']


def test_a_request_needs_exactly_one_of_exactly_and_first_available() -> None:
    claim = m.resource_claim()
    claim["spec"]["devices"]["requests"] = [
        {"name": "none"},
        {"name": "both", "exactly": {"deviceClassName": "gpu.example.com"},
         "firstAvailable": [{"name": "a", "deviceClassName": "gpu.example.com"}]}]
    assert errors(claim) == [
        "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required",
        'spec.devices.requests[1]: Invalid value: "null": exactly one of `exactly` or `firstAvailable` is required, '
        "but multiple fields are set"]


def test_allocation_mode_and_count_follow_upstream() -> None:
    claim = m.resource_claim(count=0)
    assert errors(claim) == ["spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero"]
    claim["spec"]["devices"]["requests"][0]["exactly"].update(allocationMode="All", count=2)
    assert errors(claim) == [
        "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"]
    claim["spec"]["devices"]["requests"][0]["exactly"].update(allocationMode="Some", count=1)
    assert errors(claim) == ['spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": '
                             'supported values: "All", "ExactCount"']


def test_request_names_are_dns_labels_unique_and_named_by_constraints_and_config() -> None:
    claim = m.resource_claim()
    devices = claim["spec"]["devices"]
    devices["requests"].append({"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}})
    devices["constraints"] = [{"requests": ["gpu", "nic"], "matchAttribute": "gpu.example.com/numa"},
                              {"requests": ["gpu"]}, {"matchAttribute": "numa"}]
    devices["config"] = [{"requests": ["gpu/x"], "opaque": {"driver": m.DRIVER}}]
    ref = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
    assert errors(claim) == [
        'spec.devices.requests[1]: Duplicate value: "gpu"',
        f'spec.devices.constraints[0].requests[1]: Invalid value: "nic": {ref}',
        "spec.devices.constraints[1].matchAttribute: Required value",
        'spec.devices.constraints[2].matchAttribute: Invalid value: "numa": a fully qualified name must be a domain '
        "and a name separated by a slash",
        f'spec.devices.config[0].requests[0]: Invalid value: "gpu/x": {ref}',
        "spec.devices.config[0].opaque.parameters: Required value"]


def test_first_available_subrequests_are_checked_like_exact_requests() -> None:
    claim = m.resource_claim()
    claim["spec"]["devices"]["requests"] = [{"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu.example.com", "count": 2},
        {"name": "big", "deviceClassName": "", "selectors": [{"cel": {"expression": "true"}}]}]}]
    claim["spec"]["devices"]["constraints"] = [{"requests": ["gpu/big"], "matchAttribute": "gpu.example.com/numa"}]
    assert errors(claim) == ["spec.devices.requests[0].firstAvailable[1].deviceClassName: Required value",
                             'spec.devices.requests[0].firstAvailable[1]: Duplicate value: "big"']


def test_a_slice_chooses_exactly_one_node_selection() -> None:
    s = m.resource_slice()
    s["spec"]["allNodes"] = True
    one = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    assert errors(s) == [f'spec: Invalid value: "{{`nodeName`, `allNodes`}}": {one}, but multiple fields are set']
    del s["spec"]["allNodes"], s["spec"]["nodeName"]
    assert errors(s) == [f"spec: Required value: {one}"]


def test_a_slice_names_its_driver_and_pool_and_its_devices_uniquely() -> None:
    s = m.resource_slice(gpus=2)
    s["spec"]["driver"] = "Not_A_Driver"
    s["spec"]["pool"] = {"name": "", "resourceSliceCount": 0}
    s["spec"]["devices"][1]["name"] = "gpu-0"
    s["spec"]["devices"][0]["attributes"]["model"] = {"string": "a100", "int": 1}
    s["spec"]["devices"][0]["attributes"]["driverVersion"] = {"version": "1.2"}
    out = errors(s)
    assert out[0].startswith('spec.driver: Invalid value: "Not_A_Driver": a lowercase RFC 1123 subdomain')
    assert out[1:] == [
        "spec.pool.name: Required value",
        "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
        'spec.devices[0].attributes[model]: Invalid value: {"int": 1, "string": "a100"}: exactly one value must be '
        "specified",
        'spec.devices[0].attributes[driverVersion].version: Invalid value: "1.2": must be a string compatible with '
        "semver.org spec 2.0.0",
        'spec.devices[1]: Duplicate value: "gpu-0"']


def test_reserved_for_needs_an_allocation_and_results_must_name_a_request() -> None:
    claim = m.resource_claim()
    claim["status"] = {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]}
    assert errors(claim) == ["status.reservedFor: Forbidden: may not be specified when `allocated` is not set"]
    claim["status"]["allocation"] = m.allocation(request="other")
    assert errors(claim) == [
        'status.allocation.devices.results[0].request: Invalid value: "other": must be the name of a request in the '
        "claim or the name of a request and a subrequest separated by '/'"]


def test_claim_and_template_specs_are_immutable_and_a_set_allocation_too() -> None:
    old = dra_defaults(m.resource_claim())
    new = copy.deepcopy(old)
    new["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    assert [str(e) for e in validate_dra_update(new, old)][0].endswith("field is immutable")
    old["status"] = {"allocation": m.allocation()}
    new = copy.deepcopy(old)
    assert validate_dra_update(new, old) == []
    new["status"]["allocation"] = m.allocation(device="gpu-1")
    assert [e.field for e in validate_dra_update(new, old)] == ["status.allocation"]
    template = dra_defaults(m.claim_template())
    changed = dra_defaults(m.claim_template(class_name="other"))
    assert [e.field for e in validate_dra_update(changed, template)] == ["spec"]


def test_a_slice_keeps_its_driver_pool_and_node() -> None:
    old = m.resource_slice()
    new = m.resource_slice(gpus=8, name="node-1-gpus")
    assert validate_dra_update(new, old) == []
    new["spec"]["nodeName"] = "node-2"
    assert [e.field for e in validate_dra_update(new, old)] == ["spec.nodeName"]


def test_defaults_give_exact_count_one() -> None:
    claim = dra_defaults(m.resource_claim())
    assert claim["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}


def test_typed_views_read_what_the_scheduler_needs() -> None:
    assert DeviceClass(m.device_class()).selectors == ('device.driver == "gpu.example.com"',)
    s = ResourceSlice(m.resource_slice(gpus=2))
    assert (s.driver, s.pool, s.node_name, s.devices) == (m.DRIVER, "node-1", "node-1", ("gpu-0", "gpu-1"))
    claim = m.resource_claim()
    assert ResourceClaim(claim).allocated is None
    claim["status"] = {"allocation": m.allocation(), "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}
    c = ResourceClaim(claim)
    assert [d.id for d in c.allocated or ()] == ["gpu.example.com/node-1/gpu-0"]
    assert c.reserved_for == (("pods", "p", "u"),)


def _parsed_fields(claim: ResourceClaim) -> dict[str, Any]:
    meta = {slot: getattr(claim.meta, slot) for slot in type(claim.meta).__slots__}
    return {"meta": meta, "controlling_pod": claim.controlling_pod(), **{slot: getattr(claim, slot) for slot in (
        "raw", "name", "namespace", "labels", "key", "uid", "spec", "status", "request_names", "allocated",
        "reserved_for")}}


def _restatements(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    allocated = copy.deepcopy(raw)
    allocated["metadata"] = {**raw["metadata"], "resourceVersion": "9", "finalizers": ["resource.kubernetes.io/delete-protection"]}
    allocated["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": "p", "uid": "u-1"}]}
    other_spec = copy.deepcopy(raw)
    other_spec["spec"]["devices"]["requests"][0]["name"] = "other"
    labelled = {**raw, "metadata": {**raw["metadata"], "labels": {"a": "b"}}}
    deleting = {**raw, "metadata": {**raw["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    owned = {**raw, "metadata": {**raw["metadata"], "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-1", "controller": True}]}}
    return {"allocation, version and finalizer": allocated, "another spec": other_spec, "labels": labelled,
            "being deleted": deleting, "another owner": owned, "the same": copy.deepcopy(raw)}


@pytest.mark.parametrize("change", list(_restatements(m.resource_claim())))
def test_a_restated_claim_reads_as_the_same_object_parsed_afresh(change: str) -> None:
    raw = {**m.resource_claim(), "metadata": {**m.resource_claim()["metadata"], "uid": "c-1", "resourceVersion": "3"}}
    claim = ResourceClaim(raw)
    assert claim.controlling_pod() == ("", "")  # worked out before restating: what a restatement may keep
    changed = _restatements(raw)[change]
    assert _parsed_fields(claim.restated(changed)) == _parsed_fields(ResourceClaim(changed))
    assert _parsed_fields(claim) == _parsed_fields(ResourceClaim(raw))  # the claim itself is untouched


def _status_by_comprehensions(raw: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """(status, allocated, reserved_for) as ResourceClaim read them before its loops
    (comprehensions over dra_kinds._dicts): the reference for the loops."""
    status = raw.get("status")
    status = status if type(status) is dict else _map(raw, "status", "")
    allocation = status.get("allocation")
    allocated = None
    if type(allocation) is dict or isinstance(allocation, Mapping):
        results = ((allocation or {}).get("devices") or {}).get("results")
        allocated = tuple([_device_ref(r) for r in _dicts(results)])
    reserved_for = tuple([(str(r.get("resource", "")), str(r.get("name", "")), str(r.get("uid", "")))
                          for r in _dicts(status.get("reservedFor"))])
    return status, allocated, reserved_for


_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["", "a", "gpu", "node-1"]))
_RESULT = st.one_of(_SCALAR, st.fixed_dictionaries({}, optional={
    k: _SCALAR for k in ("request", "driver", "pool", "device", "adminAccess")}))
_LIST_OR = st.one_of(_SCALAR, st.lists(_RESULT, max_size=3), st.dictionaries(st.sampled_from(["x"]), _SCALAR))
_STATUS = st.one_of(_SCALAR, st.fixed_dictionaries({}, optional={
    "allocation": st.one_of(_SCALAR, st.fixed_dictionaries({}, optional={
        "devices": st.one_of(st.none(), st.just({}), st.fixed_dictionaries({}, optional={"results": _LIST_OR})),
        "nodeSelector": _SCALAR})),
    "reservedFor": st.one_of(_LIST_OR, st.lists(st.fixed_dictionaries({}, optional={
        k: _SCALAR for k in ("resource", "name", "uid", "apiGroup")}), max_size=3)),
    "devices": _LIST_OR}))


@settings(max_examples=400, deadline=None)
@given(status=_STATUS)
def test_a_claims_status_reads_as_the_comprehensions_read_it(status: Any) -> None:
    raw = {**m.resource_claim(), "status": status} if status is not None else m.resource_claim()
    try:
        want: Any = _status_by_comprehensions(raw)
    except Exception as e:  # noqa: BLE001 - the same refusal (its type) either way
        want = type(e)
    try:
        claim = ResourceClaim(raw)
        got: Any = (claim.status, claim.allocated, claim.reserved_for)
    except Exception as e:  # noqa: BLE001
        got = type(e)
    assert got == want
    if not isinstance(got, type):
        assert all(a is b for a, b in zip(got[1] or (), want[1] or ()))  # the one DeviceRef of a device
