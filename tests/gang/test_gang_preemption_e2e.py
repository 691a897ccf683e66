"""End to end against the real daemon: a high-priority scheduling.k8s.io gang preempts
a low-priority gang whole (KEP-5710's workload-aware preemption) and lands whole."""
from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import daemon_factory, poll  # noqa: F401 - the fixture is used by name
from tests.gang.test_gang_scheduling_e2e import apply, node_of, nodes, pod, pod_group


def gang_pod(name: str, cpu: int, group: str, priority: int) -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  priority: {priority}
  schedulingGroup: {{podGroupName: {group}}}
  containers:
  - name: c
    image: pause
    resources: {{requests: {{cpu: "{cpu}"}}}}"""


def gone(d, name: str) -> bool:  # noqa: ANN001
    got = d.cli("get", "pod", name, "-o", "json", check=False)
    return got.returncode != 0 or bool((json.loads(got.stdout).get("metadata") or {}).get("deletionTimestamp"))


def events_of(d, name: str) -> str:  # noqa: ANN001
    return d.cli("get", "events", "--field-selector", f"involvedObject.name={name}").stdout


def test_a_high_priority_gang_of_four_evicts_a_low_priority_gang_of_four_whole_and_lands(
        daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    # Two nodes of 8 cpu, the low gang two members of 3 on each: the high gang (4 x 2 cpu)
    # needs only two low members' room, but a gang goes whole or not at all, so all four go
    # (pod by pod, upstream's DefaultPreemption would leave two of them running).
    d = daemon_factory()
    apply(d, tmp_path, "nodes", nodes(2, 8))
    apply(d, tmp_path, "low", pod_group("low", 4, "PodGroup"), *(gang_pod(f"low-{i}", 3, "low", 1) for i in range(4)))
    low_nodes = [poll(lambda i=i: node_of(d, f"low-{i}"), f"low-{i} to bind") for i in range(4)]
    assert sorted(low_nodes) == ["node-0", "node-0", "node-1", "node-1"]

    apply(d, tmp_path, "high", pod_group("high", 4), *(gang_pod(f"high-{i}", 2, "high", 100) for i in range(4)))
    high_nodes = [poll(lambda i=i: node_of(d, f"high-{i}"), f"high-{i} to bind") for i in range(4)]
    assert all(high_nodes)
    for i in range(4):
        poll(lambda i=i: gone(d, f"low-{i}") or None, f"low-{i} to be evicted")
        poll(lambda i=i: "Preempted" in events_of(d, f"low-{i}") or None, f"low-{i}'s Preempted event")


def test_a_high_priority_gang_that_cannot_fit_even_with_preemption_evicts_nothing(
        daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    d = daemon_factory()
    apply(d, tmp_path, "nodes", nodes(2, 4))
    apply(d, tmp_path, "low", pod_group("low", 2, "PodGroup"), *(gang_pod(f"low-{i}", 3, "low", 1) for i in range(2)))
    [poll(lambda i=i: node_of(d, f"low-{i}"), f"low-{i} to bind") for i in range(2)]
    # three members of 3 cpu each cannot share two nodes of 4, whatever is evicted
    apply(d, tmp_path, "high", pod_group("high", 3), *(gang_pod(f"high-{i}", 3, "high", 100) for i in range(3)))
    apply(d, tmp_path, "plain", pod("plain", 1))  # the barrier: bound once the scheduler went past the gang
    poll(lambda: node_of(d, "plain"), "the plain pod to bind")
    assert [node_of(d, f"high-{i}") for i in range(3)] == [None] * 3
    assert all(node_of(d, f"low-{i}") for i in range(2))
    assert not any(gone(d, f"low-{i}") for i in range(2))
