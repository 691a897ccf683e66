"""Reserve hands the device tracker an AllocationInFlight instead of the claim object
with the allocation (claims.with_status, parsed by with_own_status): over random claims
(reserved or not, with a finalizer or not) and random allocations (results of every
shape, adminAccess true, 1, false or absent, devices or results missing or not a list),
what the tracker reads of it (uid, `allocated`, allocated_devices) is what it read of
that claim, and a tracker fed one holds the same devices after every step as a tracker
fed the other."""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from framework.api.dra_kinds import AllocationInFlight, ResourceClaim, allocation_refs
from framework.dra.from_objects import allocated_devices
from framework.plugins.dynamicresources.claims import FINALIZER, reserved_for_entries, with_status
from framework.plugins.dynamicresources.tracker import DeviceTracker
from tests import dra_manifests as m

result_st = st.one_of(
    st.fixed_dictionaries({"request": st.just("gpu"), "driver": st.sampled_from(["gpu.example.com", "other"]),
                           "pool": st.sampled_from(["node-1", "node-2"]),
                           "device": st.sampled_from(["gpu-0", "gpu-1", "gpu-2"])},
                          optional={"adminAccess": st.sampled_from([True, 1, False, None, "true"])}),
    st.just("not a result"), st.just({}),
)
allocation_st = st.one_of(
    st.builds(lambda rs, node: {"devices": {"results": rs}, **({"nodeSelector": m.allocation(node)["nodeSelector"]}
                                                               if node else {})},
              st.lists(result_st, max_size=4), st.sampled_from([None, "node-1"])),
    st.just({}), st.just({"devices": {}}), st.just({"devices": {"results": "x"}}), st.just({"devices": None}),
)
claim_st = st.builds(
    lambda name, reserved, fin, uid: _claim(name, reserved, fin, uid),
    st.sampled_from(["a", "b", "c"]), st.booleans(), st.booleans(), st.integers(0, 3))


def _claim(name: str, reserved: bool, finalizer: bool, uid: int) -> ResourceClaim:
    raw: dict[str, Any] = m.resource_claim(name, count=1)
    raw["metadata"]["uid"] = f"{name}-{uid}"
    if finalizer:
        raw["metadata"]["finalizers"] = [FINALIZER]
    if reserved:
        raw["status"] = {"reservedFor": [{"resource": "pods", "name": "p", "uid": "p-uid"}]}
    return ResourceClaim(raw)


def _as_before(claim: ResourceClaim, allocation: dict[str, Any]) -> ResourceClaim:
    """What Reserve handed the tracker before (the code AllocationInFlight replaces)."""
    return claim.with_own_status(with_status(claim, allocation=allocation, reserved_for=reserved_for_entries(claim),
                                             finalizer=True))


@settings(max_examples=400, deadline=None)
@given(claim_st, allocation_st)
def test_the_tracker_reads_the_same_of_an_allocation_in_flight_as_of_the_claim(claim: ResourceClaim,
                                                                               allocation: dict[str, Any]) -> None:
    before, now = _as_before(claim, allocation), AllocationInFlight(claim.uid, allocation)
    assert now.uid == before.uid
    assert now.allocated == before.allocated
    assert (now.allocated is None) == (before.allocated is None)
    assert allocated_devices((now,)) == allocated_devices((before,))
    assert allocation_refs(before.status.get("allocation")) == before.allocated


ops_st = st.lists(st.one_of(
    st.tuples(st.just("reserve"), claim_st, allocation_st),
    st.tuples(st.just("unreserve"), st.sampled_from(["a-0", "b-1", "c-2", "a-3"])),
    st.tuples(st.just("view"), st.lists(claim_st, max_size=3)),
), min_size=1, max_size=20)


@settings(max_examples=200, deadline=None)
@given(ops_st)
def test_a_tracker_fed_allocations_in_flight_holds_what_one_fed_claims_held(ops: list) -> None:
    fed_claims, fed_in_flight = DeviceTracker(), DeviceTracker()
    view: list[ResourceClaim] = []
    for op in ops:
        match op:
            case ("reserve", claim, allocation):
                fed_claims.signal_pending(_as_before(claim, allocation))
                fed_in_flight.signal_pending(AllocationInFlight(claim.uid, allocation))
            case ("unreserve", uid):
                assert fed_claims.remove_pending(uid) == fed_in_flight.remove_pending(uid)
            case ("view", claims):
                view = list({c.uid: c for c in claims}.values())
        assert set(fed_claims.held(view)) == set(fed_in_flight.held(view))
        assert fed_claims.allocated(view) == fed_in_flight.allocated(view)
        assert fed_claims.flip_mark == fed_in_flight.flip_mark


def test_a_claim_just_made_is_not_counted_until_it_holds_a_device() -> None:
    """held_since leaves a claim without an allocation uncounted (it holds nothing), and
    counts it, flipping its devices once, when its allocation is in flight."""
    t = DeviceTracker()
    made = _claim("a", False, False, 0)
    view = {made.key: made}
    t.held_since(1, None, view.get, lambda: list(view.values()))
    t.held_since(2, [made.key], view.get, lambda: list(view.values()))
    assert made.uid in t._counted  # (the whole view's read counts every claim, as held() does)
    fresh = _claim("b", False, False, 1)
    view[fresh.key] = fresh
    t.held_since(3, [fresh.key], view.get, lambda: list(view.values()))
    assert fresh.uid not in t._counted and set(t.held_at()) == set()
    mark = t.flip_mark
    t.signal_pending(AllocationInFlight(fresh.uid, m.allocation(device="gpu-1")))
    assert set(t.held_since(4, [], view.get, lambda: list(view.values()))) == {"gpu.example.com/node-1/gpu-1"}
    assert t.flips_since(mark) == ["gpu.example.com/node-1/gpu-1"]
