"""A Coscheduling gang whose members each need a device is placed all or nothing: with
too few free devices no member binds, no claim is allocated and the devices stay free
for other pods; once there are enough, every member binds on a device of its own."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from framework.api.objects import POD_GROUP_LABEL, Pod
from tests import dra_manifests as m
from tests.actors.helpers import node

CONFIG = Path(__file__).resolve().parents[3] / "configs" / "coscheduling.yaml"


def _member(name: str) -> dict[str, Any]:
    raw = m.pod_with_template(name)
    raw["metadata"]["labels"] = {POD_GROUP_LABEL: "train"}
    return raw


def _group() -> dict[str, Any]:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"minMember": 3}}


def _bound(p: Pipeline) -> dict[str, str]:
    return {o.name: o.node_name for o in p.store.peek_all("Pod") if isinstance(o, Pod)}


def _allocated(p: Pipeline) -> list[tuple[str, str]]:
    return [(r["pool"], r["device"]) for c in p.store.peek_all("ResourceClaim")
            for r in ((c.status.get("allocation") or {}).get("devices") or {}).get("results") or []]


async def test_a_gang_needing_more_devices_than_free_takes_none_until_there_are_enough() -> None:
    async with Pipeline(yaml.safe_load(CONFIG.read_text()), clock=FakeClock(1_767_225_600.0)) as p:
        await p.client.apply([node("node-1"), node("node-2"), node("node-3"), m.device_class(), m.claim_template(),
                              m.resource_slice("node-1", gpus=1), m.resource_slice("node-2", gpus=1)])
        await p.client.apply([_group()] + [_member(f"train-{i}") for i in range(3)])
        await p.run_until_quiescent(120)
        assert not any(n for name, n in _bound(p).items() if name.startswith("train"))
        assert _allocated(p) == []

        await p.client.apply([m.pod_with_template("solo")])  # the gang holds no device
        await p.run_until_quiescent(120)
        assert _bound(p)["solo"]
        assert len(_allocated(p)) == 1

        await p.client.apply([m.resource_slice("node-3", gpus=2)])
        await p.run_until_quiescent(300)
        bound = _bound(p)
        assert all(bound[f"train-{i}"] for i in range(3))
        assert len(_allocated(p)) == 4 and len(set(_allocated(p))) == 4
