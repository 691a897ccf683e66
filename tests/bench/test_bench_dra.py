"""scheduler_perf's SchedulingWithResourceClaimTemplate on a tiny cluster: every pod
gets its claim from the template and a device of its own; pods beyond the free devices
do not bind."""
from __future__ import annotations

from bench.dra_workloads import DEVICES_PER_NODE, scheduling_with_resource_claim_template
from bench.runner import run_bench


def test_the_workload_has_a_slice_per_node_and_pods_using_the_template() -> None:
    w = scheduling_with_resource_claim_template(nodes=3, pods=4)
    slices = [o for o in w.setup if o["kind"] == "ResourceSlice"]
    assert [s["spec"]["nodeName"] for s in slices] == ["node-0", "node-1", "node-2"]
    assert all(len(s["spec"]["devices"]) == DEVICES_PER_NODE for s in slices)
    assert all(p["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == "test-claim-template"
               for p in w.measured)
    assert w.init_pods == 4 and w.expected_bound == 4


def test_scheduling_with_resource_claim_template_binds_every_measured_pod_on_a_device() -> None:
    result = run_bench("SchedulingWithResourceClaimTemplate", nodes=2, pods=6, store="memory")
    assert (result["pods"], result["scheduled"], result["init_pods"]) == (6, 6, 6)
