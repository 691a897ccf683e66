"""Kueue's v1beta1 <-> v1beta2 conversion (apis/kueue/v1beta1/*_conversion.go)."""
from __future__ import annotations

import copy

from framework.kueue.versions import V1BETA1, V1BETA2, to_storage, to_version


def test_a_v1beta1_localqueues_flavor_usage_is_v1beta2s_flavors_usage_and_back():
    usage = [{"name": "default-flavor", "resources": [{"name": "cpu", "total": "1"}]}]
    lq = {"apiVersion": V1BETA1, "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "default"},
          "spec": {"clusterQueue": "cq"}, "status": {"flavorUsage": usage, "flavors": [{"name": "x"}]}}
    before = copy.deepcopy(lq)
    up = to_storage(lq)
    assert lq == before  # the argument is left as it was
    assert up["apiVersion"] == V1BETA2 and up["status"] == {"flavorsUsage": usage}
    down = to_version(up, V1BETA1)
    assert down["status"] == {"flavorUsage": usage}


def test_v1beta1_admission_checks_become_an_admission_checks_strategy():
    cq = {"apiVersion": V1BETA1, "kind": "ClusterQueue", "metadata": {"name": "cq"},
          "spec": {"admissionChecks": ["prov"], "cohort": ""}}
    up = to_storage(cq)
    assert up["spec"] == {"admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}]}}


def test_a_pod_priority_class_ref_is_v1beta1s_pod_priority_class_source():
    wl = {"apiVersion": V1BETA2, "kind": "Workload", "metadata": {"name": "w"},
          "spec": {"priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "p"}},
          "status": {"accumulatedPastExecutionTimeSeconds": 5}}
    down = to_version(wl, V1BETA1)
    assert down["spec"] == {"priorityClassSource": "scheduling.k8s.io/priorityclass", "priorityClassName": "p"}
    assert down["status"] == {"accumulatedPastExexcutionTimeSeconds": 5}
    assert to_storage(down) == wl


def test_kinds_with_the_same_fields_change_only_their_api_version():
    rf = {"apiVersion": V1BETA1, "kind": "ResourceFlavor", "metadata": {"name": "f"}, "spec": {"nodeLabels": {"a": "b"}}}
    assert to_storage(rf) == {**rf, "apiVersion": V1BETA2}
    assert to_version(to_storage(rf), V1BETA1) == rf
