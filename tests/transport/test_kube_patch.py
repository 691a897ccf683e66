"""Patches as kube-apiserver applies them (transport.kube.patch) and kubectl's protobuf bodies."""
from __future__ import annotations

import pytest

from transport.kube import protobuf
from transport.kube.patch import PatchError, json_patch, merge_patch, strategic_merge, strategic_merge_for

POD = {"metadata": {"name": "p", "labels": {"a": "1"}, "finalizers": ["x"]},
       "spec": {"containers": [{"name": "c", "image": "i1", "ports": [{"containerPort": 80, "name": "http"}],
                                "args": ["a", "b"]},
                               {"name": "d", "image": "i2"}],
                "tolerations": [{"key": "k", "operator": "Exists"}]},
       "status": {"conditions": [{"type": "PodScheduled", "status": "False"}, {"type": "Ready", "status": "False"}]}}


def test_merge_patch_replaces_lists_and_deletes_with_null():
    out = merge_patch(POD, {"metadata": {"labels": {"a": None, "b": "2"}}, "spec": {"containers": [{"name": "z"}]}})
    assert out["metadata"]["labels"] == {"b": "2"} and out["spec"]["containers"] == [{"name": "z"}]
    assert POD["metadata"]["labels"] == {"a": "1"}  # the input is not changed


def test_strategic_merge_merges_keyed_lists_and_replaces_atomic_ones():
    out = strategic_merge(POD, {
        "spec": {"containers": [{"name": "c", "image": "i3", "ports": [{"containerPort": 81}]},
                                {"name": "e", "image": "i4"}],
                 "tolerations": [{"key": "t", "operator": "Exists"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        "metadata": {"finalizers": ["y", "x"]}})
    c = {x["name"]: x for x in out["spec"]["containers"]}
    assert list(c) == ["c", "d", "e"] and c["c"]["image"] == "i3" and c["d"]["image"] == "i2"
    assert [p["containerPort"] for p in c["c"]["ports"]] == [80, 81] and c["c"]["args"] == ["a", "b"]
    assert out["spec"]["tolerations"] == [{"key": "t", "operator": "Exists"}]
    assert out["status"]["conditions"] == [{"type": "PodScheduled", "status": "False"}, {"type": "Ready", "status": "True"}]
    assert out["metadata"]["finalizers"] == ["x", "y"]


def test_strategic_merge_directives():
    out = strategic_merge(POD, {
        "$setElementOrder/containers": [{"name": "d"}, {"name": "c"}],  # order only: ignored
        "spec": {"containers": [{"name": "d", "$patch": "delete"}]},
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["x"], "labels": {"$patch": "replace", "z": "9"}}})
    assert [x["name"] for x in out["spec"]["containers"]] == ["c"]
    assert out["metadata"]["finalizers"] == [] and out["metadata"]["labels"] == {"z": "9"}
    out = strategic_merge(POD, {"spec": {"containers": [{"$patch": "replace"}, {"name": "only"}]}})
    assert out["spec"]["containers"] == [{"name": "only"}]
    out = strategic_merge({"spec": {"a": 1, "b": 2, "c": 3}}, {"spec": {"$retainKeys": ["a", "c"], "c": 4}})
    assert out == {"spec": {"a": 1, "c": 4}}
    with pytest.raises(PatchError):
        strategic_merge(POD, {"spec": {"containers": [{"image": "no-name"}]}})


def test_cordon_uncordon_and_taint_patches_as_kubectl_sends_them():
    node = {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}
    cordoned = strategic_merge(node, {"spec": {"unschedulable": True}})
    assert cordoned["spec"] == {"taints": [{"key": "a", "effect": "NoSchedule"}], "unschedulable": True}
    assert "unschedulable" not in strategic_merge(cordoned, {"spec": {"unschedulable": None}})["spec"]
    tainted = strategic_merge(node, {"spec": {"taints": [{"key": "b", "value": "v", "effect": "NoExecute"}]}})
    assert tainted["spec"]["taints"] == [{"key": "b", "value": "v", "effect": "NoExecute"}]  # the whole list
    assert "taints" not in strategic_merge(node, {"spec": {"taints": None}})["spec"]


def test_service_ports_merge_by_port_not_container_port():
    svc = {"spec": {"ports": [{"port": 80, "name": "a"}, {"port": 443, "name": "b"}]}}
    out = strategic_merge(svc, {"spec": {"ports": [{"port": 443, "name": "tls"}]}})
    assert out["spec"]["ports"] == [{"port": 80, "name": "a"}, {"port": 443, "name": "tls"}]


def test_json_patch_operations_and_failures():
    doc = {"a": {"b": [1, 2]}, "c": 1}
    out = json_patch(doc, [{"op": "add", "path": "/a/b/-", "value": 3}, {"op": "replace", "path": "/c", "value": 2},
                           {"op": "test", "path": "/c", "value": 2}, {"op": "copy", "from": "/c", "path": "/d"},
                           {"op": "move", "from": "/d", "path": "/e"}, {"op": "remove", "path": "/a/b/0"},
                           {"op": "add", "path": "/f~1g", "value": True}])
    assert out == {"a": {"b": [2, 3]}, "c": 2, "e": 2, "f/g": True} and doc == {"a": {"b": [1, 2]}, "c": 1}
    for bad in ([{"op": "remove", "path": "/nope"}], [{"op": "test", "path": "/c", "value": 5}],
                [{"op": "frobnicate", "path": "/c"}], {"op": "add"}):
        with pytest.raises(PatchError):
            json_patch(doc, bad)


def _field(number: int, value: bytes) -> bytes:
    return bytes([number << 3 | 2, len(value)]) + value


def test_protobuf_namespace_as_kubectl_create_namespace_sends_it():
    meta = _field(1, b"demo") + _field(11, _field(1, b"team") + _field(2, b"a"))
    raw = _field(1, meta) + _field(2, b"") + _field(3, b"")
    body = protobuf.MAGIC + _field(1, _field(1, b"v1") + _field(2, b"Namespace")) + _field(2, raw) + _field(3, b"") \
        + _field(4, b"")
    assert protobuf.decode(body) == {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": "demo", "labels": {"team": "a"}}, "spec": {}}
    pod = protobuf.MAGIC + _field(1, _field(1, b"v1") + _field(2, b"Pod")) + _field(2, raw)
    with pytest.raises(protobuf.ProtobufError, match="not Pod"):
        protobuf.decode(pod)
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(b"k8s\x00\x0a\x05ab")  # truncated


def test_a_pdb_selector_is_replaced_whole_as_its_patch_strategy_says():
    pdb = {"spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web", "tier": "fe"}}}}
    patch = {"spec": {"selector": {"matchLabels": {"app": "api"}}}}
    assert strategic_merge_for("PodDisruptionBudget", pdb, patch)["spec"] == {
        "minAvailable": 1, "selector": {"matchLabels": {"app": "api"}}}
    assert patch == {"spec": {"selector": {"matchLabels": {"app": "api"}}}}  # the patch is not changed
    svc = {"spec": {"selector": {"app": "web", "tier": "fe"}}}
    assert strategic_merge_for("Service", svc, {"spec": {"selector": {"app": "api"}}})["spec"]["selector"] == {
        "app": "api", "tier": "fe"}  # a Service's selector merges
