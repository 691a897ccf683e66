"""The real kubectl against a real `ksched serve` with Kubernetes' own gang API
(scheduling.k8s.io/v1alpha2): apply, get, describe and delete a Workload and a
PodGroup from manifests written as upstream's docs write them, and a Kueue Workload
and a Coscheduling PodGroup of the same names beside them, each listed apart."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_kubectl import KUBECTL, Kubectl, _rows

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (install kubectl 1.32)")

# kubernetes.io/docs/concepts/workloads/workload-api and podgroup-api, in namespace demo
WORKLOAD = """apiVersion: scheduling.k8s.io/v1alpha2
kind: Workload
metadata:
  name: training
  namespace: demo
spec:
  podGroupTemplates:
  - name: workers
    schedulingPolicy:
      gang:
        minCount: 4
    schedulingConstraints:
      topology:
      - key: topology.kubernetes.io/rack
"""
POD_GROUP = """apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata:
  name: training-workers
  namespace: demo
spec:
  podGroupTemplateRef:
    workload:
      workloadName: training
      podGroupTemplateName: workers
  schedulingPolicy:
    gang:
      minCount: 4
"""
MEMBER = """apiVersion: v1
kind: Pod
metadata:
  name: worker-0
  namespace: demo
spec:
  schedulingGroup:
    podGroupName: training-workers
  containers:
  - name: ml-worker
    image: training:v1
    resources: {requests: {cpu: 100m}}
"""
KUEUE_WORKLOAD = """apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: training, namespace: demo}
spec:
  queueName: a
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""
COSCHEDULING_GROUP = """apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: training-workers, namespace: demo}
spec: {minMember: 2}
"""


def test_kubectl_applies_gets_describes_and_deletes_workloads_and_podgroups_beside_kueue_and_coscheduling(
        daemon_factory, tmp_path: Path) -> None:
    d = daemon_factory()
    k = Kubectl(d.data_dir / "kubeconfig", tmp_path)
    k("create", "namespace", "demo")
    assert "workload.scheduling.k8s.io/training created" in k("apply", "-f", k.file("w.yaml", WORKLOAD))
    assert "podgroup.scheduling.k8s.io/training-workers created" in k("apply", "-f", k.file("pg.yaml", POD_GROUP))
    assert "pod/worker-0 created" in k("apply", "-f", k.file("pod.yaml", MEMBER))
    assert "workload.kueue.x-k8s.io/training created" in k("apply", "-f", k.file("kw.yaml", KUEUE_WORKLOAD))
    assert "podgroup.scheduling.x-k8s.io/training-workers created" in k("apply", "-f",
                                                                       k.file("cg.yaml", COSCHEDULING_GROUP))

    assert [r[0] for r in _rows(k("get", "workloads.scheduling.k8s.io", "-n", "demo"))] == ["NAME", "training"]
    assert [r[0] for r in _rows(k("get", "podgroups.scheduling.k8s.io", "-n", "demo"))] == ["NAME", "training-workers"]
    assert k.jsonpath("get podgroups.scheduling.k8s.io training-workers -n demo",
                      "{.spec.schedulingPolicy.gang.minCount}") == "4"
    assert k.jsonpath("get workloads.scheduling.k8s.io training -n demo",
                      "{.spec.podGroupTemplates[0].schedulingConstraints.topology[0].key}") == \
        "topology.kubernetes.io/rack"
    assert k.jsonpath("get pod worker-0 -n demo", "{.spec.schedulingGroup.podGroupName}") == "training-workers"
    # the bare names keep naming Kueue's Workload and Coscheduling's PodGroup
    assert k.jsonpath("get workloads training -n demo", "{.apiVersion}") == "kueue.x-k8s.io/v1beta2"
    assert k.jsonpath("get podgroups training-workers -n demo", "{.apiVersion}") == "scheduling.x-k8s.io/v1alpha1"
    assert k.jsonpath("get podgroups.scheduling.x-k8s.io training-workers -n demo", "{.spec.minMember}") == "2"

    described = k("describe", "podgroups.scheduling.k8s.io", "training-workers", "-n", "demo")
    assert "API Version:  scheduling.k8s.io/v1alpha2" in described and "Min Count:  4" in described
    assert "Kind:         PodGroup" in described
    assert any(line.split() == ["Workload", "Name:", "training"] for line in described.splitlines())
    described = k("describe", "workloads.scheduling.k8s.io", "training", "-n", "demo")
    assert "Kind:         Workload" in described and "Key:  topology.kubernetes.io/rack" in described

    labelled = POD_GROUP.replace("  namespace: demo\n", "  namespace: demo\n  labels: {team: ml}\n")
    assert "podgroup.scheduling.k8s.io/training-workers configured" in k("apply", "-f", k.file("pg.yaml", labelled))
    assert k.jsonpath("get podgroups.scheduling.k8s.io training-workers -n demo", "{.metadata.labels.team}") == "ml"
    refused = k("apply", "-f", k.file("bad.yaml", POD_GROUP.replace("minCount: 4", "minCount: 0")), check=False)
    assert "spec.schedulingPolicy.gang.minCount" in refused and "must be greater than or equal to 1" in refused

    assert 'workload.scheduling.k8s.io "training" deleted' in k("delete", "-f", k.file("w.yaml", WORKLOAD))
    assert 'podgroup.scheduling.k8s.io "training-workers" deleted' in k(
        "delete", "podgroups.scheduling.k8s.io", "training-workers", "-n", "demo")
    assert "No resources found" in k("get", "workloads.scheduling.k8s.io", "-n", "demo", check=False)
    assert k.jsonpath("get workloads.kueue.x-k8s.io training -n demo", "{.metadata.name}") == "training"
    assert k.jsonpath("get podgroups.scheduling.x-k8s.io training-workers -n demo", "{.metadata.name}") == "training-workers"
