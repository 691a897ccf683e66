"""DeviceTracker.held_since (only the claims the view's journal says changed are read
again) answers what allocated() answers over the whole view: random claims put,
allocated, re-versioned and deleted in an InMemoryObjects view, allocations signalled
in flight, withdrawn and written (assumed) between the calls, and the journal trimmed
under a long run of deletes; the devices that became held or free between two reads
are among the tracker's flips (FreeCounts moves its counts by them)."""
from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from framework.api.dra_kinds import ResourceClaim
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.plugins.dynamicresources.tracker import DeviceTracker
from tests import dra_manifests as m

NAMES = ["a", "b", "c", "d"]
DEVICES = ["gpu-0", "gpu-1", "gpu-2"]


def _claim(name: str, uid: int, device: str | None, rv: int) -> ResourceClaim:
    raw: dict[str, Any] = m.resource_claim(name, count=1)
    raw["metadata"].update(uid=f"{name}-{uid}", resourceVersion=str(rv))
    if device is not None:
        raw["status"] = {"allocation": m.allocation(device=device)}
    return ResourceClaim(raw)


ops_st = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from(NAMES), st.integers(0, 1), st.sampled_from([None, *DEVICES])),
    st.tuples(st.just("delete"), st.sampled_from(NAMES)),
    st.tuples(st.just("pending"), st.sampled_from(NAMES), st.sampled_from(DEVICES)),
    st.tuples(st.just("unpend"), st.sampled_from(NAMES)),
    st.tuples(st.just("assume"), st.sampled_from(NAMES), st.sampled_from(DEVICES)),
    st.tuples(st.just("held"),),
), min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(ops_st)
@example([("put", "a", 0, "gpu-0"), ("held",), ("assume", "a", "gpu-2"), ("held",)])
@example([("put", "a", 0, None), ("held",), ("pending", "a", "gpu-1"), ("held",), ("unpend", "a"), ("held",)])
def test_held_since_answers_what_allocated_answers_over_the_whole_view(ops: list) -> None:
    objects = InMemoryObjects()
    handle = FrameworkHandle(objects=objects)
    incremental, reference = DeviceTracker(), DeviceTracker()
    before: set[str] = set()
    mark = incremental.flip_mark
    for rv, op in enumerate(ops, start=1):
        match op:
            case ("put", name, uid, device):
                objects.put(_claim(name, uid, device, rv))
            case ("delete", name):
                objects.delete("ResourceClaim", f"default/{name}")
            case ("pending", name, device):
                claim = objects.get("ResourceClaim", "default", name)
                if claim is not None:
                    for t in (incremental, reference):
                        t.signal_pending(_claim(name, int(claim.uid[-1]), device, int(claim.meta.resource_version)))
            case ("unpend", name):
                claim = objects.get("ResourceClaim", "default", name)
                if claim is not None:
                    for t in (incremental, reference):
                        t.remove_pending(claim.uid)
            case ("assume", name, device):  # PreBind wrote a newer version the view has not seen yet
                claim = objects.get("ResourceClaim", "default", name)
                if claim is not None:
                    for t in (incremental, reference):
                        t.assume(_claim(name, int(claim.uid[-1]), device, 1000 + rv))
            case ("held",):
                revision, changed = handle.changed_objects("ResourceClaim", incremental.revision)
                got = set(incremental.held_since(revision, changed, lambda key: objects.get(
                    "ResourceClaim", *key.split("/", 1)), lambda: objects.list("ResourceClaim")))
                assert got == set(reference.allocated(objects.list("ResourceClaim")))
                # every device that became held or free since the last read is among the flips
                assert got ^ before <= set(incremental.flips_since(mark) or [])
                before, mark = got, incremental.flip_mark


def test_a_journal_trimmed_past_the_last_read_makes_the_tracker_read_the_whole_view() -> None:
    objects = InMemoryObjects()
    handle = FrameworkHandle(objects=objects)
    objects.put(_claim("kept", 0, "gpu-0", 1))
    tracker = DeviceTracker()
    revision, changed = handle.changed_objects("ResourceClaim", tracker.revision)
    assert changed is None  # the first read
    tracker.held_since(revision, changed, lambda key: None, lambda: objects.list("ResourceClaim"))
    for i in range(3000):
        objects.put(_claim(f"gone-{i}", 0, None, 2 + i))
        objects.delete("ResourceClaim", f"default/gone-{i}")
    objects.put(_claim("late", 0, "gpu-1", 9000))
    revision, changed = handle.changed_objects("ResourceClaim", tracker.revision)
    assert changed is None
    held = tracker.held_since(revision, changed, lambda key: None, lambda: objects.list("ResourceClaim"))
    assert set(held) == {d for d in tracker.allocated(objects.list("ResourceClaim"))} and len(held) == 2
    assert objects.changed_since("ResourceClaim", revision) == []


def test_flips_older_than_the_kept_ones_are_not_answered() -> None:
    tracker = DeviceTracker()
    objects = InMemoryObjects()
    for i in range(40_000):  # each claim held then gone: two flips each
        objects.put(_claim("c", i, "gpu-0", 2 * i + 1))
        tracker.held(objects.list("ResourceClaim"))
        objects.delete("ResourceClaim", "default/c")
        tracker.held(objects.list("ResourceClaim"))
    assert tracker.flips_since(0) is None
    mark = tracker.flip_mark
    objects.put(_claim("d", 0, "gpu-1", 10**6))
    tracker.held(objects.list("ResourceClaim"))
    assert tracker.flips_since(mark) == [f"{m.DRIVER}/node-1/gpu-1"]
