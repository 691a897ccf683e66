"""End to end against the real daemon with its default profile (GangScheduling is in
it while GenericWorkload is on): scheduling.k8s.io PodGroups are placed all or
nothing. A plain pod applied after a gang is the barrier: once it is bound, the
scheduler has been through the gang's pods."""
from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import daemon_factory, poll  # noqa: F401 - the fixture is used by name


def nodes(count: int, cpu: int) -> str:
    return "\n---\n".join(f"""apiVersion: v1
kind: Node
metadata: {{name: node-{i}}}
status:
  capacity: {{cpu: "{cpu}", memory: 16Gi, pods: "110"}}
  allocatable: {{cpu: "{cpu}", memory: 16Gi, pods: "110"}}""" for i in range(count))


def pod_group(name: str, min_count: int, disruption: str = "") -> str:
    mode = f"\n  disruptionMode: {disruption}" if disruption else ""
    return f"""apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {{name: {name}, namespace: default}}
spec:
  podGroupTemplateRef: {{workload: {{workloadName: job, podGroupTemplateName: {name}}}}}
  schedulingPolicy: {{gang: {{minCount: {min_count}}}}}{mode}"""


def pod(name: str, cpu: int, group: str = "") -> str:
    member = f"\n  schedulingGroup: {{podGroupName: {group}}}" if group else ""
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:{member}
  containers:
  - name: c
    image: pause
    resources: {{requests: {{cpu: "{cpu}"}}}}"""


def apply(d, tmp_path: Path, name: str, *docs: str) -> None:  # noqa: ANN001
    path = tmp_path / f"{name}.yaml"
    path.write_text("\n---\n".join(docs))
    d.cli("apply", "-f", str(path))


def node_of(d, name: str) -> str | None:  # noqa: ANN001
    out = json.loads(d.cli("get", "pod", name, "-o", "json").stdout)
    return (out.get("spec") or {}).get("nodeName")


def test_a_gang_waits_for_its_last_member_then_binds_whole(daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    d = daemon_factory()
    apply(d, tmp_path, "nodes", nodes(2, 4))
    apply(d, tmp_path, "gang", pod_group("train", 3), pod("train-0", 1, "train"), pod("train-1", 1, "train"))
    apply(d, tmp_path, "plain", pod("plain", 1))
    poll(lambda: node_of(d, "plain"), "the plain pod to bind")
    assert node_of(d, "train-0") is None and node_of(d, "train-1") is None

    apply(d, tmp_path, "last", pod("train-2", 1, "train"))
    placed = [poll(lambda n=n: node_of(d, n), f"{n} to bind") for n in ("train-0", "train-1", "train-2")]
    assert all(placed)


def test_a_gang_that_cannot_fit_whole_binds_no_member(daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    d = daemon_factory()
    apply(d, tmp_path, "nodes", nodes(2, 3))
    apply(d, tmp_path, "gang", pod_group("big", 4), *(pod(f"big-{i}", 2, "big") for i in range(4)))
    apply(d, tmp_path, "plain", pod("plain", 1))
    poll(lambda: node_of(d, "plain"), "the plain pod to bind")
    assert [node_of(d, f"big-{i}") for i in range(4)] == [None] * 4
