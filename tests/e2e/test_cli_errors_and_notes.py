"""Errors that say what to do, and configuration ksched ignores said out loud
(issue 22, "The CLI"): real CLI subprocesses against a real daemon."""
from __future__ import annotations

import os
import subprocess
import sys

import yaml

from tests.e2e.conftest import ROOT, DaemonProcess, _env, free_ports
from tests.e2e.test_cli_kubectl_habits import apply

def ksched(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with the arguments given (no --server added)."""
    return subprocess.run([sys.executable, "-m", "transport.cli.main", *args], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=30)


PODGROUP = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "default"}, "spec": {"minMember": 2}}


def test_http_port_refused_connection_and_tokens_say_what_to_do(daemon_factory, tmp_path):
    token = tmp_path / "token"
    token.write_text("0123456789abcdef0123")
    os.chmod(token, 0o600)
    plain = daemon_factory(data_dir=tmp_path / "plain")
    http = ksched("get", "pods", "--server", f"127.0.0.1:{plain.http_port}")
    assert http.returncode == 1
    assert "answered in HTTP: it is the daemon's HTTP port" in http.stderr
    assert "msgpack port (serve --listen" in http.stderr and "TooLarge" not in http.stderr

    d = daemon_factory("--token-file", str(token), data_dir=tmp_path / "with-token")
    https = ksched("get", "pods", "--server", f"127.0.0.1:{d.http_port}")  # HTTPS: it closes on our frame
    assert https.returncode == 1
    assert "closed the connection without answering hello" in https.stderr and "--tls-ca" in https.stderr
    assert "msgpack port instead (serve --listen" in https.stderr and "Error from server" not in https.stderr

    [closed] = free_ports(1)
    refused = ksched("get", "pods", "--server", f"127.0.0.1:{closed}")
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"The connection to the server 127.0.0.1:{closed} was refused - "
                                     "did you specify the right host or port?")
    assert "ksched serve" in refused.stderr and "Error from server" not in refused.stderr

    none = d.cli("get", "pods", check=False)
    assert none.returncode == 1 and "requires a token" in none.stderr
    assert "--token" in none.stderr and "KSCHED_TOKEN" in none.stderr
    wrong = d.cli("get", "pods", "--token", "not-the-token-at-all", check=False)
    assert wrong.returncode == 1 and "refused the token" in wrong.stderr and "requires a token" not in wrong.stderr
    assert d.cli("get", "pods", "--token", "0123456789abcdef0123", check=False).returncode == 0


def test_ignored_config_fields_are_logged_by_name(tmp_path, daemon_factory):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": "/etc/kubernetes/scheduler.conf"},
        "leaderElection": {"leaderElect": True}, "parallelism": 32}))
    d = daemon_factory("--config", str(config))
    assert d.terminate() == 0
    log = d.proc.stderr.read().decode()  # type: ignore[union-attr]
    ignored = [line for line in log.splitlines() if "is ignored" in line]
    assert [line.split("KubeSchedulerConfiguration: ")[1].split()[0] for line in ignored] == [
        "clientConnection", "leaderElection", "parallelism"]
    assert all("WARNING" in line for line in ignored)


def test_podgroup_without_coscheduling_warns_on_apply_and_in_describe(daemon_factory):
    d = daemon_factory()  # the default profile has no Coscheduling
    out = d.cli("apply", "-f", "-", input=yaml.safe_dump(PODGROUP))
    assert out.stdout.strip() == "podgroup/g created"
    assert out.stderr.startswith("Warning: podgroup/g: gang scheduling is not enforced")
    assert "scheduled one by one" in out.stderr
    page = d.cli("describe", "pg/g").stdout
    assert "Gang Scheduling:" in page and "scheduled one by one" in page


def test_a_scheduling_k8s_io_podgroup_has_no_coscheduling_warning(daemon_factory):
    # GangScheduling, in the default profile, places Kubernetes' own PodGroups.
    d = daemon_factory()
    pg = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "default"},
          "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                   "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": "g"}}}}
    out = d.cli("apply", "-f", "-", input=yaml.safe_dump(pg))
    assert out.stdout.strip() == "podgroup.scheduling.k8s.io/g created"
    assert out.stderr == ""


def test_podgroup_with_coscheduling_has_no_warning(daemon_factory):
    d: DaemonProcess = daemon_factory("--config", str(ROOT / "configs" / "coscheduling.yaml"))
    assert apply(d, PODGROUP).strip() == "podgroup/g created"
    out = d.cli("apply", "-f", "-", input=yaml.safe_dump(PODGROUP))
    assert "Warning" not in out.stderr
    assert "Gang Scheduling:" not in d.cli("describe", "podgroup", "g").stdout
