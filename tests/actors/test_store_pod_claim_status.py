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
