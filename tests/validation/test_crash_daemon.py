"""kill -9 at random moments while pods and gangs stream in from several clients,
over several cycles. After each restart every acknowledged object is present, no
pod has moved to another node, and no node is over-committed; at the end every pod
is bound and every gang whole.

KSCHED_CRASH_CYCLES sets the number of kill -9 cycles (default 8)."""
from __future__ import annotations

import os
import random
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from transport.protocol.wire import ApiError

from tests.e2e.conftest import ROOT, DaemonProcess, poll

CYCLES = int(os.environ.get("KSCHED_CRASH_CYCLES", "8"))
CLIENTS = 3
NODE_MILLI_CPU, POD_MILLI_CPU, GANG = 16_000, 100, 3
NODES = 5 * -(-CYCLES // 8)  # 800 pods fit per 8 cycles (they bring ~550): all must bind, few spare
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def pod(name: str, group: str = "") -> dict[str, Any]:
    labels = {"crash": "yes", **({GROUP_LABEL: group} if group else {})}
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": f"{POD_MILLI_CPU}m"}}}]}}


def gang(name: str) -> list[dict[str, Any]]:
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": GANG}}
    return [group, *(pod(f"{name}-m{i}", name) for i in range(GANG))]


class Stream(threading.Thread):
    """One client: single pods and whole gangs (one Apply each) until the daemon dies;
    `acked` holds what the daemon acknowledged."""

    def __init__(self, d: DaemonProcess, tag: str, rng: random.Random, ack: "Acks") -> None:
        super().__init__(daemon=True)
        self.d, self.tag, self.rng, self.ack = d, tag, rng, ack

    def run(self) -> None:
        try:
            with self.d.client() as c:
                for n in range(10_000):
                    name = f"{self.tag}-{n}"
                    if self.rng.random() < 0.3:
                        objs = gang(name)
                        c.apply(objs)
                    else:
                        objs = [pod(name)]
                        c.create(objs[0])
                    self.ack.add([(o["kind"], o["metadata"]["name"]) for o in objs])
        except (ApiError, OSError):
            return  # the daemon was killed under us


class Acks:
    def __init__(self, target: int) -> None:
        self.lock = threading.Lock()
        self.objects: list[tuple[str, str]] = []
        self.target = target
        self.reached = threading.Event()

    def add(self, objs: list[tuple[str, str]]) -> None:
        with self.lock:
            self.objects += objs
            if len(self.objects) >= self.target:
                self.reached.set()


def observe(d: DaemonProcess) -> tuple[set[tuple[str, str]], dict[str, str], dict[str, list[dict]]]:
    with d.client() as c:
        pods, _ = c.list("Pod", "default")
        groups, _ = c.list("PodGroup", "default")
    present = {("Pod", p["metadata"]["name"]) for p in pods} | {("PodGroup", g["metadata"]["name"]) for g in groups}
    bound = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")}
    members: dict[str, list[dict]] = {}
    for p in pods:
        g = p["metadata"]["labels"].get(GROUP_LABEL)
        if g:
            members.setdefault(g, []).append(p)
    return present, bound, members


def test_kill_9_at_random_moments_under_streaming_pods_and_gangs_loses_nothing_acknowledged(daemon_factory,
                                                                                           tmp_path: Path, summary):
    rng = random.Random(13)
    config = ROOT / "configs" / "coscheduling.yaml"
    data = tmp_path / "data"
    d = daemon_factory("--config", str(config), data_dir=data)
    with d.client() as c:
        c.apply([{"kind": "Node", "metadata": {"name": f"node-{i}"},
                  "status": {"allocatable": {"cpu": f"{NODE_MILLI_CPU}m", "memory": "64Gi", "pods": "1000"}}}
                 for i in range(NODES)])
    acked: set[tuple[str, str]] = set()
    seen_on: dict[str, str] = {}
    figures: Counter[str] = Counter()
    for cycle in range(CYCLES):
        acks = Acks(target=rng.randint(20, 150))
        streams = [Stream(d, f"y{cycle}c{i}", random.Random(rng.random()), acks) for i in range(CLIENTS)]
        for s in streams:
            s.start()
        assert acks.reached.wait(timeout=60), "the clients' writes were not acknowledged"
        d.kill9()
        for s in streams:
            s.join(timeout=30)
        acked |= set(acks.objects)
        d = daemon_factory("--config", str(config), data_dir=data)
        figures["cycles"] += 1
        present, bound, _ = observe(d)
        figures["lost"] += len(acked - present)
        # A pod seen bound to one node and later to another was bound twice.
        figures["moved"] += sum(1 for name, node in bound.items() if seen_on.setdefault(name, node) != node)
        used = Counter(bound.values())
        figures["over-committed"] += sum(1 for n in used.values() if n * POD_MILLI_CPU > NODE_MILLI_CPU)

    def settled() -> tuple | None:
        state = observe(d)
        pods = {name for kind, name in state[0] if kind == "Pod"}
        return state if len(state[1]) == len(pods) else None

    present, bound, members = poll(settled, "every pod bound after the last restart", attempts=2000)
    figures["moved"] += sum(1 for name, node in bound.items() if seen_on.setdefault(name, node) != node)
    partial = [g for g, ms in members.items() if 0 < sum(1 for m in ms if m["spec"].get("nodeName")) < GANG]
    assert d.terminate() == 0
    pods_acked = sum(1 for kind, _ in acked if kind == "Pod")
    summary(f"crash: cycles={figures['cycles']} clients={CLIENTS} acknowledged={len(acked)} (pods={pods_acked}, "
            f"gangs={len(members)}) lost={figures['lost']} double-bound={figures['moved']} "
            f"over-committed={figures['over-committed']} partial-gangs={len(partial)} crashes=0")
    assert (figures["lost"], figures["moved"], figures["over-committed"], partial) == (0, 0, 0, [])
    assert len(bound) == len({name for kind, name in present if kind == "Pod"})
