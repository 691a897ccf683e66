"""The Gang workload measured per group: groups per second and time to full placement.

Pod groups of `gang_size` members (minMember = size) under configs/coscheduling.yaml's
profile, submitted at once into the real actor pipeline on real time. A group's
time to full placement runs from the submission of the measured objects until its
last member's binding is written. With `contended=True` the cluster holds only
about half of the groups at once and the other half binds as the first half's
pods complete (each completed group frees its room), which exercises the
admission ledger, rejections and requeueing rather than the happy path.

With `api="workload"` (the GangWorkload workload) the groups are Kubernetes' own
scheduling.k8s.io/v1alpha2 PodGroups (gang minCount = size, members naming them in
spec.schedulingGroup) under the default profile, where GangScheduling places them.
With `api="topology"` (GangTopology) the same PodGroups carry a rack constraint
(schedulingConstraints.topology) and the nodes sit in racks of RACK_SIZE within
blocks of BLOCK_RACKS racks (node labels RACK_LABEL, BLOCK_LABEL): 5,000 nodes make
250 racks in 25 blocks.

The bench runner calls `run_gang_bench(nodes, pods)`; the result carries the
runner's keys (workload, nodes, pods, scheduled, pods_per_s, p50_ms, p99_ms) plus
groups, groups_bound, groups_per_s, group_p50_ms, group_p99_ms.
"""
from __future__ import annotations

import asyncio
import tempfile
import time
from typing import Any

from actors.pipeline import Pipeline
from actors.store.memory import InMemoryBackend
from actors.store.sqlite import SQLiteBackend
from bench.harness import bench_metrics, daemon_collector
from bench.measure import Counters, peak_rss_mb, percentile, stats_snapshot
from bench.workloads import API, BenchWorkload, node, pod

GANG_SIZE = 8
RACK_SIZE, BLOCK_RACKS = 20, 10
RACK_LABEL, BLOCK_LABEL = "topology.ksched.io/rack", "topology.ksched.io/block"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
WORKLOAD_NAMES = {"coscheduling": "Gang", "workload": "GangWorkload", "topology": "GangTopology"}


def gang_config(permit_wait: int = 60, feature_gates: dict[str, bool] | None = None) -> dict[str, Any]:
    gates = {"featureGates": dict(feature_gates)} if feature_gates else {}
    return {"apiVersion": API, "kind": "KubeSchedulerConfiguration", **gates, "profiles": [{
        "schedulerName": "default-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
        "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": permit_wait}}]}]}


def workload_config(feature_gates: dict[str, bool] | None = None) -> dict[str, Any]:
    """The default profile: GangScheduling is in it while GenericWorkload is on."""
    gates = {"featureGates": dict(feature_gates)} if feature_gates else {}
    return {"apiVersion": API, "kind": "KubeSchedulerConfiguration", **gates}


def _group(api: str, g: int, gang_size: int) -> dict[str, Any]:
    if api == "topology":
        pg = _group("workload", g, gang_size)
        pg["spec"]["schedulingConstraints"] = {"topology": [{"key": RACK_LABEL}]}
        return pg
    if api == "workload":
        return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                "metadata": {"name": f"pg-{g}", "namespace": "default"},
                "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "bench", "podGroupTemplateName": "workers"}},
                         "schedulingPolicy": {"gang": {"minCount": gang_size}}}}
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": f"pg-{g}", "namespace": "default"},
            "spec": {"minMember": gang_size, "scheduleTimeoutSeconds": 60}}


def _member(api: str, g: int, i: int, cpu: str) -> dict[str, Any]:
    if api in ("workload", "topology"):
        raw = pod(f"pg-{g}-{i}", cpu=cpu, memory="100Mi")
        raw["spec"]["schedulingGroup"] = {"podGroupName": f"pg-{g}"}
        return raw
    return pod(f"pg-{g}-{i}", cpu=cpu, memory="100Mi", labels={POD_GROUP_LABEL: f"pg-{g}"})


def group_of(pod_obj: Any) -> str | None:
    """The group a bound pod counts for: its scheduling.k8s.io PodGroup, else its
    Coscheduling label."""
    return pod_obj.scheduling_group or pod_obj.labels.get(POD_GROUP_LABEL)


def rack_labels(i: int) -> dict[str, str]:
    rack = i // RACK_SIZE
    return {RACK_LABEL: f"rack-{rack}", BLOCK_LABEL: f"block-{rack // BLOCK_RACKS}"}


def gang_objects(nodes: int, pods: int, gang_size: int = GANG_SIZE, contended: bool = False,
                 cpu: str | None = None, api: str = "coscheduling") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(setup: nodes, measured: PodGroups and their members)."""
    groups = max(1, pods // gang_size)
    # Default nodes hold 4 cpu; uncontended members ask 100m (or `cpu`), contended
    # ones so much that about half of the groups fit at once.
    cpu = cpu or "100m"
    if contended:
        per_member_m = max(100, (nodes * 4000 * 2) // (groups * gang_size))
        cpu = f"{min(per_member_m, 4000)}m"
    setup = [node(i, labels=rack_labels(i) if api == "topology" else None) for i in range(nodes)]
    measured: list[dict[str, Any]] = []
    for g in range(groups):
        measured.append(_group(api, g, gang_size))
        measured += [_member(api, g, i, cpu) for i in range(gang_size)]
    return setup, measured


def gang_bench_workload(api: str, gang_size: int = GANG_SIZE) -> Any:
    """The groups of `api` as a BenchWorkload (nodes as setup, PodGroups and members
    measured), for drivers that take one, such as `python -m bench.profile`; its
    `extra["gang_size"]` lets them count per group."""
    def build(nodes: int, pods: int) -> BenchWorkload:
        setup, measured = gang_objects(nodes, pods, gang_size, api=api)
        # Only the members bind: the profile ends at the last member's bind, not when it
        # gives up waiting for the PodGroups to bind too.
        members = sum(1 for obj in measured if obj.get("kind") == "Pod")
        return BenchWorkload(WORKLOAD_NAMES[api], workload_config(), setup, measured,
                             expected=members, extra={"gang_size": gang_size})
    return build


async def run_gang(nodes: int, pods: int, gang_size: int = GANG_SIZE, contended: bool = False,
                   max_seconds: float = 600.0, store: str = "memory", feature_gates: dict[str, bool] | None = None,
                   cpu: str | None = None, api: str = "coscheduling") -> dict[str, Any]:
    config = workload_config(feature_gates) if api != "coscheduling" else gang_config(feature_gates=feature_gates)
    with tempfile.TemporaryDirectory(prefix="ksched-bench-") as data_dir:
        backend = SQLiteBackend(data_dir) if store == "sqlite" else InMemoryBackend()
        with daemon_collector():  # as `ksched serve` runs it, like every in-process bench
            result = await _run_gang(nodes, pods, gang_size, contended, max_seconds, backend, config, cpu, api)
    rss = peak_rss_mb()
    return {**result, "store": store, "transport": "in-process", "peak_rss_mb": rss, "rss_mb": rss}


async def _run_gang(nodes: int, pods: int, gang_size: int, contended: bool, max_seconds: float,
                    backend: Any, config: dict[str, Any], cpu: str | None, api: str) -> dict[str, Any]:
    setup, measured = gang_objects(nodes, pods, gang_size, contended, cpu, api)
    groups = {o["metadata"]["name"] for o in measured if o["kind"] == "PodGroup"}
    bound_at: dict[str, float] = {}
    members_bound: dict[str, int] = {}
    done = asyncio.Event()
    progress = asyncio.Event()  # a group became fully bound
    start = 0.0

    async with Pipeline(config, backend=backend, metrics=bench_metrics()) as p:
        for i in range(0, len(setup), 500):
            await p.client.apply(setup[i:i + 500])
        await p.settle(None)
        pending_completion: list[str] = []

        def observe(ev: Any) -> None:
            pod_obj, old = ev.obj, ev.old
            if ev.kind != "Pod" or not pod_obj.node_name or (old is not None and old.node_name):
                return
            g = group_of(pod_obj)
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
        before = await stats_snapshot(p)
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
        elapsed = (max(bound_at.values()) if bound_at else time.perf_counter() - start)
        after = await stats_snapshot(p)
        counters = Counters.between(before, after)
        lat = [x * 1000 for x in after.e2e_latencies]
        scheduled = sum(members_bound.values())
    group_ms = [t * 1000 for t in bound_at.values()]
    return {
        "workload": WORKLOAD_NAMES[api] + ("Contended" if contended else ""),
        "nodes": nodes,
        "pods": len(groups) * gang_size,
        "scheduled": scheduled,
        "pods_per_s": round(scheduled / elapsed, 1) if elapsed > 0 else 0.0,
        "p50_ms": round(percentile(lat, 0.5), 3),
        "p99_ms": round(percentile(lat, 0.99), 3),
        **counters.result(len(groups) * gang_size, None),
        "gang_size": gang_size,
        "ms_per_group": round(elapsed * 1000 / len(bound_at), 3) if bound_at else 0.0,
        "groups": len(groups),
        "groups_bound": len(bound_at),
        "groups_per_s": round(len(bound_at) / elapsed, 2) if elapsed > 0 else 0.0,
        "group_p50_ms": round(percentile(group_ms, 0.5), 3),
        "group_p99_ms": round(percentile(group_ms, 0.99), 3),
        "elapsed_s": round(elapsed, 3),
    }


def run_gang_bench(nodes: int, pods: int, *, gang_size: int = GANG_SIZE, contended: bool = False,
                   store: str = "sqlite", feature_gates: dict[str, bool] | None = None,
                   api: str = "coscheduling") -> dict[str, Any]:
    """Entry point for the bench runner (`ksched bench Gang`, `GangWorkload`)."""
    return asyncio.run(run_gang(nodes, pods, gang_size=gang_size, contended=contended, store=store,
                                feature_gates=feature_gates, api=api))
