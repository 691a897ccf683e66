"""Preemption that frees a device, against a real `ksched serve`: one node publishes one
GPU, a low-priority pod holds it through a claim made from a template; a high-priority
pod needing a GPU preempts it, the victim's claim loses its allocation and is deleted
(the resourceclaim controller), and the preemptor lands on that same device."""
from __future__ import annotations

from typing import Any

from tests import dra_manifests as m
from tests.actors.helpers import node
from tests.e2e.conftest import poll


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def _pod(name: str, priority_class: str) -> dict[str, Any]:
    raw = m.pod_with_template(name)
    raw["spec"]["priorityClassName"] = priority_class
    return raw


def _claim_of(c: Any, pod: str) -> dict | None:
    """The allocated claim made for `pod`, once it is."""
    for claim in c.list("ResourceClaim", "default")[0]:
        owners = claim["metadata"].get("ownerReferences") or []
        if any(o.get("name") == pod for o in owners) and (claim.get("status") or {}).get("allocation"):
            return claim
    return None


def _pods(c: Any) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in c.list("Pod", "default")[0]}


def test_a_high_priority_pod_preempts_the_pod_holding_the_only_gpu_and_lands_on_it(daemon_factory) -> None:
    d = daemon_factory()
    with d.client() as c:
        c.apply([node("node-1"), m.device_class(), m.claim_template(), m.resource_slice("node-1", gpus=1),
                 _priority_class("low", 10), _priority_class("high", 1000)])
        c.apply([_pod("batch", "low")])
        held = poll(lambda: _claim_of(c, "batch"), "the low-priority pod's claim allocated")
        assert held["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"

        c.apply([_pod("urgent", "high")])
        won = poll(lambda: _claim_of(c, "urgent"), "the preemptor's claim allocated")
        [result] = won["status"]["allocation"]["devices"]["results"]
        assert (result["pool"], result["device"]) == ("node-1", "gpu-0")
        assert [r["name"] for r in won["status"]["reservedFor"]] == ["urgent"]
        assert poll(lambda: _pods(c)["urgent"]["spec"].get("nodeName"), "the preemptor bound") == "node-1"
        assert "batch" not in _pods(c)  # the victim was preempted (deleted)
        poll(lambda: [x["metadata"]["name"] for x in c.list("ResourceClaim", "default")[0]] == [won["metadata"]["name"]]
             or None, "the victim's claim deleted with it")
