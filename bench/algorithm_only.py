"""`python -m bench.algorithm_only NODES PODS`: the scheduling algorithm alone, no actors.

The default profile over NODES identical nodes (4 cpu, 32Gi), the scheduler's
NodeLocalColumns kept across cycles as Scheduler.schedule_one keeps them, PODS pods of
one template (100m, 100Mi) each assumed where it lands, the snapshot updated between
cycles. Prints the process CPU of the algorithm calls per pod and a digest of the
chosen nodes (the same digest: the same placements, with the seeded rng). Run it under
callgrind with two pod counts and take the difference for instructions per pod.
"""
from __future__ import annotations

import hashlib
import random
import sys
import time

from framework.algorithm import SchedulingAlgorithm
from framework.api.objects import Node, Pod
from framework.cache import Cache, Snapshot
from framework.config import build_frameworks, load_config
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import CycleState
from framework.runtime.node_local import NodeLocalColumns

CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
ALLOCATABLE = {"cpu": "4", "memory": "32Gi", "pods": "110"}


def node(i: int) -> Node:
    name = f"n{i:05d}"
    return Node({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                 "status": {"capacity": ALLOCATABLE, "allocatable": ALLOCATABLE}})


def pod(i: int) -> Pod:
    return Pod({"metadata": {"name": f"p{i}", "namespace": "default", "uid": f"u{i}"},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                         "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}}}]}})


def run(nodes: int, pods: int, columns: bool = True) -> tuple[float, str]:
    """(algorithm CPU seconds per pod, digest of the placements); `columns` False: every
    cycle runs its whole passes (the digest must not change)."""
    node_objs = [node(i) for i in range(nodes)]
    cache, snapshot = Cache(), Snapshot()
    for n in node_objs:
        cache.add_node(n)
    objects = InMemoryObjects(node_objs)
    handle = FrameworkHandle(snapshot=snapshot, objects=objects, clock=lambda: 0.0)
    fwk = build_frameworks(load_config(CONFIG), handle)["default-scheduler"]
    algorithm = SchedulingAlgorithm(random.Random(1))
    kept = NodeLocalColumns() if columns else None
    placed: list[str] = []
    cpu = 0.0
    for k in range(pods):
        p = pod(k)
        cache.update_snapshot(snapshot)
        handle.set_snapshot(snapshot)
        if kept is not None:
            kept.begin_cycle(p, objects.revision)
        algorithm.node_local = kept
        start = time.process_time()
        result = algorithm.schedule_pod(fwk, CycleState(), p, snapshot)
        cpu += time.process_time() - start
        algorithm.node_local = None
        placed.append(result.suggested_host)
        cache.assume_pod(p.with_node_name(result.suggested_host), result.suggested_host)
    return cpu / pods, hashlib.sha1(" ".join(placed).encode()).hexdigest()[:12]


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    nodes, pods = (int(a) for a in args[:2]) if len(args) >= 2 else (5000, 1000)
    per_pod, digest = run(nodes, pods)
    print(f"algorithm_us_per_pod={1e6 * per_pod:.1f} placements={digest}")


if __name__ == "__main__":
    main()
