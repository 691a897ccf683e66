"""The status write's claim restated without restated's metadata compare
(status_writes._restated) is the claim restated(raw) makes, field for field, for the
raws the status write builds (the stored metadata, or it with the finalizer added) and
for any other raw (then restated itself answers)."""
from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings, strategies as st

from actors.store.status_writes import _restated, _with_status
from framework.api.dra_kinds import ResourceClaim
from tests import dra_manifests as m

FINALIZER = "resource.kubernetes.io/delete-protection"
_ALLOCATED = {"allocation": {"devices": {"results": [
    {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}},
    "reservedFor": [{"resource": "pods", "name": "p", "uid": "p-uid"}]}


def _fields(claim: ResourceClaim) -> dict[str, Any]:
    meta = {slot: getattr(claim.meta, slot) for slot in type(claim.meta).__slots__}
    return {"meta": meta, "controlling_pod": claim.controlling_pod(), "pod_claim_name": claim.pod_claim_name,
            **{slot: getattr(claim, slot) for slot in ("raw", "name", "namespace", "labels", "key", "uid", "spec",
                                                        "status", "request_names", "allocated", "reserved_for")}}


def _stored(extra_meta: dict[str, Any], status: Any) -> dict[str, Any]:
    raw = m.resource_claim()
    raw["metadata"].update(uid="c-uid", resourceVersion="7", **extra_meta)
    if status is not None:
        raw["status"] = status
    return raw


_META = st.fixed_dictionaries({}, optional={
    "labels": st.just({"a": "b"}),
    "annotations": st.just({"resource.kubernetes.io/pod-claim-name": "gpu"}),
    "finalizers": st.sampled_from([[], [FINALIZER], ["other"], ["other", FINALIZER]]),
    "ownerReferences": st.just([{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "p-uid", "controller": True}]),
    "deletionTimestamp": st.just("2026-01-01T00:00:00Z")})


@settings(max_examples=200, deadline=None)
@given(meta=_META, before=st.sampled_from([None, {}, _ALLOCATED]), sent=st.sampled_from([None, {}, _ALLOCATED]),
       finalizer=st.sampled_from(["", FINALIZER, "other"]), parsed_owner=st.booleans())
def test_the_status_writes_restatement_is_restateds(meta: dict[str, Any], before: Any, sent: Any, finalizer: str,
                                                    parsed_owner: bool) -> None:
    current = ResourceClaim(_stored(meta, before))
    if parsed_owner:
        current.controlling_pod()  # worked out before: a restatement keeps it
    raw = _with_status(current.raw, copy.deepcopy(sent), finalizer)
    want = _fields(current.restated(raw))
    assert _fields(_restated(current, raw, raw.get("metadata"))) == want
    assert want == _fields(ResourceClaim(raw))  # (restated's own promise, for the record)


def test_a_raw_whose_metadata_is_not_the_writes_own_is_restated_in_full() -> None:
    current = ResourceClaim(_stored({}, None))
    raw = _with_status(current.raw, _ALLOCATED, FINALIZER)
    changed = {**raw, "metadata": {**raw["metadata"], "labels": {"x": "y"}}}
    got = _restated(current, changed, raw["metadata"])  # not the metadata the write built: compared, parsed
    assert got.labels == {"x": "y"} and _fields(got) == _fields(ResourceClaim(changed))
