"""DRA manifests (resource.k8s.io/v1) as a user writes them, for the tests of the DRA
kinds: a GPU DeviceClass with a CEL selector, a node's ResourceSlice of GPUs, a claim
and a claim template asking for one GPU, and a pod using the template."""
from __future__ import annotations

from typing import Any

V1 = "resource.k8s.io/v1"
DRIVER = "gpu.example.com"


def device_class(name: str = "gpu.example.com", expression: str = f'device.driver == "{DRIVER}"') -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def resource_slice(node: str = "node-1", gpus: int = 4, name: str | None = None) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": name or f"{node}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"},
                                                                      "index": {"int": i}},
                                  "capacity": {"memory": {"value": "80Gi"}}} for i in range(gpus)]}}


def claim_spec(count: int | None = None, class_name: str = "gpu.example.com") -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": class_name}
    if count is not None:
        exactly["count"] = count
    return {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}


def resource_claim(name: str = "one-gpu", ns: str = "default", **kw: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ResourceClaim", "metadata": {"name": name, "namespace": ns},
            "spec": claim_spec(**kw)}


def claim_template(name: str = "one-gpu", ns: str = "default", **kw: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ResourceClaimTemplate", "metadata": {"name": name, "namespace": ns},
            "spec": {"spec": claim_spec(**kw)}}


def pod_with_template(name: str = "trainer", template: str = "one-gpu", ns: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}]}}


def allocation(node: str = "node-1", device: str = "gpu-0", request: str = "gpu") -> dict[str, Any]:
    return {"devices": {"results": [{"request": request, "driver": DRIVER, "pool": node, "device": device}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}


def nested_all(depth: int) -> str:
    """A selector of `depth` nested all() over a 10-element list: cel-go estimates it at
    655,551 for depth 5 and 6,555,551 for depth 6 (over the 1,000,000 limit)."""
    body = "x0 < 100"
    for i in range(depth):
        body = f"[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x{i}, {body})"
    return body
