"""End to end against the real daemon: two gang jobs (a PodGroup + 8 pods each,
configs/gang-job.yaml) on a cluster with room for one. The first binds
completely, the second stays pending with its reason visible in
`ksched get podgroups` / `describe podgroup`, and binds completely once the
first job's pods complete."""
from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import ROOT, daemon_factory, poll  # noqa: F401 - the fixture is used by name

JOB = (ROOT / "configs" / "gang-job.yaml").read_text()
NODES = "\n---\n".join(
    f"""apiVersion: v1
kind: Node
metadata: {{name: node-{i}}}
status:
  capacity: {{cpu: "4", memory: 16Gi, pods: "110"}}
  allocatable: {{cpu: "4", memory: 16Gi, pods: "110"}}"""
    for i in range(3))


def job_named(name: str) -> str:
    return JOB.replace("name: train\n", f"name: {name}\n").replace("pod-group: train\n", f"pod-group: {name}\n") \
              .replace("name: train-", f"name: {name}-")


def pods_of(d, group: str) -> dict[str, str | None]:  # noqa: ANN001
    out = json.loads(d.cli("get", "pods", "-l", f"scheduling.x-k8s.io/pod-group={group}", "-o", "json").stdout)
    items = out.get("items", out) if isinstance(out, dict) else out
    return {i["metadata"]["name"]: (i.get("spec") or {}).get("nodeName") for i in items}


def test_a_second_gang_job_waits_with_its_reason_and_binds_when_the_first_completes(daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    d = daemon_factory("--config", str(ROOT / "configs" / "coscheduling.yaml"))
    (tmp_path / "nodes.yaml").write_text(NODES)
    (tmp_path / "first.yaml").write_text(job_named("first"))
    (tmp_path / "second.yaml").write_text(job_named("second"))
    d.cli("apply", "-f", str(tmp_path / "nodes.yaml"))
    d.cli("apply", "-f", str(tmp_path / "first.yaml"))
    first = poll(lambda: (p if len(p) == 8 and all(p.values()) else None) if (p := pods_of(d, "first")) else None,
                 "the first job to bind completely")
    assert len(first) == 8

    d.cli("apply", "-f", str(tmp_path / "second.yaml"))
    reason = poll(lambda: (out if "second-" in out and "FailedScheduling" in out else None)
                  if (out := d.cli("describe", "podgroup", "second").stdout) else None,
                  "the second job's scheduling failure")
    assert "resource gap" in reason or "cannot be placed node by node" in reason
    assert not any(pods_of(d, "second").values())
    table = d.cli("get", "podgroups").stdout
    row = next(line for line in table.splitlines() if line.startswith("second"))
    assert "Running" not in row and "Scheduled" not in row

    for name in first:
        d.cli("complete", name)
    second = poll(lambda: (p if len(p) == 8 and all(p.values()) else None) if (p := pods_of(d, "second")) else None,
                  "the second job to bind completely")
    assert len(second) == 8
