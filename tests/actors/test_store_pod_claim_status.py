"""The pod status write of the resourceclaim controller (UpdatePodStatus.claim_statuses):
status.resourceClaimStatuses merged by name, as kube-apiserver's pods/status applies it,
with its pod status rules; the rest of the pod is left as stored. A real Store on SQLite."""
from __future__ import annotations

import pytest

from actors.store import Invalid
from actors.store.sqlite import SQLiteBackend
from tests import dra_manifests as m
from tests.actors.store_helpers import running


def two_claims_pod() -> dict:
    pod = m.pod_with_template()
    pod["spec"]["resourceClaims"].append({"name": "nic", "resourceClaimTemplateName": "one-nic"})
    return pod


async def test_claim_statuses_are_merged_by_name_and_nothing_else_changes(tmp_path) -> None:
    async with running(SQLiteBackend(str(tmp_path))) as (_, c):
        before = await c.create(two_claims_pod())
        await c.update_pod_status("default", "trainer", uid=before["metadata"]["uid"],
                                  claim_statuses={"gpu": "trainer-gpu-abcde"})
        got = await c.update_pod_status("default", "trainer", claim_statuses={"nic": "trainer-nic-fghij",
                                                                              "gpu": "trainer-gpu-klmno"})
    assert got["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": "trainer-gpu-klmno"},
                                                      {"name": "nic", "resourceClaimName": "trainer-nic-fghij"}]
    assert got["spec"] == before["spec"] and got["metadata"]["uid"] == before["metadata"]["uid"]
    assert {k: v for k, v in got["status"].items() if k != "resourceClaimStatuses"} == before["status"]
    async with running(SQLiteBackend(str(tmp_path))) as (_, c):  # durable, as every acknowledged write
        assert (await c.get("Pod", "default", "trainer"))["status"] == got["status"]


async def test_a_claim_status_not_named_in_the_pods_spec_is_refused_and_changes_nothing() -> None:
    async with running() as (_, c):
        before = await c.create(m.pod_with_template())
        with pytest.raises(Invalid) as e:
            await c.update_pod_status("default", "trainer", claim_statuses={"disk": "trainer-disk-abcde"})
        assert e.value.field == "status.resourceClaimStatuses[0].name"
        assert "must match the name of an entry in `spec.resourceClaims`" in e.value.message
        with pytest.raises(Invalid) as e:
            await c.update_pod_status("default", "trainer", claim_statuses={"gpu": "Not_A_Name"})
        assert e.value.field == "status.resourceClaimStatuses[0].name" and "Not_A_Name" in e.value.message
        assert await c.get("Pod", "default", "trainer") == before


async def test_claims_made_for_a_pod_and_their_record_in_its_status_are_one_write_all_or_nothing(tmp_path) -> None:
    from actors.store import NotFound
    from actors.store.messages import ClaimToMake
    from framework.api.dra_kinds import POD_CLAIM_NAME_ANNOTATION

    def made_for(pod: dict, pod_claim: str) -> ClaimToMake:
        claim = {**m.resource_claim(), "metadata": {
            "generateName": f"trainer-{pod_claim}-", "namespace": "default",
            "annotations": {POD_CLAIM_NAME_ANNOTATION: pod_claim},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "trainer",
                                 "uid": pod["metadata"]["uid"], "controller": True}]}}
        return ClaimToMake(pod_claim=pod_claim, obj=claim)

    async with running(SQLiteBackend(str(tmp_path))) as (store, c):
        pod = await c.create(two_claims_pod())
        events: list = []
        await c.watch(events.append, kinds=frozenset({"Pod", "ResourceClaim"}), from_rv=int(pod["metadata"]["resourceVersion"]))
        with pytest.raises(NotFound):  # the pod replaced (another uid): no claim is made either
            await c.make_pod_claims("default", "trainer", "another-uid", [made_for(pod, "gpu")], {})
        assert (await c.list("ResourceClaim", "default"))[0] == []
        commits = store.commits
        made, stored = await c.make_pod_claims("default", "trainer", pod["metadata"]["uid"],
                                              [made_for(pod, "gpu")], {"nic": "trainer-nic-fghij"})
        assert store.commits == commits + 1
        # the stored objects themselves, parsed (the controller reads them as they are)
        assert [o.kind for o in (*made, stored)] == ["ResourceClaim", "Pod"] and stored is store.peek("Pod", "default", "trainer")
        [claim], got = [o.raw for o in made], stored.raw
        assert claim["metadata"]["name"].startswith("trainer-gpu-")
        assert got["status"]["resourceClaimStatuses"] == [
            {"name": "nic", "resourceClaimName": "trainer-nic-fghij"},
            {"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
        await c.list("Namespace")  # the turn's events are told before the next request is taken
        # the claim's ADDED, then the pod's MODIFIED, as upstream's create and status apply give them
        assert [(e.type, e.kind, e.resource_version) for e in events] == [
            ("ADDED", "ResourceClaim", int(claim["metadata"]["resourceVersion"])),
            ("MODIFIED", "Pod", int(got["metadata"]["resourceVersion"]))]
        assert int(got["metadata"]["resourceVersion"]) == int(claim["metadata"]["resourceVersion"]) + 1
    async with running(SQLiteBackend(str(tmp_path))) as (_, c):  # durable
        assert (await c.get("Pod", "default", "trainer"))["status"] == got["status"]
        assert (await c.get("ResourceClaim", "default", claim["metadata"]["name"]))["spec"] == claim["spec"]


async def test_claim_statuses_already_recorded_are_not_written_again() -> None:
    async with running() as (store, c):
        await c.create(m.pod_with_template())
        first = await c.update_pod_status("default", "trainer", claim_statuses={"gpu": "trainer-gpu-abcde"})
        rv = store.resource_version
        again = await c.update_pod_status("default", "trainer", claim_statuses={"gpu": "trainer-gpu-abcde"})
        # as kube-apiserver's apply that changes nothing: no new resourceVersion, no watch event
        assert again == first and store.resource_version == rv
        moved = await c.update_pod_status("default", "trainer", claim_statuses={"gpu": "trainer-gpu-fghij"})
        assert int(moved["metadata"]["resourceVersion"]) == rv + 1
