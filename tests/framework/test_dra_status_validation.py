"""Rules of upstream 1.35's resource.k8s.io validation.go ksched lacked (issue 30.4): a
claim's status.devices (validateDeviceStatus, validateNetworkDeviceData,
IsValidInterfaceAddress), a per-device nodeName, and a node selector without terms; each
with upstream's field path and message."""
from __future__ import annotations

from typing import Any

import pytest

from framework.api.schema import validate_object
from framework.api.schema.dra_status import interface_address_errors
from tests import dra_manifests as m


def errors(raw: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_object(raw)]


def _claim_with_device_status(**entry: Any) -> dict[str, Any]:
    claim = m.resource_claim()
    claim["status"] = {"allocation": m.allocation(),
                       "devices": [{"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0", **entry}]}
    return claim


def test_a_device_status_for_the_allocated_device_is_valid() -> None:
    assert errors(_claim_with_device_status(data={"health": "ok"}, networkData={
        "interfaceName": "eth1", "ips": ["10.0.0.5/24", "2001:db8::1/64"], "hardwareAddress": "aa:bb"})) == []


def test_a_device_status_must_name_a_device_the_allocation_holds() -> None:
    claim = _claim_with_device_status()
    claim["status"]["devices"][0]["device"] = "gpu-7"
    assert errors(claim) == [
        "status.devices[0]: Invalid value: gpu.example.com/node-1/gpu-7: must be an allocated device in the claim"]


def test_a_device_status_names_a_device_once() -> None:
    claim = _claim_with_device_status()
    claim["status"]["devices"].append(dict(claim["status"]["devices"][0]))
    assert errors(claim) == ["status.devices[1]: Duplicate value: gpu.example.com/node-1/gpu-0"]


def test_device_status_data_is_a_json_object_of_at_most_10_kib() -> None:
    assert errors(_claim_with_device_status(data=[1, 2])) == [
        'status.devices[0].data: Invalid value: "<value omitted>": must be a valid JSON object']
    assert errors(_claim_with_device_status(data={"s": "x" * 10240})) == [
        "status.devices[0].data: Too long: may not be more than 10240 bytes"]


def test_device_status_has_at_most_8_conditions() -> None:
    conditions = [{"type": f"t{i}", "status": "True", "reason": "R", "message": "",
                   "lastTransitionTime": "2026-01-01T00:00:00Z"} for i in range(9)]
    assert errors(_claim_with_device_status(conditions=conditions)) == [
        "status.devices[0].conditions: Too many: 9: must have at most 8 items"]


def test_network_data_limits_and_addresses_as_upstream_words_them() -> None:
    claim = _claim_with_device_status(networkData={
        "interfaceName": "i" * 257, "hardwareAddress": "h" * 129,
        "ips": ["10.0.0.1", "2001:0db8::1/64", "10.0.0.2/24", "10.0.0.2/24"]})
    assert errors(claim) == [
        "status.devices[0].networkData.interfaceName: Too long: may not be more than 256 bytes",
        "status.devices[0].networkData.hardwareAddress: Too long: may not be more than 128 bytes",
        'status.devices[0].networkData.ips[0]: Invalid value: "10.0.0.1": must be a valid address in CIDR form, '
        "(e.g. 10.9.8.7/24 or 2001:db8::1/64)",
        'status.devices[0].networkData.ips[1]: Invalid value: "2001:0db8::1/64": must be in canonical form '
        '("2001:db8::1/64")',
        'status.devices[0].networkData.ips[3]: Duplicate value: "10.0.0.2/24"']
    many = _claim_with_device_status(networkData={"ips": [f"10.0.0.{i}/24" for i in range(17)]})
    assert errors(many) == ["status.devices[0].networkData.ips: Too many: 17: must have at most 16 items"]


@pytest.mark.parametrize("value, want", [
    ("192.168.1.5/24", []),
    ("010.0.0.1/24", ['must be in canonical form ("10.0.0.1/24")']),  # Go's sloppy parse reads the zero
    ("::ffff:10.0.0.1/120", ['must be in canonical form ("10.0.0.1/24")']),
    ("fe80::1/64", []),
])
def test_interface_addresses_are_canonical_as_go_prints_them(value: str, want: list[str]) -> None:
    assert interface_address_errors(value) == want


def test_a_device_with_an_empty_node_name_in_a_per_device_slice_is_told_it_must_not_be_empty() -> None:
    s = m.resource_slice(gpus=1)
    del s["spec"]["nodeName"]
    s["spec"]["perDeviceNodeSelection"] = True
    s["spec"]["devices"][0]["nodeName"] = ""
    assert errors(s) == [
        'spec.devices[0].nodeName: Invalid value: "": must not be empty',
        "spec.devices[0]: Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
        "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"]


def test_a_node_selector_without_terms_gets_one_required_error_not_two() -> None:
    s = m.resource_slice()
    del s["spec"]["nodeName"]
    s["spec"]["nodeSelector"] = {"nodeSelectorTerms": []}
    assert errors(s) == [
        "spec.nodeSelector.nodeSelectorTerms: Required value: must have at least one node selector term",
        "spec.nodeSelector.nodeSelectorTerms: Invalid value: []: must have exactly one node selector term"]
