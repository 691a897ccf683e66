"""Pods placed by their devices in the whole pipeline on a real SQLite store: claims made
from a template, allocated by the DynamicResources plugin, written with their
allocation and reservation; after a restart on the same file the devices stay taken."""
from __future__ import annotations

import random
from pathlib import Path

from actors.clock import FakeClock
from actors.pipeline import Pipeline
from actors.store.sqlite import SQLiteBackend
from framework.api.objects import Pod
from tests import dra_manifests as m
from tests.actors.helpers import node


def _pods(p: Pipeline) -> dict[str, Pod]:
    return {o.name: o for o in p.store.peek_all("Pod") if isinstance(o, Pod)}


def _held(p: Pipeline) -> list[tuple[str, str]]:
    """(pool, device) of every device allocated in a stored claim."""
    out = []
    for c in p.store.peek_all("ResourceClaim"):
        for r in ((c.status.get("allocation") or {}).get("devices") or {}).get("results") or []:
            out.append((r["pool"], r["device"]))
    return out


async def _start(path: Path) -> Pipeline:
    p = Pipeline(None, clock=FakeClock(), backend=SQLiteBackend(str(path)), rand=random.Random(1))
    await p.start()
    return p


async def test_four_gpu_pods_land_with_distinct_devices_and_a_fifth_waits_across_a_restart(tmp_path) -> None:
    db = tmp_path / "store.db"
    p = await _start(db)
    try:
        await p.client.apply([node("node-1"), node("node-2"), m.device_class(), m.claim_template(),
                              m.resource_slice("node-1", gpus=2), m.resource_slice("node-2", gpus=2)])
        await p.client.apply([m.pod_with_template(f"trainer-{i}") for i in range(4)])
        await p.run_until_quiescent(30)
        pods = _pods(p)
        assert all(pods[f"trainer-{i}"].node_name for i in range(4))
        held = _held(p)
        assert sorted(held) == [("node-1", "gpu-0"), ("node-1", "gpu-1"), ("node-2", "gpu-0"), ("node-2", "gpu-1")]
        for claim in p.store.peek_all("ResourceClaim"):
            (consumer,) = claim.status["reservedFor"]
            owner = pods[consumer["name"]]
            assert consumer == {"resource": "pods", "name": owner.name, "uid": owner.uid}
            pool = claim.status["allocation"]["devices"]["results"][0]["pool"]
            assert owner.node_name == pool  # the device is on the pod's node
    finally:
        await p.stop()

    p = await _start(db)
    try:
        await p.client.apply([m.pod_with_template("trainer-4")])
        await p.run_until_quiescent(30)
        late = _pods(p)["trainer-4"]
        assert not late.node_name
        scheduled = next(c for c in late.conditions if c.get("type") == "PodScheduled")
        assert "cannot allocate all claims" in scheduled["message"]
        assert len(_held(p)) == 4
    finally:
        await p.stop()
