"""kubectl's global flags stand before or after the verb, and its namespace-mismatch
message is printed word for word (transport.cli.resources, transport.cli.apply)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from transport.cli.apply import in_namespace
from transport.cli.main import build_parser
from transport.cli.manifests import UsageError
from transport.cli.resources import hoist_namespace_flags

ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE = "127.0.0.1:1"


def ksched(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "transport.cli.main", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_connection_flags_before_the_verb_are_moved_after_it():
    assert hoist_namespace_flags(["--server", "h:1", "get", "pods"]) == ["get", "--server", "h:1", "pods"]
    assert hoist_namespace_flags(["--token=t", "-n", "x", "--timeout", "3", "stats"]) == [
        "stats", "--token=t", "-n", "x", "--timeout", "3"]
    assert hoist_namespace_flags(["get", "pods", "--server", "h:1"]) == ["get", "pods", "--server", "h:1"]


def test_every_global_flag_parses_before_the_verb_as_after_it():
    before = build_parser().parse_args(hoist_namespace_flags(
        ["--server", "h:1", "--token", "t", "--tls-ca", "ca.pem", "--timeout", "5", "-A", "get", "pods"]))
    after = build_parser().parse_args(
        ["get", "pods", "--server", "h:1", "--token", "t", "--tls-ca", "ca.pem", "--timeout", "5", "-A"])
    assert {k: v for k, v in vars(before).items() if k != "func"} == {
        k: v for k, v in vars(after).items() if k != "func"}
    assert (before.server, before.token, before.tls_ca, before.timeout, before.all_namespaces) == (
        "h:1", "t", "ca.pem", 5.0, True)


def test_ksched_with_server_before_the_verb_reaches_the_server():
    proc = ksched("--server", UNREACHABLE, "get", "pods")
    assert "invalid choice" not in proc.stderr, proc.stderr
    assert proc.returncode != 0 and UNREACHABLE in proc.stderr, proc.stderr


def test_a_namespace_mismatch_says_what_to_pass_as_kubectl_does():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a"}, "spec": {}}
    with pytest.raises(UsageError) as err:
        in_namespace(pod, "b")
    assert str(err.value) == ('the namespace from the provided object "a" does not match the namespace "b". '
                              "You must pass '--namespace=a' to perform this operation.")
