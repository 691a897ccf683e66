"""The real kubectl and the official Python client against a real `ksched serve`:
over plain http without a token, and over https with a token and the kubeconfig
the daemon writes. One daemon per mode, the same commands on each (issue 21's list;
`get events` with them); kubectl's --validate and Kueue's columns over http."""
from __future__ import annotations

import json
import shutil
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import poll

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (the Kubernetes API e2e test "
                                                        "drives the real kubectl binary; install kubectl 1.32)")

NODE = """apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{zone: z1}}}}
status:
  capacity: {{cpu: "4", memory: 8Gi, pods: "110"}}
  allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}
  conditions: [{{type: Ready, status: "True"}}]
  addresses: [{{type: InternalIP, address: 10.0.0.{n}}}]
"""
POD = """apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: demo, labels: {{app: web}}}}
spec:
  containers: [{{name: c, image: registry.k8s.io/pause:3.10, resources: {{requests: {{cpu: 100m}}}}}}]
"""
KUEUE = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: on-demand}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: shared
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: on-demand, resources: [{name: cpu, nominalQuota: "4"}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: a, namespace: demo}
spec: {clusterQueue: team-a}
"""
PODGROUP = """apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {{name: gang, namespace: demo}}
spec: {{minMember: {n}}}
"""


class Kubectl:
    def __init__(self, kubeconfig: Path, tmp: Path) -> None:
        self.base = [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp / "kube-cache")]
        self.tmp = tmp

    def __call__(self, *args: str, check: bool = True, stdin: str | None = None) -> str:
        proc = subprocess.run([*self.base, *args], input=stdin, capture_output=True, text=True, timeout=60)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
        return proc.stdout if check else proc.stdout + proc.stderr

    def file(self, name: str, text: str) -> str:
        path = self.tmp / name
        path.write_text(text)
        return str(path)

    def jsonpath(self, what: str, expr: str, *flags: str) -> str:
        return self(*what.split(), *flags, "-o", f"jsonpath={expr}")


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


def _watch_until(k: Kubectl, args: list[str], marker: str, action: Any) -> list[str]:
    """Run `kubectl get -w`, do `action` once it printed its first lines, and return the
    lines up to the first containing `marker` (the process is killed after 60 s at most)."""
    proc = subprocess.Popen([*k.base, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(60, proc.kill)
    watchdog.start()
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        lines.append(proc.stdout.readline())  # the list's rows are printed before the watch starts
        action()
        for line in proc.stdout:
            lines.append(line)
            if marker in line:
                break
    finally:
        watchdog.cancel()
        proc.kill()
        proc.communicate()
    return lines


def _kubectl_commands(k: Kubectl) -> None:
    """Every command of issue 21's list, the same over http and https: afterwards the
    namespace demo holds the pods p1 (on node-a) and p3."""
    assert k("create", "namespace", "demo").strip() == "namespace/demo created"  # a protobuf body
    assert k("create", "-f", k.file("a.yaml", NODE.format(name="node-a", n=1))).strip() == "node/node-a created"
    assert k("apply", "-f", k.file("b.yaml", NODE.format(name="node-b", n=2))).strip() == "node/node-b created"
    assert k("apply", "-f", k.file("b.yaml", NODE.format(name="node-b", n=2).replace("z1", "z2"))).strip() \
        == "node/node-b configured"
    k("cordon", "node-b")  # p1 goes to node-a
    assert "SchedulingDisabled" in k("get", "node", "node-b")

    assert k("create", "-f", k.file("p1.yaml", POD.format(name="p1"))).strip() == "pod/p1 created"
    assert "condition met" in k("wait", "--for=condition=PodScheduled", "pod/p1", "-n", "demo", "--timeout=30s")
    wide = _rows(k("get", "pods", "-n", "demo", "-o", "wide"))
    assert wide[0][:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] and "NODE" in wide[0]
    assert wide[1][0] == "p1" and "node-a" in wide[1]
    assert json.loads(k("get", "pods", "-n", "demo", "-o", "json"))["items"][0]["spec"]["nodeName"] == "node-a"
    assert yaml.safe_load(k("get", "pod", "p1", "-n", "demo", "-o", "yaml"))["metadata"]["labels"] == {"app": "web"}
    assert [r[0] for r in _rows(k("get", "pods", "-n", "demo", "-l", "app=web"))[1:]] == ["p1"]
    assert "No resources found" in k("get", "pods", "-n", "demo", "-l", "app=db", check=False)
    assert _rows(k("get", "pods", "-A", "--field-selector", "spec.nodeName=node-a"))[1][:2] == ["demo", "p1"]

    described = k("describe", "pod", "p1", "-n", "demo")
    assert "Scheduled" in described and "Successfully assigned demo/p1 to node-a" in described
    assert "p1" in k("describe", "node", "node-a").split("Non-terminated Pods:")[1]
    events = _rows(k("get", "events", "-n", "demo"))
    assert events[0] == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert any(r[1:4] == ["Normal", "Scheduled", "pod/p1"] for r in events[1:])
    only_p1 = _rows(k("get", "events", "-n", "demo", "--field-selector", "involvedObject.name=p1"))
    assert only_p1[1:] and all(r[3] == "pod/p1" for r in only_p1[1:])
    assert _rows(k("get", "events", "-n", "demo", "--field-selector", "involvedObject.name=nobody",
                   check=False)) == [["No", "resources", "found", "in", "demo", "namespace."]]

    assert k("label", "pod", "p1", "-n", "demo", "tier=fe").strip() == "pod/p1 labeled"
    assert k("annotate", "pod", "p1", "-n", "demo", "note=hello").strip() == "pod/p1 annotated"
    assert k.jsonpath("get pod p1 -n demo", "{.metadata.labels.tier}/{.metadata.annotations.note}") == "fe/hello"
    k("uncordon", "node-b")
    assert k.jsonpath("get node node-b", "{.spec.unschedulable}") == ""
    k("taint", "node", "node-a", "dedicated=ml:NoSchedule")
    assert json.loads(k.jsonpath("get node node-a", "{.spec.taints}")) == [
        {"effect": "NoSchedule", "key": "dedicated", "value": "ml"}]
    k("taint", "node", "node-a", "dedicated-")
    assert k.jsonpath("get node node-a", "{.spec.taints}") == ""

    assert "podgroup.scheduling.x-k8s.io/gang created" in k("apply", "-f", k.file("pg.yaml", PODGROUP.format(n=2)))
    assert "configured" in k("apply", "-f", k.file("pg.yaml", PODGROUP.format(n=3)))
    pg = _rows(k("get", "podgroups", "-n", "demo"))
    assert pg[0] == ["NAME", "PHASE", "MIN", "MEMBER", "PODS", "BOUND", "FINISHED", "AGE"]
    assert pg[1][0] == "gang" and pg[1][2] == "3"
    assert "serverside-applied" in k("apply", "--server-side", "-f", k.file("p2.yaml", POD.format(name="p2")))
    assert "serverside-applied" in k("apply", "--server-side", "-f",
                                     k.file("p2.yaml", POD.format(name="p2").replace("app: web", "app: api")))
    assert k.jsonpath("get pod p2 -n demo", "{.metadata.labels.app}") == "api"

    seen = _watch_until(k, ["get", "pods", "-n", "demo", "-w", "--output-watch-events"], "p3",
                        lambda: k("create", "-f", k.file("p3.yaml", POD.format(name="p3"))))
    assert any(line.split()[:2] == ["ADDED", "p3"] for line in seen)

    assert 'pod "p2" deleted' in k("delete", "pod", "p2", "-n", "demo", "--timeout=30s")
    assert 'pods "p2" not found' in k("get", "pod", "p2", "-n", "demo", check=False)
    # p2 again under its name: describe shows the new life's Scheduled event only (by uid)
    k("apply", "-f", k.file("p2.yaml", POD.format(name="p2")))
    assert "condition met" in k("wait", "--for=condition=PodScheduled", "pod/p2", "-n", "demo", "--timeout=30s")
    both = lambda: _rows(k("get", "events", "-n", "demo", "--field-selector",  # noqa: E731
                           "involvedObject.name=p2,reason=Scheduled"))[1:]
    poll(lambda: len(both()) == 2 or None, "both lives' Scheduled events", attempts=100)
    assert k("describe", "pod", "p2", "-n", "demo").split("Events:")[1].count("Successfully assigned demo/p2") == 1
    assert k("get", "--raw", "/readyz").startswith("ok")


def _field_validation_and_kueue(k: Kubectl) -> None:
    """kubectl's --validate on apply, client-side and server-side; Kueue's printer columns."""
    typo = POD.format(name="p1").replace("spec:\n", "spec:\n  nodeSelecter: {disk: ssd}\n")
    refused = k("apply", "-f", k.file("typo.yaml", typo), check=False)  # kubectl's default: Strict
    assert "The request is invalid" in refused and 'strict decoding error: unknown field "spec.nodeSelecter"' in refused
    warned = k("apply", "--validate=warn", "-f", k.file("typo.yaml", typo), check=False)
    assert 'Warning: unknown field "spec.nodeSelecter"' in warned and "pod/p1 configured" in warned
    assert k.jsonpath("get pod p1 -n demo", "{.spec.nodeSelecter}") == ""  # dropped, as kube-apiserver drops it
    ssa = k("apply", "--server-side", "--validate=false", "-f", k.file("typo.yaml", typo), check=False)
    assert ".spec.nodeSelecter: field not declared in schema" in ssa  # typed conversion: under every mode

    k("apply", "-f", k.file("kueue.yaml", KUEUE))
    assert _rows(k("get", "cq")) == [["NAME", "COHORT", "PENDING", "WORKLOADS"], ["team-a", "shared", "0"]]
    assert _rows(k("get", "lq", "-n", "demo"))[0] == ["NAME", "CLUSTERQUEUE", "PENDING", "WORKLOADS", "ADMITTED",
                                                      "WORKLOADS"]
    assert "No resources found" in k("get", "kwl", "-n", "demo", check=False)


def test_kubectl_and_the_python_client_over_http_without_a_token(daemon_factory, tmp_path: Path) -> None:
    d = daemon_factory()
    kubeconfig = d.data_dir / "kubeconfig"
    cfg = yaml.safe_load(kubeconfig.read_text())
    assert cfg["clusters"][0]["cluster"]["server"] == f"http://127.0.0.1:{d.http_port}"
    k = Kubectl(kubeconfig, tmp_path)
    _kubectl_commands(k)
    _field_validation_and_kueue(k)
    _python_client(kubeconfig)


def _python_client(kubeconfig: Path) -> None:
    pytest.importorskip("kubernetes", reason="the official Python client (pip install kubernetes)")
    from kubernetes import client, config, watch

    api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
    listed = api.list_namespaced_pod("demo")
    assert {p.metadata.name for p in listed.items} == {"p1", "p2", "p3"}
    theirs = client.V1Pod(metadata=client.V1ObjectMeta(name="theirs", namespace="demo"),
                          spec=client.V1PodSpec(scheduler_name="another-scheduler",
                                                containers=[client.V1Container(name="c", image="x")]))
    assert api.create_namespaced_pod("demo", theirs).metadata.name == "theirs"
    w = watch.Watch()
    names = []
    for event in w.stream(api.list_namespaced_pod, "demo", resource_version=listed.metadata.resource_version,
                          timeout_seconds=30):
        names.append((event["type"], event["object"].metadata.name))
        if event["object"].metadata.name == "theirs":
            w.stop()
    assert ("ADDED", "theirs") in names
    assert api.patch_node("node-b", {"metadata": {"labels": {"py": "yes"}}}).metadata.labels["py"] == "yes"
    binding = client.V1Binding(metadata=client.V1ObjectMeta(name="theirs"),
                               target=client.V1ObjectReference(kind="Node", name="node-b"))
    # The client cannot read the Status kube-apiserver answers as a V1Binding: raw response.
    reply = api.create_namespaced_binding("demo", binding, _preload_content=False)
    assert reply.status == 201
    assert api.read_namespaced_pod("theirs", "demo").spec.node_name == "node-b"
    with pytest.raises(client.ApiException) as refused:  # ksched's own profile schedules p1
        api.create_namespaced_binding("demo", client.V1Binding(metadata=client.V1ObjectMeta(name="p3"),
                                      target=client.V1ObjectReference(kind="Node", name="node-b")),
                                      _preload_content=False)
    assert refused.value.status == 403
    _python_client_events(api, watch)


def _python_client_events(api: Any, watch: Any) -> None:
    """list_namespaced_event with a field selector, and a watch on events from a resourceVersion."""
    p1 = api.read_namespaced_pod("p1", "demo")
    listed = api.list_namespaced_event("demo", field_selector=f"involvedObject.uid={p1.metadata.uid}")
    assert [(e.reason, e.involved_object.name, e.source.component, e.count) for e in listed.items] == [
        ("Scheduled", "p1", "default-scheduler", 1)]
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p4", "namespace": "demo"},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]}}
    w = watch.Watch()
    seen = []
    rv = api.list_namespaced_event("demo").metadata.resource_version
    api.create_namespaced_pod("demo", body)
    for event in w.stream(api.list_namespaced_event, "demo", resource_version=rv,
                          field_selector="involvedObject.name=p4", timeout_seconds=30):
        seen.append((event["type"], event["object"].reason, event["object"].involved_object.name))
        if event["object"].reason == "Scheduled":
            w.stop()
    assert ("ADDED", "Scheduled", "p4") in seen


def test_kubectl_over_https_with_a_token_and_the_kubeconfig_the_daemon_writes(daemon_factory, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("e2e-kube-token-0123456789\n")
    token.chmod(0o600)
    d = daemon_factory("--token-file", str(token))
    kubeconfig = d.data_dir / "kubeconfig"
    assert stat.S_IMODE(kubeconfig.stat().st_mode) == 0o600
    cfg = yaml.safe_load(kubeconfig.read_text())
    assert cfg["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{d.http_port}"
    assert cfg["clusters"][0]["cluster"]["certificate-authority-data"]
    assert cfg["users"][0]["user"]["token"] == "e2e-kube-token-0123456789"
    k = Kubectl(kubeconfig, tmp_path)
    _kubectl_commands(k)

    cfg["users"][0]["user"]["token"] = "wrong"
    wrong = tmp_path / "wrong-kubeconfig"
    wrong.write_text(yaml.safe_dump(cfg))
    out = Kubectl(wrong, tmp_path)("get", "pods", "-n", "demo", check=False)
    assert "provide credentials" in out or "Unauthorized" in out
    _python_client(kubeconfig)
