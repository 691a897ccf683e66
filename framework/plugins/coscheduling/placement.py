"""Gang holds: where ksched's Coscheduling goes beyond upstream.

Upstream lets a group's members reserve one by one as soon as the summed free
capacity of the cluster covers minResources. Two groups that each fit alone then
both reserve part of the cluster and wait for each other until a timeout
(scheduler-plugins #117, #713), and a group that fits in total but not node by
node keeps reserving and being rejected (#429). Here a group is *held*
before its first member reserves anything:

- its members that still need a node must fit node by node in the snapshot's free
  capacity (a resource-only packing, so a "no" is a proof and the group is
  rejected early, saying so);
- and they must still fit once the members that other held groups are about
  to place are set aside (the holds). A group that only fails this second test
  waits, holding nothing, and is activated when the group ahead of it completes
  or is rejected.

Pure data structures and arithmetic; the plugin calls them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from framework.api.objects import Pod
from framework.api.resources import Resource
from framework.cache import NodeInfo

Vector = tuple[int, ...]

# Search effort for proving that heterogeneous members cannot be packed.
DEFAULT_SEARCH_BUDGET = 20_000
# Nodes per member (and reserved member) read before the whole cluster is.
PREFIX_NODES_PER_MEMBER = 8


def _dims(requests: Sequence[Resource]) -> list[str]:
    scalars = sorted({name for r in requests for name in r.scalar})
    return ["cpu", "memory", "ephemeral-storage", "pods", *scalars]


def request_vector(r: Resource, dims: Sequence[str]) -> Vector:
    return tuple(1 if d == "pods" else r.get(d) for d in dims)


def free_vectors(nodes: Sequence[NodeInfo], dims: Sequence[str],
                 removable: Callable[[Pod], bool] | None = None) -> list[list[int]]:
    """Free amount per node and dimension (allocatable - requested; pod slots).
    Pods for which `removable` is true (those preemption could evict) count as free."""
    out = []
    for info in nodes:
        if info.node is None:
            continue
        alloc, req, count = info.allocatable, info.requested, len(info.pods)
        if removable is not None:
            gone = [pi.pod for pi in info.pods if removable(pi.pod)]
            if gone:
                req = req.clone()
                for p in gone:
                    req.sub(p.resource)
                count -= len(gone)
        out.append([alloc.allowed_pod_number - count if d == "pods" else alloc.get(d) - req.get(d) for d in dims])
    return out


def _fits(req: Vector, free: list[int]) -> bool:
    # As NodeResourcesFit: a dimension the pod does not request never blocks it.
    return all(r <= f for r, f in zip(req, free) if r > 0)


def _take(req: Vector, free: list[int]) -> None:
    for i, r in enumerate(req):
        free[i] -= r


def _give(req: Vector, free: list[int]) -> None:
    for i, r in enumerate(req):
        free[i] += r


def count_identical(req: Vector, frees: list[list[int]]) -> int:
    """How many pods of request `req` fit node by node (exact)."""
    total = 0
    for free in frees:
        n = min((f // r for r, f in zip(req, free) if r > 0), default=0)
        total += max(n, 0)
    return total


def first_fit_decreasing(reqs: list[Vector], frees: list[list[int]]) -> int:
    """Place the largest first on the first node that holds it; the number placed.
    Mutates `frees`."""
    placed = 0
    for req in sorted(reqs, reverse=True):
        for free in frees:
            if _fits(req, free):
                _take(req, free)
                placed += 1
                break
    return placed


def _search(reqs: list[Vector], frees: list[list[int]], budget: list[int]) -> bool | None:
    """Exhaustive placement with symmetry pruning; None when the budget runs out."""
    if not reqs:
        return True
    budget[0] -= 1
    if budget[0] < 0:
        return None
    req, rest = reqs[0], reqs[1:]
    seen: set[tuple[int, ...]] = set()
    unknown = False
    for free in frees:
        key = tuple(free)
        if key in seen or not _fits(req, free):
            continue
        seen.add(key)
        _take(req, free)
        r = _search(rest, frees, budget)
        _give(req, free)
        if r:
            return True
        if r is None:
            unknown = True
    return None if unknown else False


@dataclass(frozen=True, slots=True)
class PlacementCheck:
    fits: bool | None  # None: could not decide (never a reason to reject)
    placeable: int | None  # exact count of members that fit, when members are identical
    summed_fit: bool  # whether the summed free capacity covers the members


def check_placement(requests: Sequence[Resource], needed: int, nodes: Sequence[NodeInfo],
                    reserved: Sequence[Resource] = (), budget: int = DEFAULT_SEARCH_BUDGET,
                    removable: Callable[[Pod], bool] | None = None) -> PlacementCheck:
    """Whether `needed` of `requests` fit node by node on `nodes`, after first
    setting aside `reserved` (first fit decreasing, as far as they fit), counting
    the pods `removable` picks (preemption victims) as gone.

    A "yes" found on a prefix of `nodes` holds for all of them (first fit leaves
    the prefix as it would with the whole list), so the nodes are read past the
    prefix only when the prefix says no: a group that fits costs O(group), not
    O(cluster). On that "yes", `placeable` is None and `summed_fit` True."""
    if needed <= 0:
        return PlacementCheck(True, None, True)
    prefix = PREFIX_NODES_PER_MEMBER * (needed + len(reserved))
    if len(nodes) > prefix and _fits_on(requests, needed, nodes[:prefix], reserved, removable):
        return PlacementCheck(True, None, True)
    return _check_all(requests, needed, nodes, reserved, budget, removable)


def _fits_on(requests: Sequence[Resource], needed: int, nodes: Sequence[NodeInfo],
             reserved: Sequence[Resource], removable: Callable[[Pod], bool] | None) -> bool:
    """First fit of the `needed` smallest members on `nodes` after `reserved`."""
    dims = _dims([*requests, *reserved])
    frees = free_vectors(nodes, dims, removable)
    if reserved:
        first_fit_decreasing([request_vector(r, dims) for r in reserved], frees)
    smallest = sorted(request_vector(r, dims) for r in requests)[:needed]
    return len(smallest) >= needed and first_fit_decreasing(smallest, frees) >= needed


def _check_all(requests: Sequence[Resource], needed: int, nodes: Sequence[NodeInfo],
               reserved: Sequence[Resource], budget: int,
               removable: Callable[[Pod], bool] | None) -> PlacementCheck:
    dims = _dims([*requests, *reserved])
    frees = free_vectors(nodes, dims, removable)
    if reserved:
        first_fit_decreasing([request_vector(r, dims) for r in reserved], frees)
    vecs = [request_vector(r, dims) for r in requests]
    summed = [sum(col) for col in zip(*frees)] if frees else [0] * len(dims)
    smallest = sorted(vecs)[:needed]
    summed_fit = all(sum(v[i] for v in smallest) <= max(summed[i], 0) for i in range(len(dims)) if any(v[i] for v in smallest))
    if len(set(vecs)) == 1:
        n = count_identical(vecs[0], frees)
        return PlacementCheck(n >= needed, n, summed_fit)
    # Any `needed` members together ask, per resource, at least the sum of the
    # `needed` smallest asks; more than the summed free room can never fit.
    for i in range(len(dims)):
        if sum(sorted(v[i] for v in vecs)[:needed]) > max(summed[i], 0):
            return PlacementCheck(False, None, False)
    if first_fit_decreasing(smallest, [list(f) for f in frees]) >= needed:
        return PlacementCheck(True, None, summed_fit)
    if len(vecs) != needed:
        return PlacementCheck(None, None, summed_fit)
    return PlacementCheck(_search(sorted(vecs, reverse=True), [list(f) for f in frees], [budget]), None, summed_fit)


@dataclass(slots=True)
class GroupHold:
    expires: float
    min_member: int
    requests: list[Resource]  # members still to be placed when held, largest first
    priority: int = 0
    blocked: set[str] = field(default_factory=set)  # groups waiting for this one


class GroupHolds:
    """Admitted groups and the members they are about to place. One owner (the
    plugin's PodGroupManager); entries leave on quorum, rejection or expiry, and
    the groups they held back are handed back to be activated."""

    def __init__(self) -> None:
        self.entries: dict[str, GroupHold] = {}

    def is_held(self, group: str, now: float) -> bool:
        a = self.entries.get(group)
        return a is not None and now < a.expires

    def hold(self, group: str, now: float, ttl: float, min_member: int, requests: list[Resource],
              priority: int = 0) -> None:
        prev = self.entries.get(group)
        blocked = prev.blocked if prev is not None else set()
        reqs = sorted(requests, key=lambda r: (r.milli_cpu, r.memory, r.ephemeral_storage), reverse=True)
        self.entries[group] = GroupHold(now + ttl, min_member, reqs, priority, blocked)

    def extend(self, group: str, until: float) -> None:
        """Keep a hold at least until `until` (a member just started waiting)."""
        a = self.entries.get(group)
        if a is not None and a.expires < until:
            a.expires = until

    def expired(self, now: float) -> list[str]:
        return [g for g, a in self.entries.items() if now >= a.expires]

    def others(self, group: str, now: float, priority: int | None = None) -> list[tuple[str, GroupHold]]:
        """Live holds of other groups; with `priority`, only those a group
        of that priority must respect (not lower: those it may preempt)."""
        return [(g, a) for g, a in self.entries.items()
                if g != group and now < a.expires and (priority is None or a.priority >= priority)]

    def block(self, group: str, by: Sequence[str]) -> None:
        for g in by:
            a = self.entries.get(g)
            if a is not None:
                a.blocked.add(group)

    def release(self, group: str) -> set[str]:
        """Drop the group's hold; the groups it held back."""
        a = self.entries.pop(group, None)
        return set(a.blocked) if a is not None else set()
