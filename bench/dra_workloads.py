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


def device_class() -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": "test-class"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def template() -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ResourceClaimTemplate", "metadata": {"name": "test-claim-template",
                                                                          "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "req-0",
                                                          "exactly": {"deviceClassName": "test-class"}}]}}}}


def resource_slice(i: int, devices: int) -> dict[str, Any]:
    name = f"node-{i}"
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": f"{name}-{DRIVER}"},
            "spec": {"driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1,
                                                                  "resourceSliceCount": 1},
                     "devices": [{"name": f"dev-{d}"} for d in range(devices)]}}


def claim_pod(name: str) -> dict[str, Any]:
    """pod-with-claim-template.yaml: a pause container using the claim."""
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"claims": [{"name": "resource"}]}}],
                     "resourceClaims": [{"name": "resource", "resourceClaimTemplateName": "test-claim-template"}]}}


def scheduling_with_resource_claim_template(nodes: int, pods: int) -> BenchWorkload:
    """SchedulingWithResourceClaimTemplate: as many init pods as measured ones, at most
    half the devices taken before measuring."""
    init = min(pods, nodes * DEVICES_PER_NODE // 2)
    setup = ([node(i) for i in range(nodes)] + [device_class(), template()]
             + [resource_slice(i, DEVICES_PER_NODE) for i in range(nodes)] + [claim_pod(f"init-{i}") for i in range(init)])
    measured = [claim_pod(f"pod-{i}") for i in range(pods)]
    expected = min(pods, nodes * DEVICES_PER_NODE - init)
    return BenchWorkload("SchedulingWithResourceClaimTemplate", None, setup, measured, expected=expected,
                    notes=f"{DEVICES_PER_NODE} devices per node, {init} init pods holding devices")


STEADY_STATE = "SteadyStateClusterResourceClaimTemplate"  # its own driver (bench/dra_steady.py)
INIT_NAMESPACE = "init"


def init_claim(i: int) -> dict[str, Any]:
    """templates/resourceclaim.yaml: one device of the test class."""
    return {"apiVersion": V1, "kind": "ResourceClaim", "metadata": {"name": f"init-claim-{i}",
                                                                   "namespace": INIT_NAMESPACE},
            "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class"}}]}}}


def steady_state_cluster_resource_claim_template(nodes: int, pods: int) -> BenchWorkload:
    """SteadyStateClusterResourceClaimTemplate's "half" variant (half_500nodes at 500
    nodes): claims allocated before the measurement hold half the devices; `pods` is
    how many pods bind in the steady phase (upstream runs it for 10 s)."""
    init = nodes * DEVICES_PER_NODE // 2
    setup = ([node(i) for i in range(nodes)] + [device_class(), template()]
             + [resource_slice(i, DEVICES_PER_NODE) for i in range(nodes)] + [init_claim(i) for i in range(init)])
    return BenchWorkload(STEADY_STATE, None, setup, [claim_pod(f"pod-{i}") for i in range(pods)],
                    extra={"init_claims": init},
                    notes=f"{DEVICES_PER_NODE} devices per node, {init} claims allocated before, "
                          "each bound pod deleted with its claim and replaced")


DRA_WORKLOADS = {"SchedulingWithResourceClaimTemplate": scheduling_with_resource_claim_template,
                 STEADY_STATE: steady_state_cluster_resource_claim_template}
