"""DeviceTracker.held_at: the held devices at one moment, shared with the tracker until
a device flips (copy-on-write), then still the devices held at that moment, whatever the
tracker counted since, also once the flips it was read from are dropped (random claims
signalled in flight and withdrawn between snapshots)."""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import framework.plugins.dynamicresources.tracker as tracker_module
from framework.api.dra_kinds import ResourceClaim
from framework.plugins.dynamicresources.tracker import DeviceTracker
from tests import dra_manifests as m

DEVICES = ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]


def _claim(name: str, device: str) -> ResourceClaim:
    raw: dict[str, Any] = m.resource_claim(name, count=1)
    raw["metadata"]["uid"] = name
    raw["status"] = {"allocation": m.allocation(device=device)}
    return ResourceClaim(raw)


ops_st = st.lists(st.one_of(
    st.tuples(st.just("pending"), st.sampled_from("abc"), st.sampled_from(DEVICES)),
    st.tuples(st.just("unpend"), st.sampled_from("abc")),
    st.tuples(st.just("snapshot"),),
), min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(ops=ops_st, kept=st.sampled_from([2, 4, 1 << 16]))
def test_a_snapshot_keeps_the_devices_held_when_it_was_taken(ops: list[tuple[Any, ...]], kept: int) -> None:
    old, tracker_module._FLIPS_KEPT = tracker_module._FLIPS_KEPT, kept
    try:
        t = DeviceTracker()
        taken: list[tuple[tracker_module.HeldAt, frozenset[str]]] = []
        for op in ops:
            if op[0] == "pending":
                t.signal_pending(_claim(op[1], op[2]))
            elif op[0] == "unpend":
                t.remove_pending(op[1])
            else:
                now = frozenset(t.held([]))
                snapshot = t.held_at()
                taken.append((snapshot, now))
                assert snapshot._frozen is None  # shared, not copied, when taken
            t.held([])
            for snapshot, then in taken:
                assert set(snapshot) == then and len(snapshot) == len(then)
                assert all((d in snapshot) == (d in then) for d in DEVICES)
    finally:
        tracker_module._FLIPS_KEPT = old
