"""What a new user meets first with the real kubectl against a real `ksched serve`
(issue 28): refusals that name the field and reason as kube-apiserver's do."""
from __future__ import annotations

import http.client
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.e2e.test_kubectl import KUBECTL, Kubectl

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (install kubectl 1.32)")

NEGATIVE_CPU = """apiVersion: v1
kind: Pod
metadata: {name: neg}
spec:
  containers: [{name: c, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: "-1"}}}]
"""


@pytest.fixture
def kubectl(daemon_factory, tmp_path: Path) -> Kubectl:
    d = daemon_factory()
    return Kubectl(d.data_dir / "kubeconfig", tmp_path)


def test_kubectl_apply_of_a_negative_cpu_request_prints_the_field_and_reason_as_against_kube_apiserver(kubectl):
    out = kubectl("apply", "-f", kubectl.file("neg.yaml", NEGATIVE_CPU), check=False)
    assert out.strip() == ('The Pod "neg" is invalid: spec.containers[0].resources.requests[cpu]: '
                           'Invalid value: "-1": must be greater than or equal to 0')


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}
"""
JOB = """apiVersion: batch/v1
kind: Job
metadata: {name: pi}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: pi, image: perl:5.34.0, command: [perl, -Mbignum=bpi, -wle, print bpi(2000)]}]
"""
POD = """apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: registry.k8s.io/pause:3.10}]
"""


@pytest.mark.parametrize("manifest, what", [(DEPLOYMENT, "deployments.apps"), (JOB, "jobs.batch")],
                         ids=["deployment", "job"])
def test_kubectl_apply_of_a_workload_controller_says_in_one_line_that_ksched_stores_none(kubectl, manifest, what):
    out = kubectl("apply", "-f", kubectl.file("w.yaml", manifest), check=False)  # kubectl's default validation
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f'Error from server (NotFound): error when creating "')
    assert f"ksched stores no {what}: it is a scheduler" in lines[0] and "ksched serves: pods, nodes" in lines[0]


def test_kubectl_logs_and_exec_say_that_ksched_runs_no_containers(kubectl):
    kubectl("apply", "-f", kubectl.file("p.yaml", POD))
    for args in (("logs", "p"), ("exec", "p", "--", "ls")):
        out = kubectl(*args, check=False)
        assert f"ksched serves no pods/{args[0].replace('logs', 'log')}: ksched runs no containers" in out, out


def test_the_system_namespaces_exist_survive_a_restart_and_cannot_be_deleted(daemon_factory, tmp_path: Path):
    d = daemon_factory()
    k = Kubectl(d.data_dir / "kubeconfig", tmp_path)
    rows = [line.split()[:2] for line in k("get", "ns").strip().splitlines()]
    assert rows == [["NAME", "STATUS"], ["default", "Active"], ["kube-node-lease", "Active"],
                    ["kube-public", "Active"], ["kube-system", "Active"]]
    uids = k("get", "ns", "-o", "jsonpath={.items[*].metadata.uid}")
    out = k("delete", "ns", "default", check=False)
    assert 'Error from server (Forbidden): namespaces "default" is forbidden: this namespace may not be deleted' in out
    assert d.terminate() == 0
    again = daemon_factory(data_dir=d.data_dir)
    k = Kubectl(again.data_dir / "kubeconfig", tmp_path)
    assert k("get", "ns", "-o", "jsonpath={.items[*].metadata.uid}") == uids  # stored, not made again


def test_a_created_pod_is_pending_with_its_qos_class_through_kubectl_and_the_cli(daemon_factory, tmp_path: Path):
    d = daemon_factory()
    k = Kubectl(d.data_dir / "kubeconfig", tmp_path)
    guaranteed = POD.replace("pause:3.10}", 'pause:3.10, resources: {limits: {cpu: "1", memory: 1Gi}}}')
    k("create", "-f", k.file("g.yaml", guaranteed))
    assert k("get", "pod", "p", "-o", "jsonpath={.status.phase}/{.status.qosClass}") == "Pending/Guaranteed"
    d.cli("apply", "-f", "-", input=POD.replace("name: p}", "name: q}"))  # the msgpack door
    assert k("get", "pod", "q", "-o", "jsonpath={.status.phase}/{.status.qosClass}") == "Pending/BestEffort"


def test_watches_that_end_end_quietly_in_the_daemons_log(daemon_factory, tmp_path: Path):
    d = daemon_factory()
    k = Kubectl(d.data_dir / "kubeconfig", tmp_path)
    with d.urlopen("/api/v1/namespaces?watch=true&timeoutSeconds=1") as r:  # the server's timeout ends it
        assert r.read().count(b'"type":"ADDED"') == 4
    closed = http.client.HTTPConnection("127.0.0.1", d.http_port, timeout=10)  # the client leaves
    closed.request("GET", "/api/v1/namespaces?watch=true")
    assert b'"ADDED"' in closed.getresponse().readline()
    closed.close()
    kubectl_watch = subprocess.Popen([*k.base, "get", "ns", "-w"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert kubectl_watch.stdout is not None and kubectl_watch.stdout.readline().startswith(b"NAME")
    kubectl_watch.kill()
    kubectl_watch.communicate()
    # Ends after the watches above saw their clients gone (each checks every second, this one ends at 2 s).
    with d.urlopen("/api/v1/pods?watch=true&timeoutSeconds=2") as r:
        r.read()
    open_at_stop = d.urlopen("/api/v1/namespaces?watch=true")  # still open when the daemon stops
    assert open_at_stop.readline()
    assert d.terminate() == 0
    open_at_stop.close()
    assert d.proc is not None and d.proc.stderr is not None
    log = d.proc.stderr.read().decode()
    assert "ERROR" not in log and "Traceback" not in log, log


def test_kubectl_auth_can_i_answers_yes_with_a_valid_token_and_lists_every_rule(daemon_factory, tmp_path: Path):
    token = tmp_path / "token"
    token.write_text("e2e-can-i-token-0123456789\n")
    token.chmod(0o600)
    d = daemon_factory("--token-file", str(token))
    k = Kubectl(d.data_dir / "kubeconfig", tmp_path)  # https, with the token
    assert k("auth", "can-i", "create", "pods").strip() == "yes"
    assert k("auth", "can-i", "patch", "podgroups.scheduling.x-k8s.io", "-n", "demo").strip() == "yes"
    rules = [line.split() for line in k("auth", "can-i", "--list").strip().splitlines()]
    assert rules[1] == ["*.*", "[]", "[]", "[*]"] and rules[2] == ["[*]", "[]", "[*]"]
    cfg = yaml.safe_load((d.data_dir / "kubeconfig").read_text())
    cfg["users"][0]["user"]["token"] = "wrong"
    wrong = tmp_path / "wrong-kubeconfig"
    wrong.write_text(yaml.safe_dump(cfg))
    refused = Kubectl(wrong, tmp_path)("auth", "can-i", "create", "pods", check=False)
    assert "yes" not in refused.split() and ("Unauthorized" in refused or "provide credentials" in refused)

    pytest.importorskip("kubernetes", reason="the official Python client (pip install kubernetes)")
    from kubernetes import client, config

    api = client.AuthorizationV1Api(config.new_client_from_config(config_file=str(d.data_dir / "kubeconfig")))
    review = api.create_self_subject_access_review(client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
            verb="delete", resource="nodes"))))
    assert review.status.allowed is True and review.spec.resource_attributes.resource == "nodes"


def test_kubectl_explain_reads_the_served_kinds_fields(kubectl):
    out = kubectl("explain", "pod.spec.containers.resources")
    assert "KIND:       Pod" in out and "FIELD: resources <Object>" in out
    assert [line.split()[0] for line in out.split("FIELDS:")[1].splitlines() if line.startswith("  ")
            and not line.startswith("    ")] == ["claims", "limits", "requests"]
