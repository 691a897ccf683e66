"""The scheduler's device tracking (upstream's DRA manager over the claim assume
cache): which devices are taken. The claims in the scheduler's view of the store
(allocations written in status, so they survive kill -9 and a restart) plus, in memory,
allocations in flight (Reserve until PreBind wrote them) and allocations written by
PreBind that the store's watch has not delivered back yet. Two pods in flight never get
the same device: the second one's allocator sees the first one's pending allocation."""
from __future__ import annotations

import weakref
from typing import AbstractSet, Any, Callable, Iterable, Iterator, Mapping

from framework.api.dra_kinds import AllocationInFlight, ResourceClaim
from framework.dra.from_objects import allocated_devices


Held = ResourceClaim | AllocationInFlight  # what the tracker counts: a claim, or an allocation in flight
_FLIPS_KEPT = 1 << 16
_NONE: frozenset[str] = frozenset()  # an unallocated claim's devices


def _rv(raw: Mapping[str, Any]) -> int:
    rv = (raw.get("metadata") or {}).get("resourceVersion") or "0"
    try:
        return int(rv)
    except ValueError:
        return 0


class DeviceTracker:
    def __init__(self) -> None:
        self._pending: dict[str, Held] = {}  # claim uid -> its in-flight allocation (Reserve's AllocationInFlight)
        self._assumed: dict[str, ResourceClaim] = {}  # claim uid -> the claim PreBind wrote, until seen back
        # held(): per claim uid the claim object last counted and the devices it holds,
        # and per device how many counted claims hold it
        self._counted: dict[str, tuple[Held, frozenset[str]]] = {}
        self._holders: dict[str, int] = {}
        # the devices that became held or free, in order (a reader keeps its mark, an index
        # into the whole sequence; the oldest are dropped past _FLIPS_KEPT)
        self._flips: list[str] = []
        self._flips_base = 0  # the mark of _flips[0]
        self._snapshots: "weakref.WeakSet[HeldAt]" = weakref.WeakSet()  # held_at()'s not yet copied
        # held_since(): the view as last read (key -> uid, uid -> claim), the view's revision
        # then (None: read it all next time), and the uids whose in-flight or written
        # allocation changed since
        self._key_uid: dict[str, str] = {}
        self._view: dict[str, ResourceClaim] = {}
        self.revision: int | None = None
        self._touched: set[str] = set()

    def has_pending(self, uid: str) -> bool:
        return uid in self._pending

    def signal_pending(self, claim: Held) -> None:
        self._pending[claim.uid] = claim
        self._touched.add(claim.uid)

    def remove_pending(self, uid: str) -> bool:
        self._touched.add(uid)
        return self._pending.pop(uid, None) is not None

    def assume(self, written: ResourceClaim) -> None:
        """PreBind wrote `written`: it stands for the claim until the view holds that version."""
        self._assumed[written.uid] = written
        self._pending.pop(written.uid, None)
        self._touched.add(written.uid)

    def current(self, claim: ResourceClaim) -> ResourceClaim:
        """The newest the scheduler knows of `claim`: the view's, or a newer one it wrote."""
        mine = self._assumed.get(claim.uid)
        if mine is None:
            return claim
        if _rv(claim.raw) >= _rv(mine.raw):
            del self._assumed[claim.uid]  # the watch caught up
            self._touched.add(claim.uid)
            return claim
        return mine

    def allocated(self, view: Iterable[ResourceClaim]) -> frozenset[str]:
        """"<driver>/<pool>/<device>" of every device held: the view's claims (as the
        scheduler last wrote them) and the allocations in flight."""
        claims: list[Held] = []
        seen: set[str] = set()
        for claim in view:
            seen.add(claim.uid)
            claims.append(self._pending.get(claim.uid) or self.current(claim))
        claims += [c for uid, c in self._pending.items() if uid not in seen]
        for uid in [u for u in self._assumed if u not in seen]:
            del self._assumed[uid]  # the claim was in the view before PreBind wrote it: now deleted
        return allocated_devices(claims)

    def held(self, view: Iterable[ResourceClaim]) -> AbstractSet[str]:
        """What allocated(view) answers, kept between calls: only a claim whose object
        changed since the last call (a new version in the view, an allocation in flight
        or written) is read again. The answer is a live view: read it before the next call."""
        seen: set[str] = set()
        pending, assumed, counted = self._pending, self._assumed, self._counted
        for claim in view:  # the common case inline: a claim neither in flight nor written, unchanged
            uid = claim.uid
            seen.add(uid)
            effective = pending.get(uid) or (self.current(claim) if uid in assumed else claim)
            known = counted.get(uid)
            if known is None or known[0] is not effective:
                self._count(uid, effective)
        for uid in [u for u in assumed if u not in seen]:  # written, then deleted before the view had it
            del assumed[uid]
        for uid, claim in pending.items():
            if uid not in seen:
                seen.add(uid)
                self._count(uid, claim)
        if len(counted) != len(seen):  # every uid seen is counted now: the others are gone
            for uid in [u for u in counted if u not in seen]:
                self._uncount(uid)
        return self._holders.keys()

    def held_since(self, revision: int, changed: Iterable[str] | None,
                   lookup: Callable[[str], ResourceClaim | None],
                   view: Callable[[], Iterable[ResourceClaim]]) -> AbstractSet[str]:
        """What held(view()) answers, reading only the claims at the keys `changed` since
        the view's revision at the last call (now `revision`) and those whose allocation in
        flight or written changed; `changed` None (the view cannot tell): everything."""
        if changed is None or self.revision is None:
            claims = list(view())
            self._key_uid = {c.key: c.uid for c in claims}
            self._view = {c.uid: c for c in claims}
            self.revision = revision
            self._touched.clear()
            return self.held(claims)
        self.revision = revision
        touched, self._touched = self._touched, set()
        for key in changed:
            old = self._key_uid.pop(key, None)
            if old is not None:
                self._view.pop(old, None)
                touched.add(old)
            claim = lookup(key)
            if claim is not None:
                self._key_uid[key] = claim.uid
                self._view[claim.uid] = claim
                touched.add(claim.uid)
        counted = self._counted
        for uid in touched:  # as held() treats each uid
            claim = self._view.get(uid)
            if claim is not None:
                effective = self._pending.get(uid) or (self.current(claim) if uid in self._assumed else claim)
                if effective.allocated is not None or uid in counted:  # (a claim just made holds nothing:
                    self._count(uid, effective)  # left uncounted, as a count of no devices changes no holder)
            elif uid in self._pending:
                self._count(uid, self._pending[uid])
            else:
                self._assumed.pop(uid, None)  # written, then deleted before the view had it
                if uid in self._counted:
                    self._uncount(uid)
        self._touched.clear()  # current() above may have noted what it just settled
        return self._holders.keys()

    @property
    def flip_mark(self) -> int:
        """Where the flips stand now (flips_since's mark)."""
        return self._flips_base + len(self._flips)

    def flips_since(self, mark: int) -> list[str] | None:
        """The devices that became held or free since `mark` (one may appear more than
        once: read what holds now); None when those are no longer kept."""
        if mark < self._flips_base:
            return None
        return self._flips[mark - self._flips_base:]

    def held_at(self) -> "HeldAt":
        """The devices held now, as a set that stays what it is now while the tracker
        moves on (copy-on-write: copied only when read after a device flipped)."""
        snapshot = HeldAt(self, self.flip_mark)
        self._snapshots.add(snapshot)
        return snapshot

    def _flipped(self, device: str) -> None:
        self._flips.append(device)
        if len(self._flips) > _FLIPS_KEPT:
            drop = len(self._flips) // 2
            for snapshot in list(self._snapshots):  # their flips are about to go: copy them now
                if snapshot.mark < self._flips_base + drop:
                    snapshot.freeze()
            del self._flips[:drop]
            self._flips_base += drop

    def _count(self, uid: str, claim: Held) -> None:
        known = self._counted.get(uid)
        if known is not None and known[0] is claim:
            return
        devices = _NONE if claim.allocated is None else allocated_devices((claim,))
        if known is not None:
            if known[1] == devices:  # another object, the same devices (the written allocation
                # after the one in flight): nothing flips (uncounting and counting again
                # would flip each device twice, an even number: no change to any reader)
                self._counted[uid] = (claim, known[1])
                return
            if known[1]:  # (a count of no devices is replaced below: nothing to let go of)
                self._uncount(uid)
        self._counted[uid] = (claim, devices)
        for device in devices:
            held = self._holders.get(device, 0)
            self._holders[device] = held + 1
            if not held:
                self._flipped(device)

    def _uncount(self, uid: str) -> None:
        _, devices = self._counted.pop(uid)
        for device in devices:
            left = self._holders[device] - 1
            if left:
                self._holders[device] = left
            else:
                del self._holders[device]
                self._flipped(device)


class HeldAt(AbstractSet[str]):
    """DeviceTracker's held devices at one flip mark: the tracker's live set while no
    device has flipped since the mark, else a copy made once from the live set and the
    flips since (a device flipped an odd number of times was the other way then)."""

    __slots__ = ("_tracker", "mark", "_frozen", "__weakref__")
    __hash__ = object.__hash__  # by identity (the tracker keeps them in a WeakSet)

    def __init__(self, tracker: DeviceTracker, mark: int) -> None:
        self._tracker = tracker
        self.mark = mark
        self._frozen: frozenset[str] | None = None

    def __contains__(self, device: object) -> bool:
        frozen = self._frozen
        if frozen is None:
            t = self._tracker
            if t._flips_base + len(t._flips) == self.mark:
                return device in t._holders
            frozen = self.freeze()
        return device in frozen

    def _now(self) -> AbstractSet[str]:
        t = self._tracker
        if self._frozen is None and t._flips_base + len(t._flips) == self.mark:
            return t._holders.keys()
        return self.freeze()

    def members(self) -> AbstractSet[str]:
        """The devices as a plain set to ask now, before the tracker moves on (the
        tracker's live keys while nothing flipped since the mark, else the copy)."""
        return self._now()

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._now()))

    def __len__(self) -> int:
        return len(self._now())

    def freeze(self) -> frozenset[str]:
        """The set as a copy of its own from now on."""
        if self._frozen is None:
            t = self._tracker
            flips = t.flips_since(self.mark)
            assert flips is not None, "the tracker copies a snapshot before dropping its flips"
            toggled: set[str] = set()
            for device in flips:
                toggled ^= {device}
            live = t._holders
            self._frozen = frozenset([d for d in live if d not in toggled] + [d for d in toggled if d not in live])
            t._snapshots.discard(self)
        return self._frozen
