"""kill -9 of a real daemon while pods with device claims bind: a claim's allocation
(with the pod in its reservedFor) and the pod's binding are one store write
(actors/store/messages.BindWithUpdates), so the store file a killed daemon leaves never
holds one without the other, and nothing a watch was told is lost.

40 nodes of 2 GPUs each; three times 20 pods, each with a claim from a template, are
applied and the daemon killed the moment a watch has seen 4 of their claims allocated
(the binds still streaming); each time the store file is read directly and a daemon
started on it again. The last one places all 60 pods, each on its own device."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests import dra_manifests as m
from tests.actors.helpers import node
from tests.e2e.conftest import daemon_factory, poll  # noqa: F401 - the fixture is used by name

NODES = [f"node-{i}" for i in range(40)]
ROUNDS, BATCH, KILL_AFTER = 3, 20, 4
PODS = [f"trainer-{i}" for i in range(ROUNDS * BATCH)]


def _stored(data: Path, kind: str) -> list[dict[str, Any]]:
    db = sqlite3.connect(f"file:{data / 'store.db'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT body FROM objects WHERE kind = ?", (kind,)).fetchall()
    finally:
        db.close()
    return [json.loads(b) for (b,) in rows]


def _allocated(claim: dict[str, Any]) -> bool:
    return bool((claim.get("status") or {}).get("allocation"))


def _half_written(data: Path) -> list[str]:
    """Every claim allocated without its pod bound to the allocation's node, and every
    bound pod whose claim is not allocated and reserved for it, in the store file."""
    pods = {p["metadata"]["name"]: p for p in _stored(data, "Pod")}
    claims = {c["metadata"]["name"]: c for c in _stored(data, "ResourceClaim")}
    wrong: list[str] = []
    for name, claim in claims.items():
        if not _allocated(claim):
            continue
        [consumer] = claim["status"].get("reservedFor") or [{"name": "(none)"}]
        [result] = claim["status"]["allocation"]["devices"]["results"]
        pod = pods.get(consumer["name"])
        if pod is None or pod["spec"].get("nodeName") != result["pool"]:
            wrong.append(f"claim {name} allocated on {result['pool']}, its pod {consumer['name']} is not bound there")
    for name, pod in pods.items():
        if not pod["spec"].get("nodeName"):
            continue
        statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
        claim = claims.get(statuses[0]["resourceClaimName"]) if statuses else None
        if claim is None or not _allocated(claim) or \
                [r.get("uid") for r in claim["status"].get("reservedFor") or []] != [pod["metadata"]["uid"]]:
            wrong.append(f"pod {name} bound without its claim allocated and reserved for it")
    return wrong


def _kill_while_binding(d: Any, batch: list[str], seen: dict[str, str]) -> None:
    """Apply the pods of `batch`, watch their claims until a few are allocated, then
    kill -9 at once (their binds still streaming); `seen` gets the claims the watch
    showed allocated (name -> pool)."""
    with d.client() as c:
        events = c.watch(["Node", "ResourceClaim"])
        next(events)  # the watch is registered (the nodes come first): now the pods
        with d.client() as writer:
            writer.apply([m.pod_with_template(n) for n in batch])
        ours = 0
        for ev in events:
            claim = ev.object
            if ev.type == "MODIFIED" and claim.get("kind") == "ResourceClaim" and _allocated(claim):
                seen[claim["metadata"]["name"]] = claim["status"]["allocation"]["devices"]["results"][0]["pool"]
                ours += any(claim["metadata"]["name"].startswith(f"{n}-") for n in batch)
                if ours >= KILL_AFTER:
                    break
    d.kill9()


def test_kill_9_never_leaves_a_claim_allocated_without_its_pods_binding_or_the_reverse(
        daemon_factory, tmp_path: Path) -> None:  # noqa: F811
    data = tmp_path / "data"
    d = daemon_factory(data_dir=data)
    with d.client() as c:
        c.apply([node(n) for n in NODES] + [m.device_class(), m.claim_template()]
                + [m.resource_slice(n, gpus=2) for n in NODES])
    told: dict[str, str] = {}
    for round_ in range(ROUNDS):
        if round_:
            d = daemon_factory(data_dir=data)
        _kill_while_binding(d, PODS[round_ * BATCH:(round_ + 1) * BATCH], told)
        assert _half_written(data) == []
        allocated = {c["metadata"]["name"]: c["status"]["allocation"]["devices"]["results"][0]["pool"]
                     for c in _stored(data, "ResourceClaim") if _allocated(c)}
        assert {n: allocated.get(n) for n in told} == told  # nothing a watch was told is lost
    d = daemon_factory(data_dir=data)
    with d.client() as c:
        def all_bound() -> list[dict[str, Any]] | None:
            pods = c.list("Pod", "default")[0]
            return pods if all(p["spec"].get("nodeName") for p in pods) and len(pods) == len(PODS) else None
        poll(all_bound, "every pod bound", attempts=1200)
        claims = c.list("ResourceClaim", "default")[0]
        devices = [(r["pool"], r["device"]) for cl in claims if _allocated(cl)
                   for r in cl["status"]["allocation"]["devices"]["results"]]
        assert len(devices) == len(PODS) == len(set(devices))
    d.terminate()
    assert _half_written(data) == []
