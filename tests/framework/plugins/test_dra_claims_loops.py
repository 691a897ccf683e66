"""claims.with_status and reserved_for_entries (loops) read as the comprehensions they
replaced: hypothesis over a claim's status and what is written into it."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings, strategies as st

from framework.api.dra_kinds import ResourceClaim
from framework.plugins.dynamicresources.claims import FINALIZER, reserved_for_entries, with_status
from tests import dra_manifests as m

_REF = st.one_of(st.just("x"), st.none(), st.fixed_dictionaries({}, optional={
    k: st.sampled_from(["pods", "p", "u"]) for k in ("resource", "name", "uid")}))
_STATUS = st.fixed_dictionaries({}, optional={
    "allocation": st.just(m.allocation()), "reservedFor": st.lists(_REF, max_size=3),
    "devices": st.just([{"driver": "d", "pool": "p", "device": "x"}]), "other": st.just({"a": 1})})


def _by_comprehensions(claim: ResourceClaim, allocation: Any, reserved_for: Any, finalizer: bool) -> dict[str, Any]:
    raw = dict(claim.raw)
    meta = raw.get("metadata") or {}
    finalizers = list(meta.get("finalizers") or [])
    if finalizer and FINALIZER not in finalizers:
        meta = {**meta, "finalizers": finalizers + [FINALIZER]}
    dropped = ("allocation", "reservedFor", "devices") if allocation is None else ("allocation", "reservedFor")
    status = {k: v for k, v in (raw.get("status") or {}).items() if k not in dropped}
    if allocation is not None:
        status["allocation"] = dict(allocation)
    if reserved_for:
        status["reservedFor"] = reserved_for
    return {**raw, "metadata": meta, "status": status}


@settings(max_examples=300, deadline=None)
@given(status=_STATUS, allocate=st.booleans(), finalizer=st.booleans(), extra=st.booleans())
def test_with_status_and_reserved_for_entries_are_the_comprehensions(status: dict[str, Any], allocate: bool,
                                                                      finalizer: bool, extra: bool) -> None:
    claim = ResourceClaim({**m.resource_claim(), "status": status})
    want_entries = [dict(r) for r in claim.status.get("reservedFor") or [] if isinstance(r, Mapping)]
    assert reserved_for_entries(claim) == want_entries
    reserved = want_entries + ([{"resource": "pods", "name": "q", "uid": "q"}] if extra else [])
    allocation = m.allocation(node="node-2") if allocate else None
    got = with_status(claim, allocation=allocation, reserved_for=reserved, finalizer=finalizer)
    want = _by_comprehensions(claim, allocation, reserved, finalizer)
    assert json.dumps(got) == json.dumps(want)  # byte for byte: the keys' order too
