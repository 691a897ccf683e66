"""A GPU job against a real `ksched serve`: 4 nodes publishing 2 GPUs each in
ResourceSlices, a ResourceClaimTemplate and 4 pods using it. Every pod lands with its own
device on its own node's slice, each claim shows its allocation and its pod in
reservedFor; kill -9 and a restart keep every allocation, and 5 pods added afterwards
get only the 4 devices still free (no device twice), one waiting for a device."""
from __future__ import annotations

from typing import Any

from tests import dra_manifests as m
from tests.actors.helpers import node
from tests.e2e.conftest import poll


def _claims(c: Any) -> list[dict]:
    return c.list("ResourceClaim", "default")[0]


def _devices(claims: list[dict]) -> list[tuple[str, str]]:
    return [(r["pool"], r["device"]) for c in claims
            for r in (c.get("status") or {}).get("allocation", {}).get("devices", {}).get("results", [])]


def _allocated(c: Any, n: int) -> list[dict] | None:
    """The claims once `n` devices are allocated in them."""
    claims = _claims(c)
    return claims if len(_devices(claims)) == n else None


def _one_unschedulable(c: Any, names: list[str]) -> dict | None:
    """The PodScheduled condition of the one pod of `names` that found no device."""
    found = [cond for p in c.list("Pod", "default")[0] if p["metadata"]["name"] in names
             for cond in (p.get("status") or {}).get("conditions") or []
             if cond.get("type") == "PodScheduled" and cond.get("reason") == "Unschedulable"]
    return found[0] if len(found) == 1 else None


def _bound(c: Any, names: list[str]) -> dict[str, str] | None:
    pods = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in c.list("Pod", "default")[0]}
    return pods if all(pods.get(n) for n in names) else None


def test_a_gpu_job_lands_on_distinct_devices_and_kill_9_allocates_no_device_twice(daemon_factory) -> None:
    d = daemon_factory()
    nodes = [f"node-{i}" for i in range(1, 5)]
    with d.client() as c:
        c.apply([node(n) for n in nodes] + [m.device_class(), m.claim_template()]
                + [m.resource_slice(n, gpus=2) for n in nodes])
        first = [f"trainer-{i}" for i in range(4)]
        c.apply([m.pod_with_template(n) for n in first])
        placed = poll(lambda: _bound(c, first), "the 4 pods bound")
        claims = poll(lambda: _allocated(c, 4), "4 allocations")
        assert len(set(_devices(claims))) == 4
        for claim in claims:
            [consumer] = claim["status"]["reservedFor"]
            [result] = claim["status"]["allocation"]["devices"]["results"]
            assert result["pool"] == placed[consumer["name"]]  # the device is on its pod's node
            assert claim["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    d.kill9()

    d2 = daemon_factory(data_dir=d.data_dir)
    with d2.client() as c:
        assert len(set(_devices(_claims(c)))) == 4  # every allocation survived
        more = [f"late-{i}" for i in range(5)]
        c.apply([m.pod_with_template(n) for n in more])
        devices = _devices(poll(lambda: _allocated(c, 8), "8 allocations"))
        assert len(set(devices)) == 8  # no device twice
        waiting = poll(lambda: _one_unschedulable(c, more), "the fifth pod found no device")
        assert "cannot allocate all claims" in waiting["message"]
        # An allocation is written at PreBind, before its pod's bind: wait for the binds.
        def four_bound() -> dict[str, str] | None:
            pods = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in c.list("Pod", "default")[0]}
            return pods if sum(1 for n in more if pods[n]) >= 4 else None
        pods = poll(four_bound, "4 of the late pods bound")
        assert sum(1 for n in more if pods[n]) == 4
        assert len(_devices(_claims(c))) == 8
