"""What a new user meets first with the real kubectl against a real `ksched serve`
(issue 28): refusals that name the field and reason as kube-apiserver's do."""
from __future__ import annotations

from pathlib import Path

import pytest

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
