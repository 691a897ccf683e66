"""The Gang workload measured per group: groups per second and time to full placement.

Pod groups of `gang_size` members (minMember = size) under configs/coscheduling.yaml's
profile, submitted at once into the real actor pipeline on real time. A group's
time to full placement runs from the submission of the measured objects until its
last member's binding is written. With `contended=True` the cluster holds only
about half of the groups at once and the other half binds as the first half's
pods complete (each completed group frees its room), which exercises the
admission ledger, rejections and requeueing rather than the happy path.

The bench runner calls `run_gang_bench(nodes, pods)`; the result carries the
runner's keys (workload, nodes, pods, scheduled, pods_per_s, p50_ms, p99_ms) plus
groups, groups_bound, groups_per_s, group_p50_ms, group_p99_ms.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

from actors.pipeline import Pipeline
from bench.workloads import API, node, pod

GANG_SIZE = 8
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def gang_config(permit_wait: int = 60) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "KubeSchedulerConfiguration", "profiles": [{
        "schedulerName": "default-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
        "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": permit_wait}}]}]}


def gang_objects(nodes: int, pods: int, gang_size: int = GANG_SIZE,
                 contended: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(setup: nodes, measured: PodGroups and their members)."""
    groups = max(1, pods // gang_size)
    # Default nodes hold 4 cpu; uncontended members ask 100m, contended ones so
    # much that about half of the groups fit at once.
    cpu = "100m"
    if contended:
        per_member_m = max(100, (nodes * 4000 * 2) // (groups * gang_size))
        cpu = f"{min(per_member_m, 4000)}m"
    setup = [node(i) for i in range(nodes)]
    measured: list[dict[str, Any]] = []
    for g in range(groups):
        measured.append({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                         "metadata": {"name": f"pg-{g}", "namespace": "default"},
                         "spec": {"minMember": gang_size, "scheduleTimeoutSeconds": 60}})
        measured += [pod(f"pg-{g}-{i}", cpu=cpu, memory="100Mi", labels={POD_GROUP_LABEL: f"pg-{g}"})
                     for i in range(gang_size)]
    return setup, measured


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


async def run_gang(nodes: int, pods: int, gang_size: int = GANG_SIZE, contended: bool = False,
                   max_seconds: float = 600.0) -> dict[str, Any]:
    setup, measured = gang_objects(nodes, pods, gang_size, contended)
    groups = {o["metadata"]["name"] for o in measured if o["kind"] == "PodGroup"}
    bound_at: dict[str, float] = {}
    members_bound: dict[str, int] = {}
    done = asyncio.Event()
    progress = asyncio.Event()  # a group became fully bound
    start = 0.0

    async with Pipeline(gang_config()) as p:
        for i in range(0, len(setup), 500):
            await p.client.apply(setup[i:i + 500])
        await p.settle(None)
        pending_completion: list[str] = []

        def observe(ev: Any) -> None:
            pod_obj, old = ev.obj, ev.old
            if ev.kind != "Pod" or not pod_obj.node_name or (old is not None and old.node_name):
                return
            g = pod_obj.labels.get(POD_GROUP_LABEL)
            if g not in groups:
                return
            members_bound[g] = members_bound.get(g, 0) + 1
            if members_bound[g] == gang_size:
                bound_at[g] = time.perf_counter() - start
                progress.set()
                if contended:
                    pending_completion.append(g)
                if len(bound_at) == len(groups):
                    done.set()

        await p.client.watch(observe, kinds=frozenset({"Pod"}))
        start = time.perf_counter()
        for i in range(0, len(measured), 500):
            await p.client.apply(measured[i:i + 500])
        deadline = start + max_seconds
        while not done.is_set() and time.perf_counter() < deadline:
            while pending_completion:
                g = pending_completion.pop(0)
                for i in range(gang_size):
                    await p.client.update_pod_status("default", f"{g}-{i}", phase="Succeeded")
            progress.clear()
            try:
                await asyncio.wait_for(progress.wait(), timeout=1.0)
            except TimeoutError:
                if p.idle() and not pending_completion:
                    break  # nothing moves any more: the rest cannot be placed
        elapsed = time.perf_counter() - start
        lat = [x * 1000 for x in p.scheduler.stats.latencies]
        scheduled = sum(members_bound.values())
    group_ms = [t * 1000 for t in bound_at.values()]
    return {
        "workload": "Gang" + ("Contended" if contended else ""),
        "nodes": nodes,
        "pods": len(groups) * gang_size,
        "scheduled": scheduled,
        "pods_per_s": round(scheduled / elapsed, 1) if elapsed > 0 else 0.0,
        "p50_ms": round(_percentile(lat, 0.5), 3),
        "p99_ms": round(_percentile(lat, 0.99), 3),
        "groups": len(groups),
        "groups_bound": len(bound_at),
        "groups_per_s": round(len(bound_at) / elapsed, 2) if elapsed > 0 else 0.0,
        "group_p50_ms": round(_percentile(group_ms, 0.5), 3),
        "group_p99_ms": round(_percentile(group_ms, 0.99), 3),
        "elapsed_s": round(elapsed, 3),
    }


def run_gang_bench(nodes: int, pods: int, contended: bool = False) -> dict[str, Any]:
    """Entry point for the bench runner (`ksched bench Gang`)."""
    return asyncio.run(run_gang(nodes, pods, contended=contended))
