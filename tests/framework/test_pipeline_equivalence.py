"""The columnar path (NodeTable columns, the plugins' columnar forms) against
the per-node path, through the real actor pipeline.

The same randomized workload (seeded: nodes with varied sizes, zones, labels,
taints, cordons and images; pods with varied requests, host ports, tolerations,
node and pod (anti-)affinity, spread constraints and priorities, plus
high-priority pods that must preempt) is scheduled twice on a FakeClock with the
same random source: once as the daemon runs, once with every profile forced onto
the per-node calls (`Framework.use_columnar = False`). Every pod must end the same:
the same node, nomination, PodScheduled condition and the same Events
(Scheduled, FailedScheduling, Preempted) with the same messages, and the same pods
must have been preempted.
"""
from __future__ import annotations

import random
from typing import Any

import pytest

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from framework.api.objects import Pod
from tests.framework.uids import remember_uids, uids_as_names
from tests.framework.test_columnar_equivalence import GPU, PROFILES, random_node, random_pod

CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
          "percentageOfNodesToScore": 30}


def config(profile: str) -> dict[str, Any]:
    """CONFIG with the plugin arguments of one of test_columnar_equivalence's profiles."""
    if not PROFILES[profile]:
        return CONFIG
    return {**CONFIG, "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": PROFILES[profile]}]}


def workload(seed: int, num_nodes: int, num_pods: int, gpu: str = "example.com/gpu"
             ) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """(nodes, pod batches): ordinary pods first, then preemptors and more pods."""
    rng = random.Random(seed)
    nodes = [{"kind": "Node", **random_node(rng, i, gpu).raw} for i in range(num_nodes)]
    batches: list[list[dict[str, Any]]] = []
    for b in range(3):
        batch = []
        for i in range(num_pods // 3):
            raw = dict(random_pod(rng, f"p{b}-{i}", gpu=gpu).raw)
            batch.append({"kind": "Pod", **raw})
        if b > 0:
            # Big high-priority pods: most fit only after evicting lower-priority ones.
            for i in range(num_pods // 15):
                raw = dict(random_pod(rng, f"vip{b}-{i}", gpu=gpu).raw)
                raw["spec"] = {**raw["spec"], "priority": 1000}
                raw["spec"]["containers"] = [{"name": "c", "image": "img/a:1",
                                              "resources": {"requests": {"cpu": rng.choice(["1", "2", "3"]),
                                                                         "memory": "1Gi"}}}]
                batch.append({"kind": "Pod", **raw})
        batches.append(batch)
    return nodes, batches


async def outcome(seed: int, num_nodes: int, num_pods: int, columnar: bool, profile: str = "default") -> dict[str, Any]:
    nodes, batches = workload(seed, num_nodes, num_pods, GPU.get(profile, "example.com/gpu"))
    async with Pipeline(config(profile), clock=FakeClock(), rand=random.Random(seed)) as p:
        for fwk in p.frameworks.values():
            fwk.use_columnar = columnar
        uids: dict[str, str] = {}
        await p.client.apply(nodes)
        await p.run_until_quiescent(60)
        for batch in batches:
            remember_uids(uids, await p.client.apply(batch))
            await p.run_until_quiescent(60)
        out: dict[str, Any] = {}
        for batch in batches:
            for raw in batch:
                key = f"default/{raw['metadata']['name']}"
                pod = p.store.peek("Pod", "default", raw["metadata"]["name"])
                events = [(e.type, e.reason, uids_as_names(uids, e.message)) for e in p.store.events_for("Pod", key)]
                if pod is None:
                    out[key] = {"deleted": True, "events": events}
                    continue
                assert isinstance(pod, Pod)
                cond = next((dict(c) for c in pod.conditions if c.get("type") == "PodScheduled"), {})
                cond.pop("lastTransitionTime", None)
                cond.pop("lastProbeTime", None)
                out[key] = {"node": pod.node_name, "nominated": pod.nominated_node_name,
                            "condition": cond, "events": events}
        return out


@pytest.mark.parametrize("seed,num_nodes,num_pods,profile", [
    (1, 40, 150, "default"), (2, 150, 240, "default"), (3, 120, 300, "default"),
    (4, 60, 150, "least-allocated-nvidia"), (5, 60, 150, "ratio-storage")], ids=lambda v: str(v))
async def test_every_binding_nomination_and_message_is_the_same_on_the_columnar_and_per_node_paths(
        seed, num_nodes, num_pods, profile):
    columnar = await outcome(seed, num_nodes, num_pods, columnar=True, profile=profile)
    per_node = await outcome(seed, num_nodes, num_pods, columnar=False, profile=profile)
    assert columnar.keys() == per_node.keys()
    for key in columnar:
        assert columnar[key] == per_node[key], key
    # The workload exercises what it claims: placements, failures and preemption.
    assert any(o.get("node") for o in columnar.values())
    assert any(e[1] == "FailedScheduling" for o in columnar.values() for e in o["events"])
    assert any(e[1] == "Preempted" for o in columnar.values() for e in o["events"]) or \
        any(o.get("deleted") for o in columnar.values())
