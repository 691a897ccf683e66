"""`ksched describe` of DRA's four kinds prints the page kubectl's generic describer
prints for them (the same text as `kubectl describe` against the same daemon), not YAML."""
from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.conftest import poll
from tests.e2e.test_kubectl import Kubectl, pytestmark  # noqa: F401 - skipped without kubectl
from tests.e2e.test_kubectl_dra import MANIFESTS, POD


def test_ksched_describe_of_every_dra_kind_is_kubectls_page(daemon_factory, tmp_path: Path) -> None:
    d = daemon_factory()
    k = Kubectl(d.data_dir / "kubeconfig", tmp_path)
    k("apply", "-f", k.file("dra.yaml", MANIFESTS))
    k("apply", "-f", k.file("pod.yaml", POD))
    claims = poll(lambda: json.loads(k("get", "resourceclaims", "-o", "json"))["items"] or None, "the pod's claim")
    targets = [("deviceclass", "gpu.example.com"), ("resourceslice", "node-1-gpus"),
               ("resourceclaimtemplate", "one-gpu"), ("resourceclaim", claims[0]["metadata"]["name"])]
    for kind, name in targets:
        ours = d.cli("describe", kind, name).stdout
        assert not ours.startswith("apiVersion:")  # not the YAML dump
        assert ours.rstrip("\n") == k("describe", kind, name).rstrip("\n"), kind
