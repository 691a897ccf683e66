"""Kueue's documentation examples against a real `ksched serve`: the single ClusterQueue
setup (site/static/examples/admin/single-clusterqueue-setup.yaml) in its v1beta1 form
(before kueue commit ff23fd1237 moved the docs to v1beta2) applied with the real
kubectl, and in its v1beta2 form with `ksched apply`; then the sample Job
(site/static/examples/jobs/sample-job.yaml: parallelism 3, 1 cpu and 200Mi each) as
the three queue-labelled pods its Job would make (ksched runs no Job controller). As
in Kueue: the three workloads are admitted into cluster-queue and bound, and the
ClusterQueue's and LocalQueue's status say so."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import poll
from tests.e2e.test_kubectl import NODE, Kubectl

KUBECTL = shutil.which("kubectl")

SETUP = """apiVersion: kueue.x-k8s.io/{v}
kind: ResourceFlavor
metadata:
  name: "default-flavor"
---
apiVersion: kueue.x-k8s.io/{v}
kind: ClusterQueue
metadata:
  name: "cluster-queue"
spec:
  namespaceSelector: {{}} # match all.
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 9
      - name: "memory"
        nominalQuota: 36Gi
---
apiVersion: kueue.x-k8s.io/{v}
kind: LocalQueue
metadata:
  namespace: "default"
  name: "user-queue"
spec:
  clusterQueue: "cluster-queue"
"""
# The pods sample-job.yaml's Job makes: its template, with the Job's queue label.
JOB_POD = """apiVersion: v1
kind: Pod
metadata:
  name: sample-job-{i}
  namespace: default
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  containers:
  - name: dummy-job
    image: registry.k8s.io/e2e-test-images/agnhost:2.53
    command: [ "/bin/sh" ]
    args: [ "-c", "sleep 60" ]
    resources:
      requests:
        cpu: "1"
        memory: "200Mi"
  restartPolicy: Never
"""
JOB = "---\n".join(JOB_POD.format(i=i) for i in range(3))
USAGE = [{"name": "default-flavor", "resources": [{"name": "cpu", "total": "3", "borrowed": "0"},
                                                   {"name": "memory", "total": "600Mi", "borrowed": "0"}]}]


def _admitted(get_status) -> dict:
    return poll(lambda: (lambda s: s if s.get("admittedWorkloads") == 3 else None)(get_status() or {}),
                "three workloads admitted", attempts=600)


def _bound(pods: list[dict]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods if p["spec"].get("nodeName"))


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (install kubectl 1.32)")
def test_kueues_v1beta1_single_cluster_queue_example_applies_with_kubectl_and_admits_the_sample_job(
        daemon_factory, tmp_path: Path) -> None:
    d = daemon_factory()
    k = Kubectl(d.data_dir / "kubeconfig", tmp_path)
    out = k("apply", "-f", k.file("setup.yaml", SETUP.format(v="v1beta1")))
    assert out.splitlines() == ["resourceflavor.kueue.x-k8s.io/default-flavor created",
                                "clusterqueue.kueue.x-k8s.io/cluster-queue created",
                                "localqueue.kueue.x-k8s.io/user-queue created"]
    k("apply", "-f", k.file("node.yaml", NODE.format(name="n1", n=1)))
    k("apply", "-f", k.file("job.yaml", JOB))

    def cq_status(version: str = "v1beta2") -> dict:
        return json.loads(k("get", f"clusterqueues.{version}.kueue.x-k8s.io", "cluster-queue", "-o", "json")
                          ).get("status")

    status = _admitted(cq_status)
    assert (status["pendingWorkloads"], status["reservingWorkloads"]) == (0, 3)
    assert status["flavorsUsage"] == status["flavorsReservation"] == USAGE
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [("Active", "True", "Ready")]
    v1 = json.loads(k("get", "clusterqueues.v1beta1.kueue.x-k8s.io", "cluster-queue", "-o", "json"))
    assert v1["apiVersion"] == "kueue.x-k8s.io/v1beta1" and v1["status"]["admittedWorkloads"] == 3
    lq = json.loads(k("get", "localqueues.v1beta1.kueue.x-k8s.io", "user-queue", "-o", "json"))["status"]
    assert lq["admittedWorkloads"] == 3 and lq["flavorUsage"] == [  # v1beta1's name for flavorsUsage
        {"name": "default-flavor", "resources": [{"name": "cpu", "total": "3"}, {"name": "memory", "total": "600Mi"}]}]
    pods = poll(lambda: (lambda items: items if len(_bound(items)) == 3 else None)(
        json.loads(k("get", "pods", "-o", "json"))["items"]), "the sample job's pods bound")
    assert _bound(pods) == ["sample-job-0", "sample-job-1", "sample-job-2"]

    typo = (SETUP.format(v="v1beta2").split("---\n")[1].replace('"cluster-queue"', '"typo-queue"')
            .replace('nominalQuota: 9', 'nominalQuota: 9\n        borowingLimit: 1'))
    refused = k("apply", "-f", k.file("typo.yaml", typo), check=False)
    assert ('error when creating "' + str(tmp_path / "typo.yaml") + '": ClusterQueue in version "v1beta2" cannot be '
            'handled as a ClusterQueue: strict decoding error: unknown field '
            '"spec.resourceGroups[0].flavors[0].resources[0].borowingLimit"') in refused
    assert "typo-queue" not in k("get", "cq")


def test_kueues_v1beta2_single_cluster_queue_example_applies_with_the_cli_and_admits_the_sample_job(
        daemon_factory) -> None:
    d = daemon_factory()
    out = d.cli("apply", "-f", "-", input=SETUP.format(v="v1beta2")).stdout
    assert "clusterqueue/cluster-queue created" in out
    d.cli("apply", "-f", "-", input=NODE.format(name="n1", n=1))
    d.cli("apply", "-f", "-", input=JOB)

    def cq_status() -> dict:
        return (yaml.safe_load(d.cli("get", "clusterqueue", "cluster-queue", "-o", "yaml").stdout) or {}).get("status")

    status = _admitted(cq_status)
    assert status["flavorsUsage"] == USAGE and status["pendingWorkloads"] == 0
    with d.client() as c:
        pods = poll(lambda: (lambda items: items if len(_bound(items)) == 3 else None)(c.list("Pod")[0]),
                    "the sample job's pods bound")
    assert _bound(pods) == ["sample-job-0", "sample-job-1", "sample-job-2"]
