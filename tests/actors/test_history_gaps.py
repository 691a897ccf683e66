"""WatchHistory when resourceVersions skip numbers (etcd: one revision per
transaction shared by its writes, and revisions spent on other keys)."""
from __future__ import annotations

from actors.store.history import PastEvent, WatchHistory


def _ev(name: str, rv: int) -> PastEvent:
    raw = {"kind": "Node", "metadata": {"name": name, "resourceVersion": str(rv)}}
    return PastEvent("ADDED", "Node", name, raw, None, rv)


def test_events_after_a_resource_version_are_found_when_versions_skip_and_repeat() -> None:
    h = WatchHistory(start_rv=10)
    for name, rv in (("a", 12), ("b", 12), ("c", 15), ("d", 20)):
        h.append(_ev(name, rv), 1)
    assert [e.key for e in h.since(10)] == ["a", "b", "c", "d"]
    assert [e.key for e in h.since(12)] == ["c", "d"]
    assert [e.key for e in h.since(13)] == ["c", "d"]
    assert [e.key for e in h.since(15)] == ["d"]
    assert list(h.since(20)) == []
