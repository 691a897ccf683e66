"""kubectl's global flags before the verb, and its namespace-mismatch wording, against
a real daemon."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import ROOT, _env, daemon_factory  # noqa: F401 - the fixture is used by name

POD_IN_A = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: a}\nspec: {containers: [{name: c, image: pause}]}\n"


def ksched(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "transport.cli.main", *args], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=30)


def test_server_namespace_and_timeout_before_the_verb_reach_a_real_daemon(daemon_factory, tmp_path: Path):  # noqa: F811
    d = daemon_factory()
    (tmp_path / "pod.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n" + POD_IN_A)
    applied = ksched("--server", d.server, "--timeout", "10", "-n", "a", "apply", "-f", str(tmp_path / "pod.yaml"))
    assert applied.returncode == 0, applied.stderr
    got = ksched("--server", d.server, "-n", "a", "get", "pods", "-o", "name")
    assert got.returncode == 0, got.stderr
    assert got.stdout.split() == ["pod/p"]


def test_applying_an_object_of_another_namespace_says_which_namespace_to_pass(daemon_factory, tmp_path: Path):  # noqa: F811
    d = daemon_factory()
    (tmp_path / "pod.yaml").write_text(POD_IN_A)
    proc = ksched("--server", d.server, "-n", "b", "apply", "-f", str(tmp_path / "pod.yaml"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == ('error: the namespace from the provided object "a" does not match the namespace '
                                   '"b". You must pass \'--namespace=a\' to perform this operation.')
    assert ksched("--server", d.server, "get", "pods", "-A", "-o", "name").stdout.split() == []


def test_create_puts_objects_in_the_namespace_given_before_the_verb_and_refuses_another(daemon_factory, tmp_path: Path):  # noqa: F811
    d = daemon_factory()
    (tmp_path / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n")
    (tmp_path / "bare.yaml").write_text(POD_IN_A.replace(", namespace: a", ""))
    (tmp_path / "pod.yaml").write_text(POD_IN_A)
    assert ksched("--server", d.server, "create", "-f", str(tmp_path / "ns.yaml")).returncode == 0
    created = ksched("--server", d.server, "-n", "a", "create", "-f", str(tmp_path / "bare.yaml"))
    assert created.returncode == 0, created.stderr
    assert ksched("--server", d.server, "get", "pods", "-n", "a", "-o", "name").stdout.split() == ["pod/p"]
    refused = ksched("--server", d.server, "create", "-f", str(tmp_path / "pod.yaml"), "--namespace", "b")
    assert refused.returncode == 2
    assert "You must pass '--namespace=a' to perform this operation." in refused.stderr
