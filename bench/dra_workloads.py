"""scheduler_perf's DRA workloads (test/integration/scheduler_perf/dra/): nodes whose
test driver publishes `devices_per_node` devices in one ResourceSlice each, a DeviceClass
for the driver, a ResourceClaimTemplate asking for one device, and pods each using the
template (the daemon's resourceclaim controller makes their claims). Init pods fill part
of the devices before the measured pods schedule."""
from __future__ import annotations

from typing import Any

from bench.workloads import BenchWorkload, node

DRIVER = "test-driver.cdi.k8s.io"
V1 = "resource.k8s.io/v1"
DEVICES_PER_NODE = 10  # maxClaimsPerNode of the 500-node variants


def _class() -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": "test-class"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def _template() -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ResourceClaimTemplate", "metadata": {"name": "test-claim-template",
                                                                          "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "req-0",
                                                          "exactly": {"deviceClassName": "test-class"}}]}}}}


def _slice(i: int, devices: int) -> dict[str, Any]:
    name = f"node-{i}"
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": f"{name}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1,
                                                                  "resourceSliceCount": 1},
                     "devices": [{"name": f"dev-{d}"} for d in range(devices)]}}


def _claim_pod(name: str) -> dict[str, Any]:
    """pod-with-claim-template.yaml: a pause container using the claim."""
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"claims": [{"name": "resource"}]}}],
                     "resourceClaims": [{"name": "resource", "resourceClaimTemplateName": "test-claim-template"}]}}


def scheduling_with_resource_claim_template(nodes: int, pods: int) -> BenchWorkload:
    """SchedulingWithResourceClaimTemplate: as many init pods as measured ones, at most
    half the devices taken before measuring."""
    init = min(pods, nodes * DEVICES_PER_NODE // 2)
    setup = ([node(i) for i in range(nodes)] + [_class(), _template()]
             + [_slice(i, DEVICES_PER_NODE) for i in range(nodes)] + [_claim_pod(f"init-{i}") for i in range(init)])
    measured = [_claim_pod(f"pod-{i}") for i in range(pods)]
    expected = min(pods, nodes * DEVICES_PER_NODE - init)
    return BenchWorkload("SchedulingWithResourceClaimTemplate", None, setup, measured, expected=expected,
                    notes=f"{DEVICES_PER_NODE} devices per node, {init} init pods holding devices")


DRA_WORKLOADS = {"SchedulingWithResourceClaimTemplate": scheduling_with_resource_claim_template}
