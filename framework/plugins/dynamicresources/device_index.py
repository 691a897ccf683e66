"""What the DynamicResources plugin remembers about the published devices between pods,
for one set of ResourceSlices (a slice added, changed or deleted gives a new index): the
slices by node (slice_index.SlicesByNode) and, per node whose pools are its own (every
slice of them names the node), the devices that one device class's and one request's
CEL selectors select there, in the allocator's order. A device's verdict is worked out
once per selector set, not once per pod and node.

The fast Filter path (a pod with one claim to allocate, one ExactCount request) counts
these devices that no claim holds; any case it does not cover exactly (pools reached
through allNodes or node selectors, incomplete or invalid pools, a CEL error) answers
None here, and the plugin runs the structured allocator as before."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import AbstractSet, Any, Callable, Mapping, Sequence

import numpy as np

from framework.dra.cel_selector import CELCompileError, CELEvalError, compile_selector, device_from_api
from framework.dra.pools import gather_pools
from framework.dra.requests import Candidate, DeviceResult
from framework.dra.results import build_result
from framework.node_table import NodeTable
from framework.plugins.dynamicresources.slice_index import SlicesByNode
from framework.plugins.dynamicresources.tracker import HeldAt

SelectorKey = tuple[tuple[str, ...], tuple[str, ...]]  # (the class's CEL expressions, the request's)
# (the tracker's mark the held set was read at, the tracker's flips_since)
Flips = tuple[int, Callable[[int], "list[str] | None"]]


@dataclass(frozen=True, slots=True, kw_only=True)
class SingleRequest:
    """The one request of the one claim a pod still needs allocated, when the fast path applies."""
    claim_index: int
    class_name: str
    count: int
    selectors: SelectorKey


def _expressions(selectors: Sequence[Any]) -> tuple[str, ...] | None:
    out = []
    for sel in selectors:
        expression = ((sel or {}).get("cel") or {}).get("expression", "") if isinstance(sel, Mapping) else ""
        if not expression:
            return None  # the allocator reports the empty selector
        out.append(str(expression))
    return tuple(out)


def single_request(claim_index: int, claim: Mapping[str, Any],
                   classes: Mapping[str, Mapping[str, Any]]) -> SingleRequest | None:
    """The claim's request when the claim is one plain ExactCount request (no
    firstAvailable, admin access or constraints) of an existing class; else None."""
    devices = (claim.get("spec") or {}).get("devices") or {}
    requests = devices.get("requests") or []
    if len(requests) != 1 or devices.get("constraints"):
        return None
    exactly = requests[0].get("exactly")
    if not isinstance(exactly, Mapping) or exactly.get("adminAccess") is not None:
        return None
    if (exactly.get("allocationMode") or "ExactCount") != "ExactCount":
        return None
    count = int(exactly.get("count") or 0)
    cls = classes.get(exactly.get("deviceClassName") or "")
    if cls is None or not 1 <= count <= 32:
        return None
    class_exprs = _expressions((cls.get("spec") or {}).get("selectors") or [])
    request_exprs = _expressions(exactly.get("selectors") or [])
    if class_exprs is None or request_exprs is None:
        return None
    return SingleRequest(claim_index=claim_index, class_name=str(exactly["deviceClassName"]), count=count,
                         selectors=(class_exprs, request_exprs))


def _class_name(spec: Any) -> str:
    """The device class of the spec's first request's `exactly` ("" when there is none)."""
    devices = spec.get("devices") if isinstance(spec, Mapping) else None
    requests = devices.get("requests") if isinstance(devices, Mapping) else None
    first = requests[0] if isinstance(requests, list) and requests else None
    exactly = first.get("exactly") if isinstance(first, Mapping) else None
    name = exactly.get("deviceClassName") if isinstance(exactly, Mapping) else None
    return name if isinstance(name, str) else ""


def first_fit(single: SingleRequest, index: "DeviceIndex", node_name: str, claims: Sequence[Any],
              held: AbstractSet[str], classes: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """The allocation the allocator's first fit makes on the node for the one plain request,
    made directly; None: let the allocator make it (and word any error)."""
    chosen = index.first_free(node_name, single.selectors, held, single.count)
    if chosen is None:
        return None
    claim = claims[single.claim_index].raw
    name = str((((claim.get("spec") or {}).get("devices") or {}).get("requests") or [{}])[0].get("name", ""))
    results = [index.plain_result(name, c) for c in chosen]
    try:
        return [build_result(claim, results, [(name, classes.get(single.class_name), 0)])]
    except ValueError:
        return None


class DeviceIndex:
    def __init__(self, slices: Sequence[Mapping[str, Any]]) -> None:
        self.slices = tuple(slices)
        self.by_node = SlicesByNode(self.slices)
        self._selected: dict[tuple[str, SelectorKey], tuple[str, ...] | None] = {}
        self._candidates: dict[tuple[str, SelectorKey], tuple[Candidate, ...]] = {}
        self._free: dict[SelectorKey, FreeCounts] = {}
        # a selector set's verdict per device shape (what the selector reads of a device:
        # its driver, attributes, capacity and allowMultipleAllocations), so nodes whose
        # devices are alike evaluate CEL once for all of them; None: evaluation failed
        self._verdicts: dict[tuple[SelectorKey, str, str], bool | None] = {}
        # single_request's answers per (claim index, claim spec object): (the spec, its class's
        # name, the class object it read, the answer); claims made from one template share a spec
        self._singles: dict[tuple[int, int], tuple[Any, str, Any, SingleRequest | None]] = {}
        # plain_result's: (request name, id(candidate)) -> (the candidate, its result)
        self._results: dict[tuple[str, int], tuple[Candidate, DeviceResult]] = {}

    def single_request(self, claim_index: int, claim: Mapping[str, Any],
                       classes: Mapping[str, Mapping[str, Any]]) -> SingleRequest | None:
        """`single_request(claim_index, claim, classes)`, read again only when the claim's spec
        or its class is another object (stored objects are never changed in place)."""
        spec = claim.get("spec")
        known = self._singles.get((claim_index, id(spec)))
        if known is not None and known[0] is spec and classes.get(known[1]) is known[2]:
            return known[3]
        found = single_request(claim_index, claim, classes)
        if len(self._singles) >= 256:
            self._singles.clear()
        name = _class_name(spec)
        self._singles[(claim_index, id(spec))] = (spec, name, classes.get(name), found)
        return found

    def plain_result(self, request: str, candidate: Candidate) -> DeviceResult:
        """The allocator's result for `candidate` taken by a plain request of that name (a
        frozen value, made once per request name and device while the index stands)."""
        known = self._results.get((request, id(candidate)))
        if known is not None and known[0] is candidate:
            return known[1]
        made = DeviceResult(request=request, base_request=request, sub_request="", candidate=candidate,
                            admin_access=False)
        if len(self._results) >= 1 << 16:
            self._results.clear()
        self._results[(request, id(candidate))] = (candidate, made)
        return made

    def free_counts(self, key: SelectorKey, held: AbstractSet[str], flips: "Flips | None" = None) -> "FreeCounts":
        """Per node, the devices the selectors select there that `held` does not hold
        (`flips`: when `held` is the tracker's at a mark, FreeCounts.move_to)."""
        counts = self._free.get(key)
        if counts is None:
            counts = self._free[key] = FreeCounts(lambda node: self.selected(node, key))
        counts.move_to(held, flips)
        return counts

    def selected(self, node_name: str, key: SelectorKey) -> tuple[str, ...] | None:
        """"<driver>/<pool>/<device>" of the node's devices the selectors select, in the
        allocator's order; None when the node's devices are not all its own or a pool
        is incomplete or invalid, or a selector fails (the allocator decides then)."""
        cache_key = (node_name, key)
        if cache_key not in self._selected:
            found = self._select(node_name, key)
            self._selected[cache_key] = None if found is None else tuple(c.device_id for c in found)
            if found is not None:
                self._candidates[cache_key] = found
        return self._selected[cache_key]

    def first_free(self, node_name: str, key: SelectorKey, held: AbstractSet[str], count: int
                   ) -> list[Candidate] | None:
        """The first `count` selected devices of the node not held, in the allocator's order
        (what its first fit takes for one plain request); None when there are fewer."""
        ids = self.selected(node_name, key)  # (the candidates' device ids, made once)
        if ids is None:
            return None
        if type(held) is HeldAt:
            held = held.members()  # (a set asked in C, not HeldAt.__contains__ a device)
        chosen = []
        for c, device_id in zip(self._candidates[(node_name, key)], ids):
            if device_id not in held:
                chosen.append(c)
                if len(chosen) == count:
                    return chosen
        return None

    def _select(self, node_name: str, key: SelectorKey) -> tuple[Candidate, ...] | None:
        if self.by_node.shared:
            return None
        slices = self.by_node.for_node(node_name)
        pools = gather_pools(slices, {"metadata": {"name": node_name}}, False)
        if any(p.incomplete or p.invalid for p in pools):
            return None
        compiled = []
        try:
            for expression in key[0] + key[1]:
                compiled.append(compile_selector(expression, False))
        except CELCompileError:
            return None
        out: list[Candidate] = []
        verdicts = self._verdicts
        for pool in pools:
            for s in pool.targeting:
                for d in (s.get("spec") or {}).get("devices") or []:
                    if d.get("bindingConditions") or d.get("consumesCounters"):
                        continue  # never allocated with those gates off
                    shape = (key, pool.driver, _shape(d))
                    if shape in verdicts:
                        verdict = verdicts[shape]
                    else:
                        try:
                            device = device_from_api(pool.driver, d)
                            verdict = all(sel.matches(device) for sel in compiled)
                        except CELEvalError:
                            verdict = None
                        verdicts[shape] = verdict
                    if verdict is None:
                        return None
                    if verdict:
                        out.append(Candidate(driver=pool.driver, pool=pool.name, name=str(d.get("name", "")),
                                             device=d, slice=s))
        return tuple(out)


def _shape(device: Mapping[str, Any]) -> str:
    """What a selector can read of a device (device_from_api's inputs), as one string:
    two devices of one driver with the same shape get the same verdict."""
    return json.dumps([device.get("attributes"), device.get("capacity"),
                       bool(device.get("allowMultipleAllocations"))], sort_keys=True, default=str)


class FreeCounts:
    """For one selector set: per node, how many of its selected devices are free, carried
    from one pod's held set to the next by the devices whose holding changed (a device
    of the fast path is one node's own, so it moves one node's count), instead of
    counted again on every node for every pod."""

    def __init__(self, selected: Callable[[str], tuple[str, ...] | None]) -> None:
        self._selected = selected
        self._held: AbstractSet[str] = frozenset()
        self._free: dict[str, int | None] = {}  # node -> free selected devices (None: not the fast path's)
        self._node_of: dict[str, str] = {}  # device -> its node, for the nodes counted
        # the same counts per row of one NodeTable (-1: not the fast path's), kept in step
        self._table: NodeTable | None = None
        self._rows: np.ndarray = np.zeros(0, dtype=np.int64)
        self._row_of: dict[str, int] = {}  # node -> its row in that table
        self._mark: int | None = None  # the tracker's mark `_held` was read at (None: not the tracker's)

    def move_to(self, held: AbstractSet[str], flips: Flips | None = None) -> None:
        """The counts for `held`: moved by the devices in which it differs from the last
        set, found from the tracker's flips since the last mark when both sets are the
        tracker's (`flips`), else as the sets' symmetric difference."""
        if held is self._held:
            return
        toggled: AbstractSet[str] | None = None
        if flips is not None and self._mark is not None:
            since = flips[1](self._mark)
            if since is not None:  # each flip toggles a device: an odd count is a change
                toggled = _odd(since[:flips[0] - self._mark])
        if toggled is None:
            toggled = frozenset(self._held) ^ frozenset(held)
        self._mark = flips[0] if flips is not None else None
        free, node_of = self._free, self._node_of
        for device in toggled:
            node = node_of.get(device)
            if node is not None:
                step = -1 if device in held else 1
                free[node] += step  # type: ignore[operator]
                row = self._row_of.get(node)
                if row is not None:
                    self._rows[row] += step
        # the tracker's set at a mark does not change; any other is copied
        self._held = held if flips is not None or isinstance(held, frozenset) else frozenset(held)

    def by_row(self, table: NodeTable) -> np.ndarray:
        """of() for every row of `table` (-1 where it answers None), as one column
        (read it before the next move_to; built once per table, then moved with the counts)."""
        if table is not self._table:
            names = table.node_names()
            counts = [-1 if name is None or (c := self.of(name)) is None else c for name in names]
            self._rows = np.array(counts, dtype=np.int64)
            self._row_of = {name: i for i, name in enumerate(names) if name is not None}
            self._table = table
        return self._rows

    def of(self, node: str) -> int | None:
        """The node's free selected devices; None where the fast path does not apply."""
        if node in self._free:
            return self._free[node]
        devices = self._selected(node)
        if devices is None:
            self._free[node] = None
            return None
        for device in devices:
            self._node_of[device] = node
        count = self._free[node] = sum(1 for d in devices if d not in self._held)
        return count


def _odd(flips: list[str]) -> set[str]:
    """The devices that appear an odd number of times in `flips`."""
    odd: set[str] = set()
    for device in flips:
        if device in odd:
            odd.remove(device)
        else:
            odd.add(device)
    return odd
