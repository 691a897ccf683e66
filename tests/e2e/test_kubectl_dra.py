"""DRA's kinds with the real kubectl against a real `ksched serve`: upstream-style YAML
for a DeviceClass with a CEL selector, a ResourceSlice of 4 GPUs, a ResourceClaimTemplate
and a pod using it, applied and described; the pod's claim made from the template by the
daemon's resourceclaim controller, listed by `kubectl get` and `ksched get`, kept
(not made twice) across kill -9, and deleted with the pod; bad manifests refused with
kube-apiserver's messages."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import poll
from tests.e2e.test_kubectl import Kubectl, _rows, pytestmark  # noqa: F401 - skipped without kubectl

MANIFESTS = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "a100"
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-1-gpus
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
""" + "".join(f"""  - name: gpu-{i}
    attributes:
      model: {{string: a100}}
      index: {{int: {i}}}
      driverVersion: {{version: 1.2.{i}}}
    capacity:
      memory: {{value: 80Gi}}
""" for i in range(4)) + """---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: one-gpu
  namespace: default
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
"""
POD = """apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: default}
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
    resources: {claims: [{name: gpu}]}
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: one-gpu
"""
BAD_SELECTOR = """apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: broken}
spec:
  selectors: [{cel: {expression: 'device.driver == '}}]
"""
BAD_REQUEST = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: bad, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com, allocationMode: All, count: 2}
"""


def _claims(k: Kubectl) -> list[dict]:
    return json.loads(k("get", "resourceclaims", "-n", "default", "-o", "json"))["items"]


def test_kubectl_applies_and_describes_every_dra_kind_and_the_daemon_makes_the_pods_claim(
        daemon_factory, tmp_path: Path) -> None:
    d = daemon_factory()
    k = Kubectl(d.data_dir / "kubeconfig", tmp_path)
    applied = k("apply", "-f", k.file("dra.yaml", MANIFESTS)).splitlines()
    assert applied == ["deviceclass.resource.k8s.io/gpu.example.com created",
                       "resourceslice.resource.k8s.io/node-1-gpus created",
                       "resourceclaimtemplate.resource.k8s.io/one-gpu created"]
    k("apply", "-f", k.file("dra.yaml", MANIFESTS))  # the same again: the defaulted, immutable spec is no change
    assert k("apply", "-f", k.file("pod.yaml", POD)).strip() == "pod/trainer created"

    slices = _rows(k("get", "resourceslices"))
    assert slices[0] == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert slices[1][:4] == ["node-1-gpus", "node-1", "gpu.example.com", "node-1"]
    assert [r[0] for r in _rows(k("get", "deviceclasses"))] == ["NAME", "gpu.example.com"]
    [claim] = poll(lambda: _claims(k) or None, "the claim made from the template")
    name = claim["metadata"]["name"]
    assert name.startswith("trainer-gpu-") and claim["metadata"]["ownerReferences"][0]["name"] == "trainer"
    assert _rows(k("get", "resourceclaims")) [1][:2] == [name, "pending"]
    statuses = poll(lambda: json.loads(k.jsonpath("get pod trainer", "{.status.resourceClaimStatuses}") or "null"),
                    "the pod's resourceClaimStatuses")
    assert statuses == [{"name": "gpu", "resourceClaimName": name}]

    for kind, obj in (("deviceclass", "gpu.example.com"), ("resourceslice", "node-1-gpus"),
                      ("resourceclaimtemplate", "one-gpu"), ("resourceclaim", name)):
        described = k("describe", kind, obj)
        assert f"Name:         {obj}" in described and "API Version:  resource.k8s.io/v1" in described
    assert "gpu-3" in k("describe", "resourceslice", "node-1-gpus")
    assert "device.driver ==" in k("describe", "deviceclass", "gpu.example.com")

    cli = d.cli("get", "resourceclaims").stdout.splitlines()
    assert cli[0].split() == ["NAME", "STATE", "AGE"] and cli[1].split()[:2] == [name, "pending"]

    refused = k("apply", "-f", k.file("bad.yaml", BAD_SELECTOR), check=False)
    assert 'The DeviceClass "broken" is invalid' in refused
    assert "spec.selectors[0].cel.expression: Invalid value: \"device.driver == \": compilation failed: ERROR:" \
        in refused
    refused = k("apply", "-f", k.file("bad2.yaml", BAD_REQUEST), check=False)
    assert ("spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode "
            "is 'All'") in refused
    changed = yaml.safe_load(MANIFESTS.split("---")[2])
    changed["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    refused = k("apply", "-f", k.file("t.yaml", yaml.safe_dump(changed)), check=False)
    assert "spec: Invalid value" in refused and "field is immutable" in refused

    d.kill9()
    d2 = daemon_factory(data_dir=d.data_dir)
    k2 = Kubectl(d2.data_dir / "kubeconfig", tmp_path)
    assert [c["metadata"]["name"] for c in _claims(k2)] == [name]  # kept, and not made again
    assert 'pod "trainer" deleted' in k2("delete", "pod", "trainer", "--timeout=30s")
    poll(lambda: _claims(k2) == [] or None, "the claim deleted with its pod")


CLAIM = """apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared-gpu, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
"""


def test_the_python_client_writes_a_claims_status_through_its_status_subresource(daemon_factory, tmp_path: Path
                                                                                 ) -> None:
    pytest.importorskip("kubernetes", reason="the official Python client (pip install kubernetes)")
    from kubernetes import client, config

    d = daemon_factory()
    k = Kubectl(d.data_dir / "kubeconfig", tmp_path)
    k("apply", "-f", k.file("dra.yaml", MANIFESTS))
    k("apply", "-f", k.file("claim.yaml", CLAIM))
    api = client.ResourceV1Api(config.new_client_from_config(config_file=str(d.data_dir / "kubeconfig")))
    have = api.read_namespaced_resource_claim("shared-gpu", "default").to_dict()
    allocation = {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-1",
                                           "device": "gpu-2"}]},
                  "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                      {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "shared-gpu", "namespace": "default",
                         "resourceVersion": have["metadata"]["resource_version"]},
            "spec": {"devices": {"requests": []}},  # not the status's business: the stored spec stays
            "status": {"allocation": allocation}}
    written = api.replace_namespaced_resource_claim_status("shared-gpu", "default", body, _preload_content=False)
    assert written.status == 200
    got = json.loads(k("get", "resourceclaim", "shared-gpu", "-o", "json"))
    assert got["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-2"
    assert got["spec"]["devices"]["requests"][0]["name"] == "gpu"
    assert _rows(k("get", "resourceclaims"))[1][:2] == ["shared-gpu", "allocated"]
    moved = {**body, "metadata": {"name": "shared-gpu", "namespace": "default"},
             "status": {"allocation": {**allocation, "devices": {"results": [
                 {**allocation["devices"]["results"][0], "device": "gpu-3"}]}}}}
    with pytest.raises(client.ApiException) as refused:
        api.replace_namespaced_resource_claim_status("shared-gpu", "default", moved, _preload_content=False)
    assert refused.value.status == 422 and "status.allocation: Invalid value" in str(refused.value.body)
    d.kill9()
    d2 = daemon_factory(data_dir=d.data_dir)
    k2 = Kubectl(d2.data_dir / "kubeconfig", tmp_path)
    kept = json.loads(k2("get", "resourceclaim", "shared-gpu", "-o", "json"))
    assert kept["status"] == got["status"] and kept["metadata"]["resourceVersion"] == got["metadata"]["resourceVersion"]
