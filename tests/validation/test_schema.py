"""The per-kind schemas refuse what kube-apiserver refuses, with its field paths and
wording, and accept ordinary objects of every kind."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from framework.api.schema import SCHEMAS, validate_object, without_nulls

from tests import dra_manifests as dra


def pod(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "pause",
                                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": body}


def node(**status: Any) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": "n1", "labels": {"zone": "a"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}, **status}}


VALID: dict[str, dict[str, Any]] = {
    "Pod": pod(affinity={"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "a"}}}}]}},
        tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}],
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "c"}}]),
    "Node": node(),
    "PodGroup": {"kind": "PodGroup", "metadata": {"name": "g"}, "spec": {"minMember": 3}},
    "PriorityClass": {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
    "Namespace": {"kind": "Namespace", "metadata": {"name": "team-a"}},
    "Service": {"kind": "Service", "metadata": {"name": "web"}, "spec": {"selector": {"app": "web"},
                                                                        "ports": [{"port": 80}]}},
    "ReplicationController": {"kind": "ReplicationController", "metadata": {"name": "rc"},
                              "spec": {"replicas": 2, "selector": {"app": "a"}}},
    "ReplicaSet": {"kind": "ReplicaSet", "metadata": {"name": "rs"},
                   "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "a"}}}},
    "StatefulSet": {"kind": "StatefulSet", "metadata": {"name": "ss"},
                    "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}},
    "PodDisruptionBudget": {"kind": "PodDisruptionBudget", "metadata": {"name": "pdb"},
                            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "a"}}}},
    "PersistentVolume": {"kind": "PersistentVolume", "metadata": {"name": "pv"},
                         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                  "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"}}},
    "PersistentVolumeClaim": {"kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
                              "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
    "StorageClass": {"kind": "StorageClass", "metadata": {"name": "fast"}, "provisioner": "ebs.csi.aws.com",
                     "volumeBindingMode": "WaitForFirstConsumer"},
    "CSINode": {"kind": "CSINode", "metadata": {"name": "n1"},
                "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 25}}]}},
    "CSIDriver": {"kind": "CSIDriver", "metadata": {"name": "ebs.csi.aws.com"}, "spec": {"attachRequired": True}},
    "VolumeAttachment": {"kind": "VolumeAttachment", "metadata": {"name": "va"},
                         "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "n1",
                                  "source": {"persistentVolumeName": "pv"}}},
    "Event": {"kind": "Event", "metadata": {"name": "p.17d2", "namespace": "default"},
              "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p", "uid": "u1", "apiVersion": "v1"},
              "reason": "Scheduled", "message": "Successfully assigned default/p to n1", "type": "Normal",
              "source": {"component": "default-scheduler"}, "count": 1, "firstTimestamp": "2024-01-01T00:00:00Z",
              "lastTimestamp": "2024-01-01T00:00:00Z"},
    "Workload.scheduling.k8s.io": {
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "Workload", "metadata": {"name": "w"},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}},
                                        "schedulingConstraints": {"topology": [{"key": "example.com/rack"}]}}]}},
    "PodGroup.scheduling.k8s.io": {
        "apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "g"},
        "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": "workers"}},
                 "schedulingPolicy": {"gang": {"minCount": 4}}}},
    # DRA (resource.k8s.io/v1)
    "DeviceClass": dra.device_class(),
    "ResourceSlice": dra.resource_slice(),
    "ResourceClaim": dra.resource_claim(),
    "ResourceClaimTemplate": dra.claim_template(),
}


def test_every_stored_kind_has_a_schema_and_an_ordinary_object_of_each_passes():
    assert set(VALID) == set(SCHEMAS)
    for kind, obj in VALID.items():
        assert validate_object(obj) == [], kind


def with_path(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`obj` with the dotted `path` set to `value` (list indexes as numbers)."""
    out = copy.deepcopy(obj)
    *parents, last = path.split(".")
    at: Any = out
    for p in parents:
        at = at[int(p)] if isinstance(at, list) else at.setdefault(p, {})
    if isinstance(at, list):
        at[int(last)] = value
    else:
        at[last] = value
    return out


AFF = "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution"

REFUSED = [
    (with_path(VALID["Pod"], f"{AFF}.0.weight", "x"),
     f'{AFF}[0].weight: Invalid value: "x": must be in the range 1-100'),
    (with_path(VALID["Pod"], f"{AFF}.0.weight", 101), f"{AFF}[0].weight: Invalid value: 101: must be in the range 1-100"),
    (pod(priority=2**64 - 1), "spec.priority: Invalid value: 18446744073709551615: must be of type int32"),
    (pod(priority="high"), 'spec.priority: Invalid value: "high": must be of type int32'),
    (pod(nodeSelector={"zone": 1}), "spec.nodeSelector: Invalid value: 1: must be of type string"),
    (pod(preemptionPolicy="Sometimes"),
     'spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"'),
    (pod(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
     "spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'"),
    (pod(tolerations=[{"operator": "Equal", "value": "v"}]),
     'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which means '
     '"match all values and all keys"'),
    (pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": ["In"], "values": ["a"]}]}]}}}),
     'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]'
     '.operator: Invalid value: ["In"]: must be of type string'),
    (pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In"}]}]}}}),
     'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]'
     ".values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    (pod(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}]}}}),
     'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]'
     '.operator: Invalid value: "Near": not a valid selector operator'),
    (with_path(VALID["Pod"], f"{AFF}.0.podAffinityTerm.topologyKey", ""),
     f"{AFF}[0].podAffinityTerm.topologyKey: Required value: can not be empty"),
    (pod(topologySpreadConstraints=[{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]),
     "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"),
    (pod(topologySpreadConstraints=[{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]),
     "spec.topologySpreadConstraints[0].topologyKey: Required value: can not be empty"),
    (pod(topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                     "minDomains": 0}]),
     "spec.topologySpreadConstraints[0].minDomains: Invalid value: 0: must be greater than zero"),
    (pod(topologySpreadConstraints=2 * [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]),
     'spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, DoNotSchedule}"'),
    (pod(tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": 5}]),
     "spec.tolerations[0].effect: Invalid value: \"\": effect must be 'NoExecute' when `tolerationSeconds` is set"),
    (pod(topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}]),
     'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe": supported values: '
     '"DoNotSchedule", "ScheduleAnyway"'),
    (pod(volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": 7}}]),
     "spec.volumes[0].persistentVolumeClaim.claimName: Invalid value: 7: must be of type string"),
    (pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "999999999999999Ei"}}}]),
     'spec.containers[0].resources.requests[cpu]: Invalid value: "999999999999999Ei": must be less than or equal to '
     '9223372036854775807m'),
    (pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "1.5.5"}}}]),
     "spec.containers[0].resources.requests[cpu]: Invalid value: \"1.5.5\": quantities must match the regular "
     "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    (pod(containers=[{"name": "c", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]),
     'spec.containers[0].resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 1'),
    (pod(containers=[{"name": "c", "resources": {"requests": {"memory": "-1"}}}]),
     'spec.containers[0].resources.requests[memory]: Invalid value: "-1": must be greater than or equal to 0'),
    (pod(containers=[{"name": "c"}, {"name": "c"}]), 'spec.containers[1].name: Duplicate value: "c"'),
    (pod(containers=[]), "spec.containers: Required value"),
    ({"kind": "Pod", "metadata": {"name": "p"}, "spec": None}, "spec.containers: Required value"),
    ({**pod(), "status": {"conditions": [None]}}, 'status.conditions[0]: Invalid value: "null": must be of type object'),
    ({**pod(), "status": {"conditions": ["x"]}}, 'status.conditions[0]: Invalid value: "x": must be of type object'),
    ({**pod(), "status": {"conditions": [{"type": "Ready", "status": "Maybe"}]}},
     'status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown"'),
    ({**pod(), "status": {"phase": "Sleeping"}},
     'status.phase: Unsupported value: "Sleeping": supported values: "Pending", "Running", "Succeeded", "Failed", '
     '"Unknown"'),
    (with_path(pod(), "metadata.ownerReferences", [{"kind": "ReplicaSet"}]),
     "metadata.ownerReferences[0].apiVersion: Required value"),
    (with_path(pod(), "metadata.labels", {"app": "a" * 64}),
     'metadata.labels: Invalid value: "' + "a" * 64 + '": must be no more than 63 characters'),
    (node(allocatable={"cpu": 1e308}), "status.allocatable[cpu]: Invalid value: 1e+308: must be less than or equal to "
                                       "9223372036854775807m"),
    (node(allocatable={"memory": float("inf")}), "status.allocatable[memory]: Invalid value: inf: quantities must match "
                                                 "the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    (node(allocatable={"memory": float("nan")}), "status.allocatable[memory]: Invalid value: nan: quantities must match "
                                                 "the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    (with_path(node(), "spec.taints", [{"key": "k", "effect": "Sometimes"}]),
     'spec.taints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", '
     '"NoExecute"'),
    (with_path(node(), "spec.taints", 2 * [{"key": "k", "effect": "NoSchedule"}]),
     'spec.taints[1]: Duplicate value: {"effect": "NoSchedule", "key": "k"}: taints must be unique by key and effect '
     'pair'),
    (with_path(VALID["PodGroup"], "spec.minMember", 2**64 - 1),
     "spec.minMember: Invalid value: 18446744073709551615: must be of type int32"),
    (with_path(VALID["Pod"], f"{AFF}.0.weight", 2**40), f"{AFF}[0].weight: Invalid value: 1099511627776: must be in the range 1-100"),
    (with_path(VALID["PodGroup"], "spec.minMember", -1), "spec.minMember: Invalid value: -1: must be greater than or equal to 0"),
    (with_path(VALID["PriorityClass"], "value", 1.5), "value: Invalid value: 1.5: must be of type int32"),
    ({"kind": "PriorityClass", "metadata": {"name": "x"}}, "value: Required value"),
    (with_path(VALID["Service"], "spec.ports.0.port", 70000),
     "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"),
    (with_path(VALID["ReplicaSet"], "spec.replicas", -1), "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
    (with_path(VALID["StatefulSet"], "spec.selector.matchExpressions.0.values", ["a"]),
     "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or "
     "'DoesNotExist'"),
    (with_path(VALID["PodDisruptionBudget"], "spec.minAvailable", [1]),
     "spec.minAvailable: Invalid value: [1]: must be of type int32"),
    (with_path(VALID["PersistentVolume"], "spec.accessModes", ["ReadSometimes"]),
     'spec.accessModes[0]: Unsupported value: "ReadSometimes": supported values: "ReadWriteOnce", "ReadOnlyMany", '
     '"ReadWriteMany", "ReadWriteOncePod"'),
    (with_path(VALID["PersistentVolumeClaim"], "spec.resources.requests", {"storage": "lots"}),
     "spec.resources.requests[storage]: Invalid value: \"lots\": quantities must match the regular expression "
     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    (with_path(VALID["StorageClass"], "volumeBindingMode", "Later"),
     'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"'),
    (with_path(VALID["CSINode"], "spec.drivers.0.allocatable.count", -3),
     "spec.drivers[0].allocatable.count: Invalid value: -3: must be greater than or equal to 0"),
    (with_path(VALID["CSIDriver"], "spec.attachRequired", "yes"),
     'spec.attachRequired: Invalid value: "yes": must be of type boolean'),
    (with_path(VALID["VolumeAttachment"], "spec.attacher", ""), "spec.attacher: Required value"),
]


@pytest.mark.parametrize(("obj", "first_error"), REFUSED, ids=lambda v: "" if isinstance(v, dict) else v[:60])
def test_a_malformed_object_is_refused_naming_the_field_in_upstreams_words(obj, first_error):
    errors = validate_object(obj)
    assert errors, "accepted"
    assert str(errors[0]) == first_error


def test_an_object_nested_deeper_than_the_limit_is_refused_without_recursing():
    deep: Any = "leaf"
    for _ in range(100_000):
        deep = {"x": deep}
    errors = validate_object({**pod(), "extra": deep})
    assert len(errors) == 1 and "must not nest more than 64 levels deep" in str(errors[0])


def test_the_conformance_mode_skips_name_formats_and_empty_containers_but_not_types():
    odd = {**pod(containers=[]), "metadata": {"name": "p_without_nominated_node"}}
    assert validate_object(odd, strict=False) == []
    assert [e.field for e in validate_object(odd)] == ["metadata.name", "spec.containers"]
    assert [e.field for e in validate_object({**odd, "spec": {"priority": "x"}}, strict=False)] == ["spec.priority"]


def test_null_fields_are_fields_left_out():
    obj = {**pod(), "status": None, "metadata": {"name": "p", "namespace": None}}
    assert validate_object(obj) == []
    assert without_nulls(obj) == {k: v for k, v in pod().items()} | {"metadata": {"name": "p"}}


async def test_every_kind_with_a_schema_is_stored_and_a_malformed_one_is_refused_naming_the_field():
    from actors.store import Invalid
    from tests.actors.store_helpers import running

    async with running() as (store, c):
        for kind, obj in VALID.items():
            await c.create(obj)
            assert store.peek(kind, "default", obj["metadata"]["name"]) is not None, kind
        for obj, first_error in REFUSED:
            bad = {**obj, "metadata": {**obj["metadata"], "name": "other"}}
            try:
                await c.create(bad)
            except Invalid as e:
                assert e.message == first_error
            else:
                raise AssertionError(f"stored: {first_error}")


def test_a_value_json_cannot_hold_is_refused_where_it_is_even_in_a_field_ksched_does_not_read():
    errors = validate_object({**pod(), "extra": {"blob": [1, b"\x00"]}})
    assert [(e.field, e.detail.endswith("must be a JSON value")) for e in errors] == [("extra.blob[1]", True)]
    errors = validate_object({**pod(), "extra": {1: "x"}})
    assert [str(e) for e in errors] == ["extra: Invalid value: 1: must be of type string"]


def test_annotation_keys_are_qualified_names_in_any_case_as_upstream_lowercases_them():
    ok = {**pod(), "metadata": {"name": "p", "annotations": {"Example.COM/Note": "x"}}}
    assert validate_object(ok) == []
    bad = {**pod(), "metadata": {"name": "p", "annotations": {"bad key": "x"}}}
    assert [e.field for e in validate_object(bad)] == ["metadata.annotations"]


def test_a_spread_constraint_whose_when_unsatisfiable_is_a_list_is_refused_naming_it_not_crashing():
    errors = validate_object(pod(topologySpreadConstraints=[
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": ["DoNotSchedule"]}]))
    assert [e.field for e in errors] == ["spec.topologySpreadConstraints[0].whenUnsatisfiable"]


def test_a_pod_groups_preferred_topology_annotation_must_name_a_label_key() -> None:
    note = "scheduling.ksched.io/preferred-topology-key"
    good = with_path(VALID["PodGroup.scheduling.k8s.io"], "metadata.annotations", {note: "example.com/rack"})
    assert validate_object(good) == []
    bad = with_path(good, "metadata.annotations", {note: "not a/valid/key"})
    errors = validate_object(bad)
    assert errors and all(e.field == f"metadata.annotations[{note}]" for e in errors), errors
    assert "Invalid value: \"not a/valid/key\"" in str(errors[0])
