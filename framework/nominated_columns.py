"""What pods nominated to nodes add to each node, as columns over the snapshot's rows.

RunFilterPluginsWithNominatedPods (upstream's addGENominatedPods) runs a node's
filters with the pods nominated to it of at least the incoming pod's priority
(the pod itself excluded) added. Where only NodeResourcesFit reads the pods
(Framework.pods_read_only_by_fit), "added" means: their count and their summed
cpu, memory and ephemeral-storage requests join the node's. `NominatedColumns`
keeps every nominated pod as one entry (row, priority, requests) and gives, for
one incoming pod, those sums per snapshot row (`NominatedAdds`) with one numpy
pass instead of a Python loop over the nominated nodes.

Entries are rebuilt only when the nominations move (the owner's nominator version,
`Handle.nominations_version`) or the snapshot's rows do (its change epoch); a
handle that cannot say its version gets them rebuilt on every ask. Pure: no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Literal

import numpy as np

from framework.api.objects import Pod
from framework.cache import Snapshot

# Sums stay below this (NodeTable's own limit is 2**55 per value): entries whose
# largest value times their number could pass it are not summed in columns.
_SUM_LIMIT = 1 << 62
# Integers below this are exact in float64, and so are sums staying below it.
_EXACT_IN_FLOAT = 1 << 53
_DEAD = np.iinfo(np.int64).min
_KEPT_PRIORITIES = 8  # incoming priorities whose sums are kept between asks  # a dead slot's priority: below every pod's, so it never joins


@dataclass(frozen=True, slots=True)
class NominatedAdds:
    """Per snapshot row, what the nominated pods joining an incoming pod's filters
    add: `count` pods requesting `cpu`, `mem`, `eph` in sum; `scalar` where one of
    them requests an extended resource (its amounts are not in the columns)."""

    count: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray
    eph: np.ndarray
    scalar: np.ndarray


class NominatedColumns:
    """Every nominated pod as a column entry (a slot); `adds(handle, snapshot, pod)`
    sums the entries that join `pod`'s filters, per snapshot row. Between asks only
    the nodes whose nominations changed are read again (the owner's
    `nominated_nodes_changed_since`); their old slots are marked dead and new ones
    appended, and the arrays are compacted when dead slots outnumber live ones."""

    def __init__(self) -> None:
        self._version: int | None = None
        self._rows_key: Hashable | None = None
        self._size = 0
        self._dead = 0
        self._row = np.zeros(0, dtype=np.intp)
        self._priority = np.zeros(0, dtype=np.int64)
        self._amounts = np.zeros((3, 0), dtype=np.int64)
        self._scalar = np.zeros(0, dtype=np.bool_)
        self._slots: dict[str, list[int]] = {}  # node name -> its live slots
        self._uid_slots: dict[str, list[int]] = {}
        self._slot_uid: list[str] = []
        self._largest = 0  # the largest amount of an entry since the last full build
        self._rows = 0
        self._last: tuple[Hashable, NominatedAdds | None | Literal[False]] | None = None
        # priority -> the sums of every live entry of at least it (valid until the nominations move)
        self._kept: dict[int, NominatedAdds] = {}

    def adds(self, handle: Any, snapshot: Snapshot, pod: Pod) -> NominatedAdds | None | Literal[False]:
        """The sums for `pod` per row of `snapshot.node_info_list`; None when no
        nominated pod joins its filters anywhere; False when the sums cannot be
        kept in columns (the caller then adds the pods node by node)."""
        read_version = getattr(handle, "nominations_version", None)
        version = read_version() if read_version is not None else None
        rows_key = (id(snapshot), snapshot.change_epoch, len(snapshot.index))
        if version is None or rows_key != self._rows_key or self._version is None:
            self._build(handle, snapshot)
        elif version != self._version:
            since = getattr(handle, "nominated_nodes_changed_since", None)
            changed = since(self._version) if since is not None else None
            if changed is None or self._dead > 2 * (self._size - self._dead) + 64:
                self._build(handle, snapshot)
            else:
                names = set(changed)
                for name in names:
                    self._read_node(handle, snapshot.index, name)
                self._patch(snapshot.index, names)
        else:
            query = (pod.priority, pod.uid)
            if self._last is not None and self._last[0] == query:
                return self._last[1]
        self._version, self._rows_key = version, rows_key
        live = self._size - self._dead
        got = self._sum(pod) if self._largest * max(live, 1) < _SUM_LIMIT else False
        self._last = None if version is None else ((pod.priority, pod.uid), got)
        return got

    def _build(self, handle: Any, snapshot: Snapshot) -> None:
        self._size = self._dead = self._largest = 0
        self._kept = {}
        self._slots, self._uid_slots, self._slot_uid = {}, {}, []
        self._rows = len(snapshot.index)
        names = handle.nodes_with_nominated_pods()
        if names is None:
            names = [ni.name for ni in snapshot.node_info_list]
        for name in names:
            self._read_node(handle, snapshot.index, name)

    def _read_node(self, handle: Any, index: dict[str, int], name: str) -> None:
        """The node's slots replaced by its nominated pods as the handle has them now."""
        for slot in self._slots.pop(name, ()):
            self._priority[slot] = _DEAD
            uid = self._slot_uid[slot]
            held = self._uid_slots[uid]
            held.remove(slot)
            if not held:
                del self._uid_slots[uid]
            self._dead += 1
        r = index.get(name)
        if r is None:
            return
        pods = handle.nominated_pods_for_node(name)
        if not pods:
            return
        self._reserve(self._size + len(pods))
        slots = self._slots[name] = []
        for pi in pods:
            p = pi.pod
            res = p.resource
            amounts = (res.milli_cpu, res.memory, res.ephemeral_storage)
            slot = self._size
            self._size += 1
            self._largest = max(self._largest, *amounts) if min(amounts) >= 0 else _SUM_LIMIT
            if self._largest >= _SUM_LIMIT:
                amounts = (0, 0, 0)  # not summable in columns: adds() answers False
            self._row[slot] = r
            self._priority[slot] = p.priority
            self._amounts[:, slot] = amounts
            self._scalar[slot] = bool(res.scalar)
            self._slot_uid.append(p.uid)
            self._uid_slots.setdefault(p.uid, []).append(slot)
            slots.append(slot)

    def _reserve(self, size: int) -> None:
        """Room for `size` slots; live slots keep their numbers."""
        if size <= len(self._priority):
            return
        cap = max(size, 2 * len(self._priority), 64)
        n = self._size
        row, priority = np.zeros(cap, dtype=np.intp), np.full(cap, _DEAD, dtype=np.int64)
        amounts, scalar = np.zeros((3, cap), dtype=np.int64), np.zeros(cap, dtype=np.bool_)
        row[:n], priority[:n], amounts[:, :n], scalar[:n] = (self._row[:n], self._priority[:n], self._amounts[:, :n],
                                                            self._scalar[:n])
        self._row, self._priority, self._amounts, self._scalar = row, priority, amounts, scalar

    def _sum(self, pod: Pod) -> NominatedAdds | None:
        """The sums of the entries of at least the pod's priority, the pod's own
        (it never counts against itself) taken out."""
        got = self._at_least(pod.priority)
        own = [slot for slot in self._uid_slots.get(pod.uid, ()) if self._priority[slot] >= pod.priority]
        if own:
            got = self._without(got, own, pod.priority)
        return got if got.count.any() else None

    def _at_least(self, priority: int) -> NominatedAdds:
        """The sums of every live entry of at least `priority`, kept per priority
        (patched per changed node, `_patch`) until the next full build."""
        got = self._kept.get(priority)
        if got is None:
            if len(self._kept) >= _KEPT_PRIORITIES:
                self._kept.clear()
            got = self._kept[priority] = self._sum_where(self._priority[:self._size] >= priority)
        return got

    def _sum_where(self, joins: np.ndarray) -> NominatedAdds:
        n = self._size
        rows = self._row[:n][joins]
        count = np.bincount(rows, minlength=self._rows).astype(np.int64)
        amounts = self._amounts[:, :n][:, joins]
        if self._largest * len(rows) < _EXACT_IN_FLOAT:  # bincount sums in float64: exact below 2**53
            sums = [np.bincount(rows, weights=amounts[k], minlength=self._rows).astype(np.int64) for k in range(3)]
        else:
            sums = [np.zeros(self._rows, dtype=np.int64) for _ in range(3)]
            for k in range(3):
                np.add.at(sums[k], rows, amounts[k])
        scalar = np.zeros(self._rows, dtype=np.bool_)
        scalar[rows[self._scalar[:n][joins]]] = True
        return NominatedAdds(count, sums[0], sums[1], sums[2], scalar)

    def _patch(self, index: dict[str, int], names: set[str]) -> None:
        """The kept sums' rows of these nodes taken again from their live slots."""
        for name in names:
            r = index.get(name)
            if r is None:
                continue
            slots = self._slots.get(name, ())
            for priority, got in self._kept.items():
                self._set_row(got, r, [slot for slot in slots if self._priority[slot] >= priority])

    def _set_row(self, got: NominatedAdds, r: int, slots: list[int]) -> None:
        got.count[r] = len(slots)
        for k, column in enumerate((got.cpu, got.mem, got.eph)):
            column[r] = sum(int(self._amounts[k, slot]) for slot in slots)
        got.scalar[r] = any(self._scalar[slot] for slot in slots)

    def _without(self, got: NominatedAdds, own: list[int], priority: int) -> NominatedAdds:
        """`got` (not changed) with the slots `own` left out of their rows."""
        out = NominatedAdds(got.count.copy(), got.cpu.copy(), got.mem.copy(), got.eph.copy(), got.scalar.copy())
        mine = set(own)
        for r in {int(self._row[slot]) for slot in own}:
            on_row = np.flatnonzero(self._row[:self._size] == r).tolist()
            self._set_row(out, r, [slot for slot in on_row if slot not in mine and self._priority[slot] >= priority])
        return out
