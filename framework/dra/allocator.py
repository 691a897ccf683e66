"""The structured allocator (dynamic-resource-allocation/structured, stable channel).

allocate(node, claims) finds one allocation for all claims together on one node: an
exhaustive depth-first search over claims, their requests (and a firstAvailable
request's subrequests, in order) and each request's devices, checking selectors (CEL),
availability and constraints as it goes; the first full solution wins. No solution is
an empty answer, not an error; errors are for claims the allocator cannot handle."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import AbstractSet, Any, Callable, Mapping, Sequence

from framework.dra.cel_selector import CELCompileError, CELEvalError, compile_selector, device_from_api
from framework.dra.capacity import Amounts, UndefinedCapacity, add_to, fits, remove_from, share_of
from framework.dra.counters import CounterTally
from framework.dra.pools import Pool, gather_pools, node_matches
from framework.dra.constraints import DistinctAttribute, MatchAttribute
from framework.dra.requests import ALLOCATION_RESULTS_MAX_SIZE, Candidate, DeviceResult, Request, RequestData
from framework.dra.results import build_result
from framework.dra.taints import taint_prevents_allocation


class AllocationError(ValueError):
    """Allocation cannot be attempted (upstream returns an error from Allocate)."""


class FailedAllocationOnNode(AllocationError):
    """Allocation failed for this node only (upstream wraps ErrFailedAllocationOnNode):
    the scheduler makes it the node's unschedulable reason, not an error of the attempt."""


class AllocationTimedOut(AllocationError):
    """The search ran past the caller's deadline (the scheduler's filterTimeout)."""


class _MaxSizeExceeded(Exception):
    """A branch would put more than ALLOCATION_RESULTS_MAX_SIZE devices into a claim."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Features:
    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = False
    device_taints: bool = False
    consumable_capacity: bool = False
    binding_conditions: bool = False

    @property
    def refuses_capacity_requests(self) -> bool:
        """Upstream runs its experimental allocator when DRAConsumableCapacity or
        DRADeviceBindingConditions is on; only that one refuses capacity requests
        while DRAConsumableCapacity is off (the others ignore the field)."""
        return self.binding_conditions and not self.consumable_capacity


def _claim_name(claim: Mapping[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    return f"{meta['namespace']}/{meta.get('name', '')}" if meta.get("namespace") else meta.get("name", "")


class Allocator:
    def __init__(self, *, features: Features, classes: Mapping[str, Mapping[str, Any]],
                 slices: Sequence[Mapping[str, Any]], allocated: AbstractSet[str],
                 aggregated_capacity: Mapping[str, Amounts] | None = None) -> None:
        self.features = features
        self.classes = classes
        self.slices = slices
        self.allocated = allocated
        # DRAConsumableCapacity: per shared device, what allocated claims consume of it
        self.aggregated_capacity: Mapping[str, Amounts] = aggregated_capacity or {}

    def allocate(self, node: Mapping[str, Any] | None, claims: Sequence[Mapping[str, Any]], *,
                 expired: Callable[[], bool] | None = None) -> list[dict[str, Any]]:
        """One AllocationResult per claim, or [] when the claims cannot all be satisfied here.
        `expired` is asked at each step of the search; once it answers True the search
        stops with AllocationTimedOut."""
        return _Run(self, node, claims, expired).run()


class _Run:
    def __init__(self, a: Allocator, node: Mapping[str, Any] | None, claims: Sequence[Mapping[str, Any]],
                 expired: Callable[[], bool] | None = None) -> None:
        self.a, self.node, self.claims, self.expired = a, node, claims, expired
        self.pools: list[Pool] = gather_pools(a.slices, node, a.features.partitionable_devices)
        self.pool_of = {(p.driver, p.name): p for p in self.pools}
        self.counters = CounterTally(a.allocated)
        self.allocating_capacity: dict[str, Amounts] = {}  # shares this search took, per device
        self.data: dict[tuple[int, int, int], RequestData] = {}
        self.constraints: list[list[MatchAttribute | DistinctAttribute]] = []
        self.results: list[list[DeviceResult]] = [[] for _ in claims]
        self.allocating: dict[str, set[int]] = {}
        self.matches: dict[tuple[str, int, int, int], bool] = {}

    def run(self) -> list[dict[str, Any]]:
        for ci, claim in enumerate(self.claims):
            self._prepare_claim(ci, claim)
        try:
            done = self._one(ci=0, ri=0, si=0, di=0, in_sub=False)
        except _MaxSizeExceeded:
            done = False
        if not done:
            if any(p.invalid for p in self.pools):
                raise FailedAllocationOnNode("invalid resource pools were encountered")
            return []
        out = []
        for ci, claim in enumerate(self.claims):
            try:
                out.append(build_result(claim, self.results[ci], self._chosen_classes(ci, claim),
                                        binding_conditions=self.a.features.binding_conditions,
                                        node_name=((self.node or {}).get("metadata") or {}).get("name", "")))
            except ValueError as e:
                raise AllocationError(f"create NodeSelector for claim {_claim_name(claim)}: {e}") from None
        return out

    # -- preparation -------------------------------------------------------------------
    def _prepare_claim(self, ci: int, claim: Mapping[str, Any]) -> None:
        devices = (claim.get("spec") or {}).get("devices") or {}
        minimum = 0
        for ri, raw in enumerate(devices.get("requests") or []):
            subs = raw.get("firstAvailable") or []
            if subs and not self.a.features.prioritized_list:
                raise AllocationError(f"claim {_claim_name(claim)}, request {raw.get('name')}: has subrequests, "
                                      "but the DRAPrioritizedList feature is disabled")
            if self.a.features.refuses_capacity_requests:
                _refuse_capacity_requests(claim, raw)
            if subs:
                parent = Request.exact(raw)
                least = min(self._validate(ci, claim, ri, si, Request.sub(s), parent).num_devices
                            for si, s in enumerate(subs))
                minimum += least
            else:
                minimum += self._validate(ci, claim, ri, 0, Request.exact(raw), None).num_devices
        if minimum > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(f"claim {_claim_name(claim)}: number of requested devices {minimum} "
                                  f"exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}")
        constraints: list[MatchAttribute | DistinctAttribute] = []
        for i, c in enumerate(devices.get("constraints") or []):
            if c.get("matchAttribute") is not None:
                constraints.append(MatchAttribute(list(c.get("requests") or []), c["matchAttribute"]))
            elif c.get("distinctAttribute") is not None and self.a.features.consumable_capacity:
                constraints.append(DistinctAttribute(list(c.get("requests") or []), c["distinctAttribute"]))
            else:
                raise AllocationError(f"claim {_claim_name(claim)}, constraint #{i}: empty constraint "
                                      "(unsupported constraint type?)")
        self.constraints.append(constraints)

    def _validate(self, ci: int, claim: Mapping[str, Any], ri: int, si: int, req: Request,
                  parent: Request | None) -> RequestData:
        name = _claim_name(claim)
        for i, sel in enumerate(req.selectors):
            if not (sel or {}).get("cel"):
                raise AllocationError(f"claim {name}, request {req.name}, selector #{i}: CEL expression empty "
                                      "(unsupported selector type?)")
        if not self.a.features.admin_access and req.has_admin_access:
            raise AllocationError(f"claim {name}, request {req.name}: admin access is requested, "
                                  "but the feature is disabled")
        if not req.class_name:
            raise AllocationError(f"claim {name}, request {req.name}: missing device class name "
                                  "(unsupported request type?)")
        cls = self.a.classes.get(req.class_name)
        if cls is None:
            raise AllocationError(f"claim {name}, request {req.name}: could not retrieve device class "
                                  f"{req.class_name}: deviceclass.resource.k8s.io \"{req.class_name}\" not found")
        data = RequestData(request=req, parent=parent, device_class=cls)
        self.data[(ci, ri, si)] = data
        if req.mode == "ExactCount":
            data.num_devices = req.count
        elif req.mode == "All":
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(f"claim {name}, request {req.name}: asks for all devices, but resource "
                                          f"pool {pool.pool_id} is currently being updated")
                if pool.invalid:
                    raise AllocationError(f"claim {name}, request {req.name}: asks for all devices, but resource "
                                          f"pool {pool.pool_id} is currently invalid")
                for c in _candidates(pool):
                    if self._selectable(ci, ri, si, data, c) and self._capacity_fits(req, c) is not False:
                        data.all_devices.append(c)
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(f"claim {name}, request {req.name}: unsupported count mode {req.mode}")
        return data

    # -- search ------------------------------------------------------------------------
    def _one(self, *, ci: int, ri: int, si: int, di: int, in_sub: bool) -> bool:
        if self.expired is not None and self.expired():
            raise AllocationTimedOut("timed out trying to allocate devices")
        if ci >= len(self.claims):
            return True
        requests = ((self.claims[ci].get("spec") or {}).get("devices") or {}).get("requests") or []
        if ri >= len(requests):
            try:
                return self._one(ci=ci + 1, ri=0, si=0, di=0, in_sub=False)
            except _MaxSizeExceeded:
                return False  # another choice in an earlier claim may need fewer devices
        data = self.data[(ci, ri, si)]
        if not in_sub and data.parent is not None:
            return self._one_of_subrequests(ci, ri, di)
        req = data.request
        if req.mode == "All" and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self._one(ci=ci, ri=ri + 1, si=0, di=0, in_sub=False)
        if len(self.results[ci]) + data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded()
        if req.mode == "All":
            undo = self._take(ci, ri, si, data, data.all_devices[di], must=True)
            if undo is None:
                return False
            return self._then(undo, ci=ci, ri=ri, si=si, di=di + 1, in_sub=in_sub)
        consumable = self.a.features.consumable_capacity
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            for c in _candidates(pool):
                if not self._free_for(req, c.device_id, ci):
                    continue
                if not self._selectable(ci, ri, si, data, c):
                    continue
                if consumable and not self._capacity_fits(req, c):
                    continue
                undo = self._take(ci, ri, si, data, c, must=False)
                if undo is None:
                    continue
                if self._then(undo, ci=ci, ri=ri, si=si, di=di + 1, in_sub=in_sub):
                    return True
        return False

    def _then(self, undo: Callable[[], None], **next_device: Any) -> bool:
        try:
            done = self._one(**next_device)
        except BaseException:
            undo()
            raise
        if not done:
            undo()
        return done

    def _one_of_subrequests(self, ci: int, ri: int, di: int) -> bool:
        all_exceeded = True
        si = 0
        while (ci, ri, si) in self.data:
            try:
                done = self._one(ci=ci, ri=ri, si=si, di=di, in_sub=True)
            except _MaxSizeExceeded:
                si += 1
                continue
            all_exceeded = False
            if done:
                self.data[(ci, ri, 0)].selected_sub = si
                return True
            si += 1
        if all_exceeded:
            raise _MaxSizeExceeded()
        return False

    def _free_for(self, req: Request, device_id: str, ci: int) -> bool:
        if req.admin_access:
            return ci not in self.allocating.get(device_id, ())
        return device_id not in self.a.allocated and not self.allocating.get(device_id)

    def _selectable(self, ci: int, ri: int, si: int, data: RequestData, c: Candidate) -> bool:
        if not self.a.features.binding_conditions and c.device.get("bindingConditions"):
            return False
        key = (c.device_id, ci, ri, si)
        known = self.matches.get(key)
        if known is not None:
            return known
        ok = (data.device_class is None or self._selectors_match(ci, c, data.device_class, _class_selectors(data)))
        ok = ok and self._selectors_match(ci, c, None, data.request.selectors)
        if ok and (c.slice.get("spec") or {}).get("perDeviceNodeSelection"):
            d = c.device
            ok = node_matches(self.node, d.get("nodeName") or "", bool(d.get("allNodes")), d.get("nodeSelector"))
        self.matches[key] = ok
        return ok

    def _selectors_match(self, ci: int, c: Candidate, cls: Mapping[str, Any] | None,
                         selectors: Sequence[Mapping[str, Any]]) -> bool:
        owner = f"class {(cls.get('metadata') or {}).get('name', '')}" if cls is not None \
            else f"claim {_claim_name(self.claims[ci])}"
        for i, sel in enumerate(selectors):
            expression = ((sel or {}).get("cel") or {}).get("expression", "")
            try:
                selector = compile_selector(expression, self.a.features.consumable_capacity)
            except CELCompileError as e:
                raise AllocationError(f"{owner}: selector #{i}: CEL compile error: {e}") from None
            try:
                matched = selector.matches(device_from_api(c.driver, c.device))
            except CELEvalError as e:
                raise AllocationError(f"{owner}: selector #{i}: CEL runtime error: {e}") from None
            if not matched:
                return False
        return True

    def _take(self, ci: int, ri: int, si: int, data: RequestData, c: Candidate, *, must: bool
              ) -> Callable[[], None] | None:
        req = data.request
        # DRAConsumableCapacity: a device that allows multiple allocations is shared, one
        # share per result, and never marked in use by this search
        multi = self.a.features.consumable_capacity and bool(c.device.get("allowMultipleAllocations"))
        if multi and req.admin_access:
            pass  # an admin request may share it even within its own claim
        elif not self._free_for(req, c.device_id, ci):
            return None
        consumes = bool(c.device.get("consumesCounters"))
        if consumes and not self.a.features.partitionable_devices:
            return None
        pool = self.pool_of[(c.driver, c.pool)]
        # A shared device whose capacity is in use already has its counters counted.
        counted = consumes and not (multi and (c.device_id in self.a.aggregated_capacity
                                               or c.device_id in self.allocating_capacity))
        # Upstream counts the device's counters in here and, when a taint, a constraint or
        # the capacity then refuses the device, does not count them out again
        # (allocateDevice returns before its rollback exists); the search keeps that
        # tally, as upstream's does.
        if counted and not self.counters.take(pool, c.device):
            return None
        if self.a.features.device_taints and taint_prevents_allocation(c.device, req.tolerations):
            return None
        base = data.parent.name if data.parent else req.name
        sub = req.name if data.parent else ""
        constraints = self.constraints[ci]
        for i, con in enumerate(constraints):
            if not con.add(base, sub, c):
                if must:
                    raise AllocationError(f"claim {_claim_name(self.claims[ci])}, request {req.name}: cannot add "
                                          f"device {c.device_id} because a claim constraint would not be satisfied")
                for earlier in constraints[:i]:
                    earlier.remove(base, sub, c)
                return None  # the counters stay counted, as upstream leaves them (above)
        holders = self.allocating.setdefault(c.device_id, set())
        if not multi:
            holders.add(ci)
        share: Amounts = {}
        share_id = ""
        if self.a.features.consumable_capacity:
            if not self._capacity_fits(req, c):
                return None  # as upstream, the constraints and the mark above stay
            if multi:
                share = share_of(req.capacity, c.device.get("capacity") or {})
                share_id = str(uuid.uuid4())
                add_to(self.allocating_capacity, c.device_id, share)
        results = self.results[ci]
        before = len(results)
        results.append(DeviceResult(request=data.request_name, base_request=base, sub_request=sub, candidate=c,
                                    admin_access=req.admin_access,
                                    # with the gate off kube-apiserver drops a claim's tolerations
                                    tolerations=req.tolerations if self.a.features.device_taints else (),
                                    share_id=share_id, consumed_capacity=share))

        def undo() -> None:
            for con in constraints:
                con.remove(base, sub, c)
            holders.discard(ci)
            if multi:
                remove_from(self.allocating_capacity, c.device_id, share)
            elif counted:
                self.counters.give_back(pool, c.device)
            del results[before:]
        return undo

    def _capacity_fits(self, req: Request, c: Candidate) -> bool | None:
        """DRAConsumableCapacity: whether the request's share of the device fits beside what
        allocated claims and this search consume of it (False too when the request names a
        capacity the device lacks); None without the gate."""
        if not self.a.features.consumable_capacity:
            return None
        try:
            return fits(self.a.aggregated_capacity.get(c.device_id, {}), req.capacity,
                        c.device.get("capacity") or {}, self.allocating_capacity.get(c.device_id, {}))
        except UndefinedCapacity:
            return False

    def _chosen_classes(self, ci: int, claim: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any] | None, int]]:
        """Per request: (name of the chosen request or subrequest, its class, chosen subrequest index)."""
        out = []
        for ri, _ in enumerate(((claim.get("spec") or {}).get("devices") or {}).get("requests") or []):
            data = self.data[(ci, ri, 0)]
            if data.parent is not None:
                si = data.selected_sub
                data = self.data[(ci, ri, si)]
            else:
                si = 0
            out.append((data.request_name, data.device_class, si))
        return out


def _refuse_capacity_requests(claim: Mapping[str, Any], request: Mapping[str, Any]) -> None:
    if (request.get("exactly") or {}).get("capacity") is not None:
        raise AllocationError(f"claim {_claim_name(claim)}, request {request.get('name')}: has capacity requests, "
                              "but the DRAConsumableCapacity feature is disabled")
    for sub in request.get("firstAvailable") or []:
        if sub.get("capacity") is not None:
            raise AllocationError(f"claim {_claim_name(claim)}, subrequest {sub.get('name')}: has capacity "
                                  "requests, but the DRAConsumableCapacity feature is disabled")


def _class_selectors(data: RequestData) -> Sequence[Mapping[str, Any]]:
    return ((data.device_class or {}).get("spec") or {}).get("selectors") or []


def _candidates(pool: Pool) -> list[Candidate]:
    return [Candidate(driver=pool.driver, pool=pool.name, name=d.get("name", ""), device=d, slice=s)
            for s in pool.targeting for d in (s.get("spec") or {}).get("devices") or []]
