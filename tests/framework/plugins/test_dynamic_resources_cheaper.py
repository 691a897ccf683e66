"""The DynamicResources plugin's cheaper paths held to the full ones they replace:
claims_or_reason (PreEnqueue and PreFilter read a pod's claims without raising) against
pod_claims' ClaimsNotReady, and ResourceClaim.with_own_status (Reserve's claim in
flight) against restated, on claims and statuses varied field by field."""
from __future__ import annotations

import copy
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from framework.api.dra_kinds import ResourceClaim
from framework.api.objects import Pod
from framework.interface import Code, CycleState, Status
from framework.plugins.dynamicresources.claims import (ClaimsNotReady, claims_or_reason, pod_claims,
                                                       reserved_for_entries, with_status)
from tests import dra_manifests as m


def _claim(name: str, uid: str = "", owner: str = "", deleting: bool = False) -> ResourceClaim:
    raw: dict[str, Any] = m.resource_claim(name, count=1)
    raw["metadata"].update(uid=uid or f"{name}-uid", resourceVersion="5")
    if owner:
        raw["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "trainer", "uid": owner, "controller": True}]
    if deleting:
        raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return ResourceClaim(raw)


def _pod(entries: list[dict[str, Any]], statuses: list[dict[str, Any]]) -> Pod:
    raw: dict[str, Any] = {"metadata": {"name": "trainer", "namespace": "default", "uid": "pod-uid"},
                           "spec": {"containers": [{"name": "c", "image": "x"}], "resourceClaims": entries}}
    if statuses:
        raw["status"] = {"resourceClaimStatuses": statuses}
    return Pod(raw)


_ENTRIES = [
    {"name": "a", "resourceClaimName": "by-hand"},
    {"name": "b", "resourceClaimName": "missing"},
    {"name": "c", "resourceClaimName": "deleting"},
    {"name": "t", "resourceClaimTemplateName": "one-gpu"},
    {"name": "u", "resourceClaimTemplateName": "one-gpu"},
    {"name": "n"},
]
_STATUSES = [
    {"name": "t", "resourceClaimName": "made-for-pod"},
    {"name": "u", "resourceClaimName": "made-for-other"},
]
_CLAIMS = {c.name: c for c in (_claim("by-hand"), _claim("deleting", deleting=True),
                               _claim("made-for-pod", owner="pod-uid"), _claim("made-for-other", owner="else"))}


def _lookup(namespace: str, name: str) -> ResourceClaim | None:
    return _CLAIMS.get(name)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(range(len(_ENTRIES))), max_size=4, unique=True),
       st.lists(st.sampled_from(range(len(_STATUSES))), max_size=2, unique=True))
def test_claims_or_reason_answers_what_pod_claims_returns_or_raises(entries: list[int], statuses: list[int]) -> None:
    pod = _pod([_ENTRIES[i] for i in entries], [_STATUSES[i] for i in statuses])
    try:
        want: tuple[list[ResourceClaim], str] = (pod_claims(pod, _lookup), "")
    except ClaimsNotReady as e:
        want = ([], str(e))
    got = claims_or_reason(pod, _lookup)
    assert got[1] == want[1] and [c is w for c, w in zip(got[0], want[0])] == [True] * len(want[0])
    assert len(got[0]) == len(want[0])


def test_pre_enqueue_and_pre_filter_say_why_without_an_exception_raised() -> None:
    from tests.framework.plugins.test_dynamic_resources import _world
    plugin, _, snap = _world()
    pod = Pod(m.pod_with_template())
    want = Status(Code.UnschedulableAndUnresolvable, 'pod "default/trainer": ResourceClaim not created yet')
    raised: list[Any] = []

    def spy(frame: Any, event: str, arg: Any) -> Any:
        if event == "exception" and arg[0] is ClaimsNotReady:
            raised.append(arg)
        return spy

    import sys
    sys.settrace(spy)
    try:
        enqueue = plugin.pre_enqueue(pod)
        _, pre = plugin.pre_filter(CycleState(), pod, snap.list())
    finally:
        sys.settrace(None)
    assert (enqueue, pre, raised) == (want, want, [])


_ALLOCATION = m.allocation()
_STATUS_VARIANTS = [
    None, {}, {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]},
    {"allocation": _ALLOCATION}, {"allocation": _ALLOCATION, "devices": [{"driver": "d", "pool": "p", "device": "x"}]},
]


@pytest.mark.parametrize("finalizers", [None, [], ["other"], ["resource.kubernetes.io/delete-protection"]])
@pytest.mark.parametrize("status", _STATUS_VARIANTS)
@pytest.mark.parametrize("metadata_kind", ["dict", "proxy"])
def test_with_own_status_is_restated_for_what_with_status_makes(finalizers: Any, status: Any,
                                                                metadata_kind: str) -> None:
    raw: dict[str, Any] = m.resource_claim("c", count=1)
    raw["metadata"].update(uid="c-uid", resourceVersion="7")
    if finalizers is not None:
        raw["metadata"]["finalizers"] = finalizers
    if status is not None:
        raw["status"] = copy.deepcopy(status)
    if metadata_kind == "proxy":  # metadata that is a Mapping, not a dict: restated parses it in full
        raw["metadata"] = MappingProxyType(raw["metadata"])
    claim = ResourceClaim(raw)
    for allocation, reserved, finalizer in [(_ALLOCATION, reserved_for_entries(claim), True),
                                            (_ALLOCATION, [{"resource": "pods", "name": "q", "uid": "u2"}], False),
                                            (None, None, False)]:
        written = with_status(claim, allocation=allocation, reserved_for=reserved, finalizer=finalizer)
        fast, full = claim.with_own_status(written), claim.restated(written)
        assert fast.raw is written
        for slot in ("spec", "status", "request_names", "allocated", "reserved_for", "_controller", "name",
                     "namespace", "labels", "key", "uid"):
            assert getattr(fast, slot) == getattr(full, slot), slot
        assert [getattr(fast.meta, a) for a in ("name", "namespace", "uid", "labels", "annotations",
                                                 "creation_timestamp", "deletion_timestamp", "owner_references",
                                                 "generate_name", "resource_version")] == \
            [getattr(full.meta, a) for a in ("name", "namespace", "uid", "labels", "annotations",
                                             "creation_timestamp", "deletion_timestamp", "owner_references",
                                             "generate_name", "resource_version")]
        assert fast.pod_claim_name == full.pod_claim_name and fast.controlling_pod() == full.controlling_pod()
