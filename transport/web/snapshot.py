"""The page's first picture: every current object at one resourceVersion, as
"snapshot" frames of rows (columns.py) rather than one "events" item per object.

    {"type": "snapshot", "kind": K, "columns": [...], "rows": [[...], ...],
     "resourceVersion": rv, "last": bool}

Nodes go first (the map draws from them), then pods, then the other kinds, at most
SNAPSHOT_ROWS rows a frame: the stream encodes one frame, sends it and lets the
loop run before the next, so other clients are served while a page starts and
the page draws while the rest is on its way. The frames of the last snapshot are
kept (SnapshotCache) for the next page that starts at the same resourceVersion.
Pure pieces; the sending is stream.py's."""
from __future__ import annotations

import functools
import gc
import json
from contextlib import contextmanager
from typing import Any, Iterator

from transport.web.columns import frame_columns, row_of
from transport.web.feed import whole_row

SNAPSHOT_ROWS = 5_000
ORDER = ("Node", "Pod")  # first; the other kinds follow in the store's order
_dumps = functools.partial(json.dumps, default=str, separators=(",", ":"))


class Replay:
    """What the store's watch hands a new page: the objects by kind, and each
    event's type, kind and resourceVersion in parallel lists rather than a tuple
    per event (at 55,000 objects, 55,000 long-lived tuples were enough to set off a
    full collection of the daemon's heap, about a second, while the page waited)."""

    __slots__ = ("by_kind", "types", "kinds", "versions")

    def __init__(self) -> None:
        self.by_kind: dict[str, list[Any]] = {k: [] for k in ORDER}
        self.types: list[str] = []
        self.kinds: list[str] = []
        self.versions: list[int] = []

    def add(self, event_type: str, kind: str, obj: Any, rv: int) -> None:
        objs = self.by_kind.get(kind)
        if objs is None:
            objs = self.by_kind[kind] = []
        objs.append(obj)
        self.types.append(event_type)
        self.kinds.append(kind)
        self.versions.append(rv)

    def after(self, rv: int) -> list[tuple[str, str, Any, int]]:
        """Take out the events after `rv` (type, kind, object, resourceVersion), oldest
        first: what the store committed after the snapshot it replayed, which came last."""
        later = []
        while self.versions and self.versions[-1] > rv:
            kind = self.kinds.pop()
            later.append((self.types.pop(), kind, self.by_kind[kind].pop(), self.versions.pop()))
        later.reverse()
        return later


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Build one frame without the cyclic collector: every container a frame makes
    is freed once it is encoded, so none is left for the collector, and a
    collection set off half-way would walk the whole store's objects for nothing."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def snapshot_frames(by_kind: dict[str, list[Any]], rv: int, rows: int | None = None) -> Iterator[tuple[str, bool]]:
    """The frames of the objects (parsed, by kind, all at `rv`; ORDER's kinds first),
    each encoded when the caller asks for it, with whether it is the last. There is
    always at least one frame, and the last says so: the page takes `rv` as its own
    only then."""
    rows = rows or SNAPSHOT_ROWS
    slices = [(kind, objs[i:i + rows]) for kind, objs in by_kind.items() for i in range(0, len(objs), rows)]
    if not slices:
        slices = [("Node", [])]
    for n, (kind, chunk) in enumerate(slices):
        last = n == len(slices) - 1
        with _collector_paused():
            frame = _dumps({"type": "snapshot", "kind": kind, "columns": frame_columns(kind),
                            "rows": [row_of(kind, obj, whole_row) for obj in chunk],
                            "resourceVersion": rv, "last": last})
        yield frame, last


class SnapshotCache:
    """The encoded frames of the newest snapshot, by resourceVersion: a second page
    (or a reload) at the same resourceVersion is sent them as they are. `encoded`
    counts the snapshots encoded in full."""

    def __init__(self) -> None:
        self._rv = -1
        self._frames: list[str] = []
        self.encoded = 0

    def get(self, rv: int) -> list[str] | None:
        return self._frames if rv == self._rv else None

    def put(self, rv: int, frames: list[str]) -> None:
        self.encoded += 1
        if rv >= self._rv:
            self._rv, self._frames = rv, frames
