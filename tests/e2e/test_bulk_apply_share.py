"""The bulk-apply share at its extreme: a real daemon configured with
`limits.bulkApplySchedulerShare: 0` (no fair pause after a bulk apply's turns)
still binds every pod of a chunked `ksched apply -f`: the scheduler runs in the
paced apply's turns and catches up once the apply is done."""
from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from transport.client.tcp import Client

from tests.e2e.test_limits_figures import config, node

PODS, CHUNK, NODES = 1200, 300, 20  # 110 pods a node: room for all


def pods_yaml() -> str:
    return "\n---\n".join(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"bulk-{i}", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "10m"}}}]}})
        for i in range(PODS))


def test_with_no_bulk_share_every_pod_of_a_chunked_apply_is_still_bound(daemon_factory, tmp_path: Path) -> None:
    d = daemon_factory("--config", config(tmp_path, limits={"bulkApplyObjects": CHUNK,
                                                            "bulkApplySchedulerShare": 0}))

    async def bound_after_apply() -> int:
        async with await Client.connect(d.server) as c:
            await c.apply([node(f"node-{i}") for i in range(NODES)])
            rv = (await c.stats())["resourceVersion"]
            manifest = tmp_path / "pods.yaml"
            manifest.write_text(pods_yaml())
            out = await asyncio.to_thread(d.cli, "apply", "-f", str(manifest), "--chunk-size", str(CHUNK))
            assert out.stdout.count(" created") == PODS, out.stderr
            bound: set[str] = set()
            async with asyncio.timeout(90):
                async for ev in c.watch(["Pod"], resource_version=rv):
                    if (ev.object.get("spec") or {}).get("nodeName"):
                        bound.add(ev.object["metadata"]["name"])
                        if len(bound) == PODS:
                            break
            return len(bound)

    assert asyncio.run(bound_after_apply()) == PODS
