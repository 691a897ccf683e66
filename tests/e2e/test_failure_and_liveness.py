"""On the real daemon: a plugin that raises fails only the pod it concerns (the
daemon keeps serving and the pod is retried with backoff), and gangs that cannot
reach their quorum with podGroupBackoffSeconds 0 (the shipped default) leave the
scheduler quiet."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.conftest import ROOT, poll
from tests.gang.harness import node, pod, pod_group
from tests.gang.test_gang_pipeline import objs
from transport.client.tcp import SyncClient

RAISING_SORT = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: default-scheduler
    plugins:
      queueSort:
        enabled: [{name: "tests.actors.raising_plugins:RaisingSort"}]
        disabled: [{name: "*"}]
"""


def plain(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    raw = pod(name, 1)
    raw["metadata"].pop("uid")
    if labels:
        raw["metadata"]["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", **raw}


def pod_names(c: SyncClient) -> list[str]:
    items, _ = c.list("Pod")
    return sorted(raw["metadata"]["name"] for raw in items)


def test_a_queue_sort_plugin_that_raises_fails_only_its_pod_which_is_retried_until_it_binds(
        daemon_factory, tmp_path: Path) -> None:
    config = tmp_path / "raising.yaml"
    config.write_text(RAISING_SORT)
    d = daemon_factory("--config", str(config))
    c = d.client()
    # While the scheduler tries "a", the others wait in activeQ, where "boom" is
    # compared with them and the QueueSort plugin raises.
    c.apply(objs("Node", [node("n0", 8)]))
    c.apply([plain("a"), plain("b"), plain("boom", {"boom": "yes"}), plain("c")])

    def all_bound() -> bool | None:
        items, _ = c.list("Pod")
        return all(raw["spec"].get("nodeName") for raw in items) or None

    poll(all_bound, "every pod bound, boom after its error backoff", attempts=2400)
    assert "ok" in d.http_get("/readyz")
    assert d.terminate() == 0
    stderr = d.proc.stderr.read().decode() if d.proc is not None and d.proc.stderr is not None else ""
    assert 'pod default/boom: running QueueSort plugin "RaisingSort"' in stderr, stderr


def at_rest(stats: dict[str, Any]) -> bool:
    q = stats["queue"]
    return (q["active"] == 0 and q["backoff"] == 0 and q["inFlight"] == 0 and stats["waitingPods"] == 0
            and stats["scheduler"]["bindingCycles"] == 0)


def test_a_gang_that_cannot_reach_its_quorum_leaves_the_attempts_counter_flat(daemon_factory) -> None:
    d = daemon_factory("--config", str(ROOT / "configs" / "coscheduling.yaml"))  # podGroupBackoffSeconds: 0
    c = d.client()
    c.apply(objs("Node", [node("n0", 4), node("n1", 7)]))
    # A low-priority gang takes 6 of the 11 cpu; then a gang of five 2-cpu members
    # cannot reach its quorum (at most two fit), though preempting the first gang
    # could make room, so the placement check cannot rule it out up front.
    c.apply(objs("PodGroup", [pod_group("blocker", 3)]))
    c.apply(objs("Pod", [pod(f"blocker-{i}", cpu, "blocker", 0) for i, cpu in enumerate([3, 1, 2])]))
    for _ in range(30_000):  # bounded: each turn is one round trip, no sleep
        stats = c.stats()
        if stats["scheduler"]["scheduled"] == 3 and at_rest(stats):
            break
    else:
        raise AssertionError(f"the blocker gang was not bound: {stats}")
    c.apply(objs("PodGroup", [pod_group("big", 5, timeout=2)]))
    c.apply(objs("Pod", [pod(f"big-{i}", 2, "big", 10) for i in range(5)]))
    for _ in range(30_000):  # until the gang is reported pending and the scheduler is at rest (~2 s here)
        stats = c.stats()
        if stats["queue"]["unschedulable"] == 5 and at_rest(stats):
            break
    else:
        raise AssertionError(f"the scheduler did not come to rest: {stats}")
    attempts = stats["scheduler"]["attempts"]
    for _ in range(200):  # a quiet period: unrelated requests only
        c.get("Node", "n0")
        stats = c.stats()
    assert stats["scheduler"]["attempts"] == attempts
    assert at_rest(stats) and stats["queue"]["unschedulable"] == 5
    assert [n for n in pod_names(c) if n.startswith("big")] == [f"big-{i}" for i in range(5)]
    assert all(not c.get("Pod", f"big-{i}", "default")["spec"].get("nodeName") for i in range(5))
