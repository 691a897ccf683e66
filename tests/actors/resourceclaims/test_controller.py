"""The resourceclaim controller in the daemon: claims made from templates per pod (as
upstream names, owns and annotates them), recorded in the pod's status, found again
rather than made twice after a crash, reservations dropped for pods that are gone or
done, and generated claims deleted with their pod. A real Store on SQLite."""
from __future__ import annotations

import re
from typing import Any, AsyncIterator
from contextlib import asynccontextmanager

from actors.resourceclaims import ResourceClaimController
from actors.store import Store, StoreClient
from actors.store.sqlite import SQLiteBackend
from framework.api.dra_kinds import POD_CLAIM_NAME_ANNOTATION
from tests import dra_manifests as m
from tests.actors.store_helpers import pod, running


@asynccontextmanager
async def controlled(path: str) -> AsyncIterator[tuple[Store, StoreClient, ResourceClaimController]]:
    """A store on SQLite at `path` and a controller attached to it (driven by flush())."""
    async with running(SQLiteBackend(path)) as (store, client):
        yield store, client, await ResourceClaimController.attach(client)


async def settle(c: StoreClient, ctl: ResourceClaimController) -> None:
    """Run the controller until it has nothing left: a store round trip first, as the store
    hands its watchers a turn's events before it takes the next request."""
    for _ in range(20):
        await c.list("Namespace")
        if ctl.idle():
            return
        await ctl.flush()
    raise AssertionError("the controller kept finding work")


async def claims_of(c: StoreClient) -> list[dict[str, Any]]:
    items, _ = await c.list("ResourceClaim", "default")
    return items


async def test_a_pod_using_a_template_gets_its_own_claim_recorded_in_its_status(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (_, c, ctl):
        await c.apply([m.claim_template(), m.pod_with_template()])
        await settle(c, ctl)
        [claim] = await claims_of(c)
        pod = await c.get("Pod", "default", "trainer")
        meta = claim["metadata"]
        assert re.fullmatch(r"trainer-gpu-[a-z0-9]{5}", meta["name"]) and meta["generateName"] == "trainer-gpu-"
        assert meta["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "trainer",
                                            "uid": pod["metadata"]["uid"], "controller": True,
                                            "blockOwnerDeletion": True}]
        assert meta["annotations"] == {POD_CLAIM_NAME_ANNOTATION: "gpu"}
        assert claim["spec"] == (await c.get("ResourceClaimTemplate", "default", "one-gpu"))["spec"]["spec"]
        assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": meta["name"]}]
        await settle(c, ctl)  # the watch's echo of its own writes changes nothing
        assert len(await claims_of(c)) == 1 and ctl.created == 1


async def test_a_pods_claim_is_made_and_recorded_in_its_status_in_one_store_write(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (store, c, ctl):
        await c.apply([m.claim_template(), m.pod_with_template()])
        commits = store.commits
        await settle(c, ctl)
        assert ctl.created == 1 and (await c.get("Pod", "default", "trainer"))["status"]["resourceClaimStatuses"]
        assert store.commits == commits + 1  # the claim and the pod's status together (two, one after the other, before)


async def test_a_claim_made_before_a_crash_is_found_again_not_made_twice(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (_, c, _ctl):
        await c.apply([m.claim_template()])
        pod = await c.create(m.pod_with_template())
        # the controller created the claim, then died before writing the pod's status
        orphan = {**m.resource_claim(), "metadata": {
            "name": "trainer-gpu-abcde", "namespace": "default", "annotations": {POD_CLAIM_NAME_ANNOTATION: "gpu"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "trainer", "uid": pod["metadata"]["uid"],
                                 "controller": True, "blockOwnerDeletion": True}]}}
        await c.create(orphan)
    async with controlled(str(tmp_path)) as (_, c, ctl):  # restarted on the same files
        await settle(c, ctl)
        assert [x["metadata"]["name"] for x in await claims_of(c)] == ["trainer-gpu-abcde"]
        pod = await c.get("Pod", "default", "trainer")
        assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": "trainer-gpu-abcde"}]
        assert ctl.created == 0


async def test_a_missing_template_is_a_warning_and_the_claim_comes_when_the_template_does(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (_, c, ctl):
        await c.create(m.pod_with_template())
        await settle(c, ctl)
        assert await claims_of(c) == []
        events = await c.events("Pod", "default/trainer")
        assert [(e.type, e.reason, e.message) for e in events] == [
            ("Warning", "FailedResourceClaimCreation", 'PodResourceClaim gpu: resource claim template "one-gpu": '
                                                       'resourceclaimtemplate.resource.k8s.io "one-gpu" not found')]
        await c.create(m.claim_template())
        await settle(c, ctl)
        assert len(await claims_of(c)) == 1


async def _allocated_and_reserved(c: StoreClient, ctl: ResourceClaimController) -> dict[str, Any]:
    """The pod's claim as the scheduler leaves it after binding: allocated, protected, reserved."""
    await c.apply([m.claim_template(), m.pod_with_template()])
    await settle(c, ctl)
    [claim] = await claims_of(c)
    pod = await c.get("Pod", "default", "trainer")
    meta = {**claim["metadata"], "finalizers": ["resource.kubernetes.io/delete-protection"]}
    claim = await c.update({**claim, "metadata": meta})
    claim = await c.update({**claim, "status": {"allocation": m.allocation(), "reservedFor": [
        {"resource": "pods", "name": "trainer", "uid": pod["metadata"]["uid"]}]}})
    await settle(c, ctl)
    assert (await c.get("ResourceClaim", "default", claim["metadata"]["name"]))["status"]["reservedFor"]
    return claim


async def test_a_deleted_pods_claim_is_released_deallocated_and_deleted(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (_, c, ctl):
        await _allocated_and_reserved(c, ctl)
        await c.delete("Pod", "default", "trainer")
        await settle(c, ctl)
        assert await claims_of(c) == []


async def test_a_finished_pod_releases_its_claim_which_then_goes(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (_, c, ctl):
        claim = await _allocated_and_reserved(c, ctl)
        seen: list = []
        await c.watch(seen.append, kinds=frozenset({"ResourceClaim"}))
        await c.update_pod_status("default", "trainer", phase="Succeeded")
        await settle(c, ctl)
        assert await claims_of(c) == []  # (settle's round trip also delivered the watch's events)
        writes = [e.obj.raw for e in seen if e.type == "MODIFIED" and e.obj.name == claim["metadata"]["name"]]
        assert "reservedFor" not in writes[0]["status"] and "allocation" not in writes[0]["status"]


async def test_a_claim_reserved_for_a_pod_that_is_gone_loses_the_reservation(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (_, c, ctl):
        claim = await c.create(m.resource_claim())
        await c.update({**claim, "status": {"allocation": m.allocation(), "reservedFor": [
            {"resource": "pods", "name": "ghost", "uid": "uid-of-a-pod-never-seen"}]}})
        await settle(c, ctl)
        kept = await c.get("ResourceClaim", "default", "one-gpu")
        assert "reservedFor" not in kept["status"]
        assert kept["status"]["allocation"] == m.allocation()  # not protected by the scheduler: left allocated


async def test_a_pod_bound_without_the_scheduler_is_reserved_on_its_allocated_claim_once(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (_, c, ctl):
        claim = await c.create(m.resource_claim())
        await c.update({**claim, "status": {"allocation": m.allocation()}})
        pod = m.pod_with_template()
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "one-gpu"}]
        pod["spec"]["nodeName"] = "node-1"  # bound by its writer
        uid = (await c.create(pod))["metadata"]["uid"]
        await settle(c, ctl)
        reserved = (await c.get("ResourceClaim", "default", "one-gpu"))["status"]["reservedFor"]
        assert reserved == [{"resource": "pods", "name": "trainer", "uid": uid}]
        await c.apply([{**await c.get("Pod", "default", "trainer"), "metadata": {
            **(await c.get("Pod", "default", "trainer"))["metadata"], "labels": {"touched": "yes"}}}])
        await settle(c, ctl)
        assert (await c.get("ResourceClaim", "default", "one-gpu"))["status"]["reservedFor"] == reserved


async def test_a_burst_of_pods_gets_its_claims_made_and_recorded_in_shared_store_commits(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (store, c, ctl):
        await c.apply([m.claim_template()])
        await c.apply([m.pod_with_template(f"worker-{i}") for i in range(40)])
        before = store.commits
        await settle(c, ctl)
        claims = await claims_of(c)
        assert len(claims) == 40 and ctl.created == 40
        for i in range(40):
            pod = await c.get("Pod", "default", f"worker-{i}")
            [status] = pod["status"]["resourceClaimStatuses"]
            assert status["resourceClaimName"].startswith(f"worker-{i}-gpu-")
        # one at a time, 40 creates and 40 status writes took 80 commits
        assert store.commits - before < 20


def _plain_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def test_a_burst_of_pods_without_claims_sends_the_controller_no_message(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (_, c, ctl):
        before = ctl.inbox.puts
        await c.apply([_plain_pod(f"plain-{i}") for i in range(30)])
        await c.bind("default", "plain-0", "node-1")
        await settle(c, ctl)
        assert ctl.inbox.puts == before
        await c.apply([m.claim_template(), m.pod_with_template()])  # one that names a claim is heard
        await settle(c, ctl)
        assert ctl.inbox.puts > before and ctl.created == 1


async def test_a_claim_owned_by_a_pod_without_claims_is_still_collected_when_the_pod_finishes(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (_, c, ctl):
        pod = await c.create(_plain_pod("owner"))
        owned = {**m.resource_claim("made-by-hand"), "metadata": {
            "name": "made-by-hand", "namespace": "default", "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": pod["metadata"]["uid"],
                 "controller": True}]}}
        await c.create(owned)
        await settle(c, ctl)
        assert [x["metadata"]["name"] for x in await claims_of(c)] == ["made-by-hand"]
        await c.update_pod_status("default", "owner", phase="Succeeded")
        await settle(c, ctl)
        assert await claims_of(c) == []


async def test_the_echoes_of_a_bursts_own_writes_are_settled_without_a_sync(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (_, c, ctl):
        await c.apply([m.claim_template()])
        await c.apply([m.pod_with_template(f"worker-{i}") for i in range(40)])
        await settle(c, ctl)
        # one sync a pod; the claims' ADDED and the pods' status events that follow leave nothing to do
        assert ctl.created == 40 and ctl.synced == 40
        await c.apply([{**(await c.get("Pod", "default", f"worker-{i}")), "metadata": {
            **(await c.get("Pod", "default", f"worker-{i}"))["metadata"], "labels": {"seen": "yes"}}}
            for i in range(40)])
        await settle(c, ctl)
        assert ctl.synced == 40 and len(await claims_of(c)) == 40
        await c.delete("Pod", "default", "worker-0")  # its claim has work again: it goes
        await settle(c, ctl)
        assert len(await claims_of(c)) == 39 and ctl.synced > 40


async def test_the_echoes_of_its_own_claim_creates_and_status_writes_mark_nothing_dirty(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (_, c, ctl):
        await c.apply([m.claim_template()])
        await c.apply([m.pod_with_template(f"worker-{i}") for i in range(10)])
        await c.list("Namespace")
        await ctl.flush()  # the pods' syncs: their claims made and recorded, one write each
        assert ctl.created == 10 and not ctl.dirty_pods and not ctl.dirty_claims
        await c.list("Namespace")
        echoes = [ev for msg in ctl.inbox.get_nowait_all() for ev in msg.evs]  # each claim's ADDED, its pod's status
        assert len(echoes) == 20
        for ev in echoes:
            ctl._observe(ev)
        # the objects the controller already holds from its own write's reply: no key to look at again
        assert ctl.unchanged == 20 and not ctl.dirty_pods and not ctl.dirty_claims
        await c.delete("Pod", "default", "worker-0")  # a change of its own still marks its claim
        await settle(c, ctl)
        assert len(await claims_of(c)) == 9 and ctl.synced == 11


async def test_the_watch_events_of_a_burst_come_as_one_message(tmp_path) -> None:
    async with controlled(str(tmp_path)) as (_, c, ctl):
        await c.apply([m.claim_template()])
        await settle(c, ctl)
        before = ctl.inbox.puts
        await c.apply([m.pod_with_template(f"worker-{i}") for i in range(10)])
        await c.list("Namespace")
        [msg] = ctl.inbox.get_nowait_all()  # ten pods' ADDED, added to the message last queued, in order
        assert [ev.obj.name for ev in msg.evs] == [f"worker-{i}" for i in range(10)]
        assert ctl.inbox.puts == before + 1
        await ctl.handle_turn([msg])
        assert ctl.created == 10
        await settle(c, ctl)
        assert len(await claims_of(c)) == 10 and ctl.synced == 10
