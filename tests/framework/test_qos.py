"""A pod's QoS class by upstream's ComputePodQOS rules (framework/api/qos.py)."""
from __future__ import annotations

from typing import Any

import pytest

from framework.api.qos import pod_qos_class


def _c(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    res: dict[str, Any] = {}
    if requests is not None:
        res["requests"] = requests
    if limits is not None:
        res["limits"] = limits
    return {"name": "c", "image": "x", "resources": res}


def _pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (), **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": list(containers), **spec}
    if init:
        body["initContainers"] = list(init)
    return {"kind": "Pod", "metadata": {"name": "p"}, "spec": body}


CPU_MEM = {"cpu": "1", "memory": "1Gi"}


@pytest.mark.parametrize("pod, qos", [
    (_pod(_c()), "BestEffort"),
    (_pod(_c({"cpu": "0", "memory": "0"})), "BestEffort"),  # only amounts above zero count
    (_pod(_c({"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})), "BestEffort"),  # only cpu and memory count
    (_pod(_c(CPU_MEM, CPU_MEM)), "Guaranteed"),
    (_pod(_c(None, CPU_MEM)), "Guaranteed"),  # requests default to limits
    (_pod(_c({"cpu": "1000m", "memory": "1024Mi"}, CPU_MEM)), "Guaranteed"),  # equal amounts, other spellings
    (_pod(_c({"cpu": "500m"}, CPU_MEM)), "Burstable"),
    (_pod(_c({"cpu": "1"}, {"cpu": "1"})), "Burstable"),  # no memory limit
    (_pod(_c({"cpu": "100m"})), "Burstable"),
    (_pod(_c(CPU_MEM, CPU_MEM), _c()), "Burstable"),  # a second container without limits
    (_pod(_c(CPU_MEM, CPU_MEM), init=(_c({"cpu": "1"}),)), "Burstable"),  # init containers count
    (_pod(_c(CPU_MEM, CPU_MEM), init=(_c(CPU_MEM, CPU_MEM),)), "Guaranteed"),
    (_pod(_c(), resources={"limits": CPU_MEM}), "Guaranteed"),  # pod-level resources decide
    (_pod(_c(CPU_MEM, CPU_MEM), resources={"requests": {"cpu": "1"}}), "Burstable"),
], ids=["nothing", "zeros", "extended-only", "equal", "limits-only", "equal-spelled-otherwise", "cpu-below-limit",
        "no-memory-limit", "requests-only", "one-container-unlimited", "init-without-limits", "init-equal",
        "pod-level-limits", "pod-level-requests"])
def test_the_qos_class_follows_compute_pod_qos(pod: dict[str, Any], qos: str) -> None:
    assert pod_qos_class(pod) == qos
