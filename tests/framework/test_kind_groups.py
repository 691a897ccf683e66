"""Kinds named by group (framework.api.groups): a manifest's store key comes from its
apiVersion's group and its kind, so scheduling.k8s.io's Workload and PodGroup never
meet Kueue's Workload or Coscheduling's PodGroup, and their typed objects read the
fields the gang scheduler needs."""
from __future__ import annotations

import pytest

from framework.api.groups import POD_GROUP_KEY, WORKLOAD_KEY, api_kind, kind_key
from framework.api.objects import PodGroup, parse_object
from framework.api.workload_api import SchedulingPodGroup, SchedulingWorkload, update_errors


@pytest.mark.parametrize("api_version, kind, key", [
    ("scheduling.k8s.io/v1alpha2", "Workload", WORKLOAD_KEY),
    ("scheduling.k8s.io/v1alpha2", "PodGroup", POD_GROUP_KEY),
    ("scheduling.k8s.io/v1alpha1", "PodGroup", POD_GROUP_KEY),  # the decode stage refuses the version, by key
    ("kueue.x-k8s.io/v1beta2", "Workload", "Workload"),
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup", "PodGroup"),
    ("scheduling.k8s.io/v1", "PriorityClass", "PriorityClass"),
    ("v1", "Pod", "Pod"),
    (None, "PodGroup", "PodGroup"),
])
def test_a_manifests_key_is_its_kind_unless_its_group_shares_the_name(api_version, kind, key) -> None:
    assert kind_key({"apiVersion": api_version, "kind": kind}) == key
    assert api_kind(key) == kind


def test_parsing_builds_the_class_of_the_group_and_reads_policy_and_topology() -> None:
    group = parse_object({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "g"},
                          "spec": {"schedulingPolicy": {"gang": {"minCount": 8}},
                                   "schedulingConstraints": {"topology": [{"key": "rack"}]},
                                   "podGroupTemplateRef": {"workload": {"workloadName": "w",
                                                                        "podGroupTemplateName": "t"}}}})
    assert isinstance(group, SchedulingPodGroup) and group.kind == POD_GROUP_KEY
    assert (group.min_count, group.policy.gang, group.topology_keys, group.workload_name, group.template_name) == (
        8, True, ("rack",), "w", "t")
    basic = parse_object({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "b"},
                          "spec": {"schedulingPolicy": {"basic": {}}}})
    assert basic.min_count == 1 and not basic.policy.gang
    assert isinstance(parse_object({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                                    "metadata": {"name": "c"}, "spec": {"minMember": 2}}), PodGroup)
    workload = parse_object({"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload", "metadata": {"name": "w"},
                             "spec": {"podGroupTemplates": [{"name": "t", "schedulingPolicy": {"gang": {"minCount": 2}}}]}})
    assert isinstance(workload, SchedulingWorkload) and workload.template("t").policy.min_count == 2


def test_update_errors_name_each_immutable_field_changed_and_ignore_other_kinds() -> None:
    old = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
           "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    new = {**old, "spec": {"schedulingPolicy": {"gang": {"minCount": 3}},
                           "schedulingConstraints": {"topology": [{"key": "rack"}]}}}
    assert [e.field for e in update_errors(new, old)] == ["spec.schedulingPolicy", "spec.schedulingConstraints"]
    assert update_errors({**new, "apiVersion": "scheduling.x-k8s.io/v1alpha1"}, old) == []
