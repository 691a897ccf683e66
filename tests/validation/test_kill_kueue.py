"""Kueue under kill -9: queue-labelled pods, Kueue pod groups and Coscheduling gangs
stream in from several clients into three ClusterQueues that borrow from each other
in one cohort, a client completes admitted workloads (so quota frees and more
admit), and the daemon is killed with SIGKILL at seeded random moments and
restarted on the same data directory, KSCHED_KILL_LOOPS times (tests/validation/kill_loops.py).

Checked: every state a watching client sees (kueue_ledger.Ledger: no ClusterQueue
over nominal + borrowingLimit, no pod bound twice); after every restart every
acknowledged object is there and every acknowledged completion kept; at the end,
once settled, every gang bound whole or not at all."""
from __future__ import annotations

import random
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from transport.client.tcp import SyncClient
from transport.protocol.wire import ApiError

from tests.e2e.conftest import ROOT, DaemonProcess, poll
from tests.validation.kill_loops import KILL_LOOPS, KILL_SEED, Acks, Watcher, start_thread
from tests.validation.kueue_ledger import QUEUE_LABEL, Ledger, QueueLimit

V = "kueue.x-k8s.io/v1beta2"
KUEUE_GROUP, KUEUE_TOTAL = "kueue.x-k8s.io/pod-group-name", "kueue.x-k8s.io/pod-group-total-count"
GANG_LABEL = "scheduling.x-k8s.io/pod-group"
GATE = "kueue.x-k8s.io/admission"
LIMITS = {"team-a": QueueLimit("a", 3000, 2000), "team-b": QueueLimit("b", 3000, 1000),
          "team-c": QueueLimit("c", 2000, None)}
CLIENTS = 3
SUBMISSIONS_PER_CYCLE = 400  # per client and daemon life


def queue_objects() -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [
        {"apiVersion": V, "kind": "ResourceFlavor", "metadata": {"name": "on-demand"},
         "spec": {"nodeLabels": {"tier": "on-demand"}}}]
    for cq, lim in LIMITS.items():
        quota: dict[str, Any] = {"name": "cpu", "nominalQuota": f"{lim.nominal}m"}
        if lim.borrowing_limit is not None:
            quota["borrowingLimit"] = f"{lim.borrowing_limit}m"
        objs.append({"apiVersion": V, "kind": "ClusterQueue", "metadata": {"name": cq}, "spec": {
            "cohortName": "pool", "namespaceSelector": {},
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "on-demand", "resources": [quota]}]}]}})
        objs.append({"apiVersion": V, "kind": "LocalQueue", "metadata": {"name": lim.local_queue, "namespace": "default"},
                     "spec": {"clusterQueue": cq}})
    # 16 cpu of nodes under an 8-cpu cohort: whatever Kueue admits fits.
    objs += [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": {"tier": "on-demand"}},
              "status": {"allocatable": {"cpu": "4", "memory": "64Gi", "pods": "110"}}} for i in range(4)]
    return objs


def queued_pod(name: str, queue: str, cpu: str, labels: dict[str, str] | None = None,
               annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {QUEUE_LABEL: queue, **(labels or {})}}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}


def submission(name: str, rng: random.Random) -> list[dict[str, Any]]:
    """A single pod, a Kueue pod group, or a Coscheduling gang (PodGroup and pods), one apply."""
    queue = rng.choice([lim.local_queue for lim in LIMITS.values()])
    roll, n = rng.random(), rng.randint(2, 3)
    if roll < 0.5:
        return [queued_pod(name, queue, rng.choice(["500m", "1"]))]
    if roll < 0.75:
        return [queued_pod(f"{name}-{i}", queue, "500m", {KUEUE_GROUP: name}, {KUEUE_TOTAL: str(n)}) for i in range(n)]
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": name, "namespace": "default"}, "spec": {"minMember": n}}
    return [group, *(queued_pod(f"{name}-{i}", queue, "500m", {GANG_LABEL: name}) for i in range(n))]


def group_of(raw: dict[str, Any]) -> str:
    labels = raw["metadata"].get("labels") or {}
    return labels.get(KUEUE_GROUP) or labels.get(GANG_LABEL) or ""


def is_done(raw: dict[str, Any]) -> bool:
    return (raw.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def submit(d: DaemonProcess, tag: str, rng: random.Random, acks: Acks, stop: threading.Event) -> None:
    with d.client() as c:
        # Bounded: an unbounded stream outruns admission on a loaded machine (seed 263: 87,000
        # gated pods in 120 s, each completer listing slower than the last, no completion).
        for n in range(SUBMISSIONS_PER_CYCLE):
            if stop.is_set():
                return
            objs = submission(f"{tag}-{n}", rng)
            c.apply(objs)
            acks.add([(o["kind"], o["metadata"]["name"]) for o in objs])


def complete(d: DaemonProcess, rng: random.Random, completions: Acks, stop: threading.Event,
             refusals: Counter[str]) -> None:
    """Finish workloads whose pods are all bound: every member Succeeded (the rest of a
    group a kill -9 cut short mid-way too). A refusal of one pod (a Conflict that
    outlasted the retries, say) skips it and is counted; only the daemon's death ends
    this client."""
    with d.client() as c:
        while not stop.is_set():
            pods, _ = c.list("Pod", "default")
            units: dict[str, list[dict[str, Any]]] = {}
            for p in pods:
                units.setdefault(group_of(p) or p["metadata"]["name"], []).append(p)
            ready = [ms for ms in units.values()
                     if all(m["spec"].get("nodeName") for m in ms) and not all(is_done(m) for m in ms)]
            for ms in rng.sample(ready, min(len(ready), 3)):
                for m in ms:  # (the pod completed, not the one listed: an eviction may have replaced it)
                    if is_done(m):
                        continue
                    try:
                        done = c.complete(m["metadata"]["name"], "default")
                    except ApiError as e:  # (a dead daemon is a ConnectionError, not this)
                        refusals[e.reason] += 1
                        continue
                    completions.add([(m["metadata"]["name"], done["metadata"]["uid"])])
            stop.wait(0.05)  # pacing of this client's load, not a wait for a condition


def check_after_restart(c: SyncClient, acked: list, completed: list, figures: Counter[str]) -> list[str]:
    pods, _ = c.list("Pod", "default")
    groups, _ = c.list("PodGroup", "default")
    present = {("Pod", p["metadata"]["name"]) for p in pods} | {("PodGroup", g["metadata"]["name"]) for g in groups}
    by_name = {p["metadata"]["name"]: p for p in pods}
    problems = [f"acknowledged {kind} {name} lost" for kind, name in sorted(set(acked) - present)]
    for name, uid in completed:
        p = by_name.get(name)
        if p is not None and p["metadata"]["uid"] != uid:
            figures["completed pods re-created"] += 1
        elif p is None or not is_done(p):
            problems.append(f"acknowledged completion of pod {name} lost")
    return problems


def settled(c: SyncClient) -> tuple[list[str], int] | None:
    """None while some released pod still waits for its node; else (partial gangs, pods)."""
    pods, _ = c.list("Pod", "default")
    # A Coscheduling gang finished in part and then evicted keeps a finished member beside
    # a re-gated one that Coscheduling (as upstream, which does not see finished pods)
    # cannot place; a Kueue pod group's re-gated members are placed as any pod.
    part_finished = {group_of(p) for p in pods if (p["metadata"].get("labels") or {}).get(GANG_LABEL) and is_done(p)}
    released_unbound = [p for p in pods if not p["spec"].get("nodeName") and not is_done(p)
                        and group_of(p) not in part_finished
                        and not any(g.get("name") == GATE for g in p["spec"].get("schedulingGates") or [])]
    if released_unbound:
        return None
    # Finished members are left out: the completer finishes only groups bound whole, so a
    # group the scheduler bound in part keeps its bound members unfinished.
    members: dict[str, list[dict[str, Any]]] = {}
    for p in pods:
        if group_of(p) and not is_done(p):
            members.setdefault(group_of(p), []).append(p)
    partial = sorted(g for g, ms in members.items()
                     if 0 < sum(1 for m in ms if m["spec"].get("nodeName")) < len(ms))
    return partial, len(pods)


def test_kueue_admission_under_kill_9_never_loses_an_acknowledged_object_nor_exceeds_a_quota(
        daemon_factory, tmp_path: Path, summary) -> None:
    rng = random.Random(KILL_SEED)
    config = str(ROOT / "configs" / "coscheduling.yaml")
    data = tmp_path / "data"
    ledger = Ledger(LIMITS)
    acks, completions = Acks(), Acks()
    problems: list[str] = []
    figures: Counter[str] = Counter()
    refusals: Counter[str] = Counter()  # completions the daemon refused, by reason
    stderr: list[str] = []
    d = daemon_factory("--config", config, data_dir=data)
    with d.client() as c:
        c.apply(queue_objects())
    for cycle in range(KILL_LOOPS + 1):
        start_thread(lambda d=d: stderr.extend(line.decode() for line in d.proc.stderr))  # keep the pipe drained
        watcher = Watcher(d, ["Workload", "Pod"], ledger.see)
        if cycle == KILL_LOOPS:
            break
        stop = threading.Event()
        threads = [start_thread(lambda i=i, r=random.Random(rng.random()): submit(d, f"k{cycle}c{i}", r, acks, stop))
                   for i in range(CLIENTS)]
        threads.append(start_thread(lambda r=random.Random(rng.random()): complete(d, r, completions, stop, refusals)))
        # The moment: after some acknowledged submissions, completions or admissions.
        trigger = rng.choice([(acks, 15, 60), (completions, 3, 12), (ledger.admissions, 3, 12)])
        trigger[0].rearm(rng.randint(trigger[1], trigger[2]))
        assert trigger[0].reached.wait(timeout=120), f"no progress before kill {cycle + 1}"
        d.kill9()
        watcher.retire()
        for t in threads:
            t.join(timeout=30)
        figures["kills"] += 1
        d = daemon_factory("--config", config, data_dir=data)
        ledger.reset_view()
        with d.client() as c:
            problems += check_after_restart(c, acks.snapshot(), completions.snapshot(), figures)

    # A short loop may kill every time before the admission actor's first cycle: wait for one
    # admission then (with nothing admitted, nothing holds quota, so a queued workload fits).
    ledger.admissions.rearm(1)
    assert ledger.figures["admissions observed"] > 0 or ledger.admissions.reached.wait(timeout=120), \
        "no admission after the last restart"
    with d.client() as c:
        partial, pods = poll(lambda: settled(c), "every released pod bound after the last restart", attempts=2400)
        problems += check_after_restart(c, acks.snapshot(), completions.snapshot(), figures)
    assert d.terminate() == 0
    watcher.retire()
    acked = acks.snapshot()
    kinds = Counter(kind for kind, _ in acked)
    tracebacks = [line for line in stderr if "Traceback" in line]
    summary(f"kueue kill -9: kills={figures['kills']} acknowledged={len(acked)} (pods={kinds['Pod']}, "
            f"PodGroups={kinds['PodGroup']}) completions={len(completions.snapshot())} "
            f"admissions observed={ledger.figures['admissions observed']} "
            f"evictions observed={ledger.figures['evictions observed']} states checked={ledger.figures['states checked']} "
            f"completed re-created={figures['completed pods re-created']} lost={len(problems)} "
            f"completions refused={dict(refusals)} "
            f"quota/binding violations={len(ledger.violations)} partial gangs={len(partial)} tracebacks={len(tracebacks)}")
    warnings = [line for line in stderr if "admission:" in line]  # what the actor could not write, for a failure
    assert problems == [] and ledger.violations == [] and partial == [] and tracebacks == [], warnings[-20:]
    assert pods >= kinds["Pod"] and ledger.figures["admissions observed"] > 0
