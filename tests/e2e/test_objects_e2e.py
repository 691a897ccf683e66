"""Objects as kube-apiserver keeps them, through a real daemon: the CLI's --validate
and create -f, the msgpack wire's fieldValidation and warnings, namespaces, a Node
given only its capacity scheduling pods, workloads and gated pods."""
from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import poll
from transport.protocol.wire import ApiError, Reason

NODE = """apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
"""

MISSPELLED = """apiVersion: v1
kind: Pod
metadata: {name: web, labesl: {app: web}}
spec:
  nodeSelecter: {disk: ssd}
  containers:
  - name: c
    image: nginx
    resources: {requets: {cpu: 100m}}
"""

GENERATED = """apiVersion: v1
kind: Pod
metadata: {generateName: batch-}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
"""


def test_cli_validate_modes_create_generate_name_and_a_capacity_only_node(daemon_factory, tmp_path):
    d = daemon_factory()
    files = {name: tmp_path / f"{name}.yaml" for name in ("node", "misspelled", "generated")}
    for (name, path), text in zip(files.items(), (NODE, MISSPELLED, GENERATED)):
        path.write_text(text)

    assert d.cli("apply", "-f", str(files["node"])).stdout.strip() == "node/n1 created"

    strict = d.cli("apply", "-f", str(files["misspelled"]), check=False)
    assert strict.returncode == 1
    assert strict.stderr.strip() == (
        'Error from server (BadRequest): objects[0] (Pod web): Pod in version "v1" cannot be handled as a Pod: '
        'strict decoding error: unknown field "metadata.labesl", '
        'unknown field "spec.containers[0].resources.requets", unknown field "spec.nodeSelecter"')
    assert "web" not in d.cli("get", "pods").stdout

    warned = d.cli("apply", "-f", str(files["misspelled"]), "--validate=warn")
    assert warned.stdout.strip() == "pod/web created"
    assert warned.stderr.splitlines() == ['Warning: unknown field "metadata.labesl"',
                                          'Warning: unknown field "spec.containers[0].resources.requets"',
                                          'Warning: unknown field "spec.nodeSelecter"']
    stored = json.loads(d.cli("get", "pod", "web", "-o", "json").stdout)
    assert "nodeSelecter" not in stored["spec"]

    # Allocatable defaulted from capacity: the pod is bound, not "Insufficient cpu, Too many pods".
    poll(lambda: json.loads(d.cli("get", "pod", "web", "-o", "json").stdout)["spec"].get("nodeName"),
         "pod web bound to n1")
    node = json.loads(d.cli("get", "node", "n1", "-o", "json").stdout)
    assert node["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi", "pods": "110"}

    refused = d.cli("apply", "-f", str(files["generated"]), check=False)
    assert (refused.returncode, refused.stderr.strip()) == (2, "error: from batch-: cannot use generate name with apply")
    names = [d.cli("create", "-f", str(files["generated"])).stdout.strip() for _ in range(2)]
    assert all(n.startswith("pod/batch-") and n.endswith(" created") for n in names) and names[0] != names[1]
    again = d.cli("create", "-f", str(files["node"]), check=False)
    assert again.returncode == 1 and 'already exists' in again.stderr


def test_wire_field_validation_namespaces_workloads_and_gated_pods(daemon_factory):
    d = daemon_factory("--event-ttl", "30m")
    with d.client() as c:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team-a"},
               "spec": {"schedulingGates": [{"name": "example.com/wait"}],
                        "containers": [{"name": "c", "image": "busybox"}]}}
        with pytest.raises(ApiError) as e:
            c.create(pod, field_validation="Strict")
        assert (e.value.reason, e.value.message) == (Reason.NOT_FOUND, 'namespaces "team-a" not found')
        with pytest.raises(ApiError) as e:
            c.create(pod, field_validation="Sloppy")
        assert e.value.reason == Reason.INVALID and e.value.message.startswith("fieldValidation: Unsupported value")
        with pytest.raises(ApiError) as e:
            c.create({**pod, "apiVersion": "apps/v1"}, field_validation="Strict")
        assert e.value.reason == Reason.BAD_REQUEST

        c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}, field_validation="Strict")
        created = c.create(pod, field_validation="Strict")
        assert created["status"]["conditions"] == [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
             "message": "Scheduling is blocked due to non-empty scheduling gates"}]

        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "frontend", "namespace": "team-a"},
              "spec": {"replicas": 3, "selector": {"matchLabels": {"tier": "frontend"}},
                       "template": {"metadata": {"labels": {"tier": "frontend"}},
                                    "spec": {"containers": [{"name": "php-redis", "image": "gb-frontend:v5"}]}}}}
        reply = c.request("apply", objects=[rs], fieldValidation="Strict")
        assert reply["actions"] == ["created"]
        assert reply["warnings"] == ["ksched runs no controllers: no pods will be created from this ReplicaSet"]

        c.delete("Namespace", "team-a")
        assert c.list("Pod", "team-a")[0] == [] and c.list("ReplicaSet", "team-a")[0] == []
