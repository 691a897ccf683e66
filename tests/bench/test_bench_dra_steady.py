"""scheduler_perf's SteadyStateClusterResourceClaimTemplate on one node: half the
devices held by claims allocated before, ten pods in flight, each bound pod deleted
with its claim so its device serves the next one."""
from __future__ import annotations

import pytest

from bench.dra_steady import init_allocation
from bench.dra_workloads import DEVICES_PER_NODE, steady_state_cluster_resource_claim_template
from bench.runner import run_bench


def test_the_workload_allocates_half_the_devices_to_init_claims_first_fit_over_the_nodes() -> None:
    w = steady_state_cluster_resource_claim_template(nodes=3, pods=7)
    claims = [o for o in w.setup if o["kind"] == "ResourceClaim"]
    assert len(claims) == 3 * DEVICES_PER_NODE // 2 == w.extra["init_claims"]
    assert {c["metadata"]["namespace"] for c in claims} == {"init"}
    assert [init_allocation(i)["devices"]["results"][0]["pool"] for i in (0, 9, 10, 14)] == \
        ["node-0", "node-0", "node-1", "node-1"]
    assert len(w.measured) == 7


def test_more_pods_than_free_devices_all_bind_because_each_deleted_pod_frees_its_device() -> None:
    result = run_bench("SteadyStateClusterResourceClaimTemplate", nodes=1, pods=12, store="memory")
    assert (result["pods"], result["scheduled"], result["init_claims"], result["in_flight"]) == (12, 12, 5, 10)
    assert result["pods_per_s"] > 0


def test_the_steady_state_workload_refuses_tcp() -> None:
    with pytest.raises(ValueError, match="--tcp: not supported for SteadyStateClusterResourceClaimTemplate"):
        run_bench("SteadyStateClusterResourceClaimTemplate", nodes=1, pods=1, store="memory", tcp=True)
