"""The real kubectl against a real `ksched serve`: a scheduling.k8s.io gang of 8 with
a rack constraint lands in one rack; with no rack able to hold it, it stays pending
with a message per rack on its PodGroup (and `ksched explain podgroup...` lists the
racks tried); with a preferred rack and a required block it lands in one block."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_kubectl import KUBECTL, Kubectl

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (install kubectl 1.32)")

RACK, BLOCK = "topology.example.com/rack", "topology.example.com/block"


def nodes(per_rack: int) -> str:
    """Four racks of `per_rack` 2-cpu nodes; racks 0-1 in block b0, 2-3 in b1."""
    docs = []
    for r in range(4):
        for i in range(per_rack):
            docs.append(f"""apiVersion: v1
kind: Node
metadata:
  name: r{r}-{i}
  labels: {{{RACK}: r{r}, {BLOCK}: b{r // 2}}}
status:
  capacity: {{cpu: "2", memory: 8Gi, pods: "110"}}
  allocatable: {{cpu: "2", memory: 8Gi, pods: "110"}}
""")
    return "---\n".join(docs)


def gang(name: str, required: str, preferred: str = "") -> str:
    note = f"\n  annotations: {{scheduling.ksched.io/preferred-topology-key: {preferred}}}" if preferred else ""
    members = "".join(f"""---
apiVersion: v1
kind: Pod
metadata: {{name: {name}-{i}, namespace: demo}}
spec:
  schedulingGroup: {{podGroupName: {name}}}
  containers: [{{name: c, image: pause, resources: {{requests: {{cpu: "1"}}}}}}]
""" for i in range(8))
    return f"""apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata:
  name: {name}
  namespace: demo{note}
spec:
  podGroupTemplateRef: {{workload: {{workloadName: w, podGroupTemplateName: {name}}}}}
  schedulingPolicy: {{gang: {{minCount: 8}}}}
  schedulingConstraints:
    topology: [{{key: {required}}}]
{members}"""


def bound_racks(k: Kubectl, name: str) -> set[str]:
    for i in range(8):
        k("wait", "--for=condition=PodScheduled", f"pod/{name}-{i}", "-n", "demo", "--timeout=60s")
    hosts = [k.jsonpath(f"get pod {name}-{i} -n demo", "{.spec.nodeName}") for i in range(8)]
    assert all(hosts), hosts
    return {h.split("-")[0] for h in hosts}


def test_a_rack_constrained_gang_lands_in_one_rack(daemon_factory, tmp_path: Path) -> None:
    d = daemon_factory()
    k = Kubectl(d.data_dir / "kubeconfig", tmp_path)
    k("create", "namespace", "demo")
    k("apply", "-f", k.file("nodes.yaml", nodes(4)))
    k("apply", "-f", k.file("gang.yaml", gang("train", RACK)))
    assert len(bound_racks(k, "train")) == 1


def test_with_no_rack_able_to_hold_it_the_gang_stays_pending_with_a_message_per_rack(daemon_factory,
                                                                                      tmp_path: Path) -> None:
    d = daemon_factory()
    k = Kubectl(d.data_dir / "kubeconfig", tmp_path)
    k("create", "namespace", "demo")
    k("apply", "-f", k.file("nodes.yaml", nodes(2)))  # 4 cpu per rack, the gang needs 8
    k("apply", "-f", k.file("gang.yaml", gang("big", RACK)))
    k("wait", "--for=condition=PodGroupScheduled=false", "podgroups.scheduling.k8s.io/big", "-n", "demo",
      "--timeout=60s")
    message = k.jsonpath("get podgroups.scheduling.k8s.io big -n demo",
                         "{.status.conditions[?(@.type=='PodGroupScheduled')].message}")
    assert message.startswith("no topology domain can hold the pod group")
    # each rack (2 nodes of 2 cpu) is named with why it failed: 4 cpu free, the gang needs 8
    too_small = "skipped: free capacity too small for the group: needs cpu 8000m, memory 0; has cpu 4000m"
    for r in range(4):
        assert f"{RACK}=r{r} (2 nodes): {too_small}" in message, message
    assert all(not k.jsonpath(f"get pod big-{i} -n demo", "{.spec.nodeName}") for i in range(8))
    report = d.cli("explain", "podgroups.scheduling.k8s.io/big", "-n", "demo").stdout
    assert "PodGroup big, last group cycle: no domain chosen" in report
    for r in range(4):  # explain's table: the domain, its nodes, the verdict and why
        row = next(line.split(None, 3) for line in report.splitlines() if line.strip().startswith(f"{RACK}=r{r}"))
        assert row[1:3] == ["2", "skipped"] and row[3].startswith("free capacity too small for the group"), row


def test_a_preferred_rack_and_a_required_block_land_in_one_block_when_no_rack_fits(daemon_factory,
                                                                                   tmp_path: Path) -> None:
    d = daemon_factory()
    k = Kubectl(d.data_dir / "kubeconfig", tmp_path)
    k("create", "namespace", "demo")
    k("apply", "-f", k.file("nodes.yaml", nodes(2)))
    k("apply", "-f", k.file("gang.yaml", gang("wide", BLOCK, preferred=RACK)))
    racks = bound_racks(k, "wide")
    assert racks in ({"r0", "r1"}, {"r2", "r3"})
