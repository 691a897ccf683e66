"""DynamicResources: a pod's ResourceClaims (resource.k8s.io/v1) must exist, their device
classes too, an allocated claim must be usable on the node (its allocation's node
selector) and not reserved to its limit by others, and the claims still unallocated
must all be satisfiable together from the devices the node can reach (the structured
allocator, framework/dra/allocator.py; for one plain request, a count of the node's
selected free devices, device_index.py, with the allocation made at Reserve). Reserve
keeps the chosen allocation in memory (DeviceTracker) so no other pod in flight gets
the same device; PreBind writes status.allocation and status.reservedFor into each
claim (through the store, or handed to DefaultBinder's bind when it binds: one write,
framework/bind_writes.py); PostFilter deallocates an allocated claim that keeps the pod
off every node when no other pod uses it; Score prefers nodes whose allocation takes
earlier firstAvailable choices (scoring.py); filterTimeout bounds a node's search.

Upstream: pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go (1.35),
without extended resources backed by DRA (DRAExtendedResource) and the plugin's side of
device binding conditions."""
from __future__ import annotations

from functools import partial
from typing import AbstractSet, Any, Hashable, Mapping

import numpy as np

from framework.api.dra_kinds import AllocationInFlight, DeviceClass, ResourceClaim, ResourceSlice
from framework.api.labels import NodeSelector
from framework.api.objects import Pod
from framework.bind_writes import StatusWrite, offered
from framework.cache import NodeInfo
from framework.dra.allocator import AllocationTimedOut, Allocator, FailedAllocationOnNode, Features
from framework.interface import (ClusterEventWithHint, Code, CycleState, Handle, PostFilterResult, PreFilterResult,
                                 SignPurpose, Status)
from framework.plugins.dynamicresources.claims import (can_be_reserved, claims_or_reason, finalizer_to_add,
                                                       is_reserved_for, kobj as _kobj, pod_claim_entries,
                                                       pod_claims, reserved_for_entries, with_status)
from framework.plugins.dynamicresources.classes import ClassCheck
from framework.plugins.dynamicresources.hints import ClaimHints
from framework.plugins.dynamicresources.explain import claims_not_satisfied
from framework.plugins.dynamicresources.device_index import DeviceIndex, SingleRequest, first_fit
from framework.plugins.dynamicresources.slice_index import SlicesByNode
from framework.plugins.dynamicresources.tracker import DeviceTracker
from framework.plugins.dynamicresources.victims import DeviceRelease
from framework.plugins.dynamicresources.args import DynamicResourcesArgs, parse_args
from framework.plugins.dynamicresources.scoring import any_first_available, node_scores
from framework.plugins.helper import DEFAULT_NORMALIZER, DefaultNormalizer, FilterEachNode, read_state, zeros_column
from framework.plugins.helper.signing import ALL_SIGNED
from framework.node_table import columnar_table
from framework.reductions import column_min

NAME = "DynamicResources"
STATE_KEY = NAME
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"


def _unschedulable(message: str) -> Status:
    # upstream's statusUnschedulable: the pod waits for a cluster event
    return Status(Code.UnschedulableAndUnresolvable, message)


class _StateData:
    """Written at PreFilter; Filter adds per-node allocations and unavailable claims."""

    __slots__ = ("claims", "available_on", "allocator", "node_allocations", "unavailable", "allocated_here",
                 "slices_by_node", "index", "single", "deferred", "by_count", "held",
                 "held_mark")

    def __init__(self) -> None:
        self.claims: list[ResourceClaim] = []
        self.available_on: dict[int, NodeSelector] = {}  # claim index -> its allocation's node selector
        self.allocator: Allocator | None = None
        self.node_allocations: dict[str, list[dict[str, Any]]] = {}  # node -> results of the unallocated claims
        self.unavailable: set[int] = set()
        self.allocated_here: dict[int, dict[str, Any]] = {}  # claim index -> allocation chosen at Reserve
        self.slices_by_node: SlicesByNode | None = None
        self.index: DeviceIndex | None = None
        self.single: SingleRequest | None = None  # the fast path's request (device_index.py)
        self.deferred: dict[str, Any] = {}  # node -> its object: feasible by count, allocated at Reserve
        self.by_count = False  # the columnar fast path passed nodes by count: allocated at Reserve too
        self.held: AbstractSet[str] = frozenset()  # the devices held at PreFilter (allocator.allocated)
        self.held_mark: int | None = None  # the tracker's flip mark when they were read

    def clone(self) -> "_StateData":
        return self  # upstream shares it between clones as well

    def to_allocate(self) -> list[int]:
        return [i for i, c in enumerate(self.claims) if c.allocated is None]


class DynamicResources(FilterEachNode):
    name = NAME

    def __init__(self, handle: Handle, tracker: DeviceTracker | None = None, features: Features | None = None,
                 args: DynamicResourcesArgs | None = None) -> None:
        self._handle = handle
        self._filter_timeout = (args or DynamicResourcesArgs()).filter_timeout
        self.tracker = tracker if tracker is not None else DeviceTracker()
        self._features = features if features is not None else Features()
        self._index: DeviceIndex | None = None
        self._slices_seen: int | None = None  # the view's revision when the slices were last read
        self._class_raws: dict[str, Any] | None = None  # the classes by name, as last read, and when
        self._classes_seen: int | None = None
        self._classes = ClassCheck(lambda name: self._handle.get_object("DeviceClass", "", name) is not None,
                                   self._features.prioritized_list)
        # pod uid -> (the pod object, the claim names it may use), for the claim hint's
        # cheap test; the queue offers the same pod object to event after event
        self._hints = ClaimHints(self._claim, self._pod_claims)
        # Filter counts free selected devices for a pod with one plain request (device_index.py)
        # and the held devices are counted incrementally (DeviceTracker.held); False: the
        # structured allocator on every node over every claim read again (the reference).
        self.fast_filter = features is None or features == Features()

    @classmethod
    def new(cls, args: dict[str, Any] | None, handle: Handle) -> "DynamicResources":
        parsed = parse_args(args)  # ValidationError names the field
        # One tracker per handle: every profile's plugin sees the same devices taken.
        tracker = getattr(handle, "dra_tracker", None)
        if tracker is None:
            tracker = DeviceTracker()
            try:
                setattr(handle, "dra_tracker", tracker)
            except AttributeError:
                pass
        return cls(handle, tracker, args=parsed)

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        """SignPlugin: a pod with claims is not signed (its claims are its own, made for it
        from templates, and their allocations change from attempt to attempt)."""
        return None if pod_claim_entries(pod) else ALL_SIGNED

    # --- reading the scheduler's view -----------------------------------------------------

    def _claim(self, namespace: str, name: str) -> ResourceClaim | None:
        claim = self._handle.get_object("ResourceClaim", namespace, name)
        return None if claim is None else self.tracker.current(claim)

    def _pod_claims(self, pod: Pod) -> list[ResourceClaim]:
        return pod_claims(pod, self._claim)

    # --- PreEnqueue -------------------------------------------------------------------------

    def pre_enqueue(self, pod: Pod) -> Status | None:
        entries = pod_claim_entries(pod)
        if not entries:
            return None
        _, reason = claims_or_reason(pod, self._claim, entries)  # (no exception: once a pod, its claim not made yet)
        return _unschedulable(reason) if reason else None

    def pre_enqueue_reads_pod_only(self, pod: Pod) -> bool:
        """PodOnlyPreEnqueuePlugin: a pod with no claims passes whatever exists."""
        return not pod.spec.get("resourceClaims") or not pod_claim_entries(pod)

    # --- PreFilter --------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        s = _StateData()
        state.write(STATE_KEY, s)
        entries = pod_claim_entries(pod)
        if not entries:
            return None, Status(Code.Skip)
        claims, reason = claims_or_reason(pod, self._claim, entries)
        if reason:
            return None, _unschedulable(reason)
        if not claims:
            return None, Status(Code.Skip)
        to_allocate = 0
        for index, claim in enumerate(claims):
            if claim.allocated is not None and not can_be_reserved(claim) and not is_reserved_for(pod, claim):
                return None, _unschedulable("resourceclaim in use")
            if claim.allocated is not None:
                selector = (claim.status.get("allocation") or {}).get("nodeSelector")
                if selector is not None:
                    try:
                        s.available_on[index] = NodeSelector.parse(selector, "nodeSelector")
                    except ValueError as e:
                        return None, Status.error_of(str(e), NAME)
                continue
            to_allocate += 1
            if self.tracker.has_pending(claim.uid):
                return None, _unschedulable(f"resource claim {_kobj(claim)} is in the process of being allocated")
            status = self._classes.check(claim)
            if status is not None:
                return None, status
        if to_allocate:
            held = self._held() if self.fast_filter \
                else self.tracker.allocated(self._handle.list_objects("ResourceClaim"))
            s.held, s.held_mark = held, (self.tracker.flip_mark if self.fast_filter else None)
            classes = self._classes_by_name()
            index = self._device_index()
            try:
                s.allocator = Allocator(features=self._features, classes=classes, slices=index.slices, allocated=held)
            except ValueError as e:
                return None, Status.error_of(str(e), NAME)
            s.slices_by_node, s.index = index.by_node, index
            if to_allocate == 1 and self.fast_filter:
                (pending,) = [i for i, c in enumerate(claims) if c.allocated is None]
                s.single = index.single_request(pending, claims[pending].raw, classes)
        s.claims = claims
        return None, None

    def _held(self) -> AbstractSet[str]:
        """The devices held now (shared with the tracker, copy-on-write), the claims
        changed since the last pod read again (DeviceTracker)."""
        revision, changed = self._handle.changed_objects("ResourceClaim", self.tracker.revision)
        self.tracker.held_since(revision, changed, lambda key: self._handle.get_object(
            "ResourceClaim", *key.split("/", 1)), lambda: self._handle.list_objects("ResourceClaim"))
        return self.tracker.held_at()

    def _classes_by_name(self) -> dict[str, Any]:
        """The device classes by name (never changed: the allocator only reads them), read
        again only when one changed (the view's journal; a view that cannot tell: always)."""
        revision, changed = self._handle.changed_objects("DeviceClass", self._classes_seen)
        self._classes_seen = revision
        if self._class_raws is None or changed != []:
            self._class_raws = {c.name: c.raw for c in self._handle.list_objects("DeviceClass")
                                if isinstance(c, DeviceClass)}
        return self._class_raws

    def _device_index(self) -> DeviceIndex:
        """The slices' index, built again only when one changed (the view's journal, else a compare)."""
        revision, changed = self._handle.changed_objects("ResourceSlice", self._slices_seen)
        self._slices_seen = revision
        if self._index is not None and changed == []:
            return self._index
        slices = [sl.raw for sl in self._handle.list_objects("ResourceSlice") if isinstance(sl, ResourceSlice)]
        known = self._index
        if known is None or len(known.slices) != len(slices) or any(a is not b for a, b in zip(known.slices, slices)):
            self._index = known = DeviceIndex(slices)
        return known

    def pre_filter_extensions(self) -> DeviceRelease:
        """AddPod/RemovePod for preemption's dry run: a victim's devices count as free
        (ksched's addition; upstream 1.35 has none, docs/decisions.md)."""
        return DeviceRelease(STATE_KEY, self._claim)

    def preemption_may_resolve(self, status: Status) -> bool:
        """Whether removing pods may turn this plugin's Filter rejection around: devices
        that other claims hold are freed when their consumers are preempted."""
        return status.message() == CANNOT_ALLOCATE

    # --- Filter -----------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s, err = read_state(state, STATE_KEY)
        if err is not None:
            return err
        if not s.claims:
            return None
        node = node_info.node
        labels = node.labels if node is not None else {}
        node_name = node.name if node is not None else ""
        unavailable = [i for i, sel in s.available_on.items() if not sel.matches(labels, node_name)]
        allocations: list[dict[str, Any]] | None = None
        feasible = self._feasible_by_count(s, node_name)
        if feasible is False:
            return _unschedulable(CANNOT_ALLOCATE)
        if s.allocator is not None and feasible is None:
            claims = [s.claims[i].raw for i in s.to_allocate()]
            allocator = s.allocator
            if s.slices_by_node is not None:  # the same allocator over only the slices that can reach this node
                allocator = Allocator(features=allocator.features, classes=allocator.classes,
                                      slices=s.slices_by_node.for_node(node_name), allocated=allocator.allocated)
            try:
                allocations = allocator.allocate(node.raw if node is not None else None, claims,
                                                 expired=self._deadline())
            except (FailedAllocationOnNode, AllocationTimedOut) as e:  # this node only: the others may still fit
                return _unschedulable(str(e))
            except ValueError as e:
                return Status.error_of(str(e), NAME)
            if len(allocations) != len(claims):
                return _unschedulable(CANNOT_ALLOCATE)
        if unavailable:
            s.unavailable.update(unavailable)
            return _unschedulable(NOT_AVAILABLE)
        if allocations is not None:
            s.node_allocations[node_name] = allocations
        elif feasible:
            s.deferred[node_name] = node.raw if node is not None else None
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[Status | None]:
        """The columnar form: on the fast path the nodes' free selected devices as one
        column of the NodeTable's rows against the request's count (one shared
        rejection), each node the fast path does not cover asked through `filter`."""
        s = state.get(STATE_KEY)
        if s is None or s.single is None or s.index is None or s.allocator is None or s.available_on:
            return FilterEachNode.filter_nodes(self, state, pod, nodes)
        # the tracker's held set of PreFilter (not a dry run's): counts move by the tracker's flips
        flips = None if s.held_mark is None or s.allocator.allocated is not s.held \
            else (s.held_mark, self.tracker.flips_since)
        counts, need = s.index.free_counts(s.single.selectors, s.allocator.allocated, flips), s.single.count
        tc = columnar_table(nodes)
        rows = None if tc is None else counts.by_row(tc[0])[tc[1]]
        s.by_count = s.by_count or rows is not None
        if rows is not None and (not len(rows) or column_min(rows) >= need):  # all have enough (none off the fast path)
            return [None] * len(nodes)
        rejected = _unschedulable(CANNOT_ALLOCATE)
        if rows is not None:
            columns = np.array([rejected, None], dtype=object)[(rows >= need).view(np.int8)]
            for i in np.flatnonzero(rows < 0).tolist():  # nodes the fast path does not cover
                columns[i] = self.filter(state, pod, nodes[i])
            return columns.tolist()
        free = counts.of
        out: list[Status | None] = []
        for ni in nodes:
            node = ni.node
            name = node.name if node is not None else ""
            count = free(name)
            if count is None:
                out.append(self.filter(state, pod, ni))
            elif count >= need:
                s.deferred[name] = node.raw if node is not None else None
                out.append(None)
            else:
                out.append(rejected)
        return out

    def _deadline(self) -> Any:
        """filterTimeout: the question the allocator asks at each step (None: no limit)."""
        if self._filter_timeout <= 0:
            return None
        now, end = self._handle.now, self._handle.now() + self._filter_timeout
        return lambda: now() > end

    @staticmethod
    def _feasible_by_count(s: _StateData, node_name: str) -> bool | None:
        """The fast path: whether enough selected devices of the node are free for the
        pod's one request; None when it does not apply (the allocator decides)."""
        if s.single is None or s.index is None or s.allocator is None \
                or s.index.selected(node_name, s.single.selectors) is None:
            return None
        return s.index.first_free(node_name, s.single.selectors, s.allocator.allocated, s.single.count) is not None

    def _allocate_deferred(self, s: _StateData, node_name: str) -> list[dict[str, Any]] | Status:
        """Reserve on a node the fast path passed: the allocator's allocation there (for one
        plain request its first fit, made directly: device_index.first_fit)."""
        assert s.allocator is not None and s.slices_by_node is not None
        a = s.allocator
        if s.single is not None and s.index is not None and (fast := first_fit(
                s.single, s.index, node_name, s.claims, a.allocated, a.classes)) is not None:
            return fast
        allocator = Allocator(features=a.features, classes=a.classes, slices=s.slices_by_node.for_node(node_name),
                              allocated=a.allocated)
        if node_name in s.deferred:
            node = s.deferred[node_name]
        else:  # passed in columns: the snapshot's node
            ni = self._handle.snapshot().get(node_name)
            node = ni.node.raw if ni is not None and ni.node is not None else None
        try:
            return allocator.allocate(node, [s.claims[i].raw for i in s.to_allocate()])
        except ValueError as e:
            return Status.error_of(str(e), NAME)

    def explain_node(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> list[dict[str, str]]:
        """For `ksched explain`: each claim of the pod that keeps it off this node, and
        why (ksched's own words; upstream's Filter names no claim). explain.py."""
        s = state.get(STATE_KEY)
        if s is None or not s.claims:
            return []
        return claims_not_satisfied(s.claims, s.available_on, s.to_allocate(), s.allocator, node_info)

    # --- PostFilter -------------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: Pod, filtered: Any) -> tuple[PostFilterResult | None, Status | None]:
        s, err = read_state(state, STATE_KEY)
        if err is not None:
            return None, err
        if not s.claims:
            return None, Status(Code.Unschedulable, "no new claims to deallocate")
        for index in sorted(s.unavailable):
            claim = s.claims[index]
            reserved = claim.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0][2] == pod.uid):
                self._handle.update_object_later(StatusWrite(obj=with_status(
                    claim, allocation=None, reserved_for=None, finalizer=False)))
                return None, Status(Code.Unschedulable, "deallocation of ResourceClaim completed")
        return None, Status(Code.Unschedulable, "still not schedulable")

    # --- Score (scoring.py) -------------------------------------------------------------------

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        scores, status = self.score_nodes(state, pod, [node_info])
        return (int(scores[0]) if len(scores) else 0), status

    def score_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple["list[int] | np.ndarray", Status | None]:
        s = state.get(STATE_KEY)
        if s is None or not self._features.prioritized_list or not any_first_available(s.claims):
            return zeros_column(len(nodes)), None  # no claim with a prioritized list: every node 0 (no names gathered)
        return node_scores(s.claims, s.node_allocations, [ni.name for ni in nodes], NAME)

    def score_extensions(self) -> DefaultNormalizer:
        return DEFAULT_NORMALIZER

    # --- Reserve / Unreserve ----------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s, err = read_state(state, STATE_KEY)
        if err is not None:
            return err
        pending = s.to_allocate() if s.claims else []
        if not pending:
            return None
        allocations = s.node_allocations.get(node_name)
        if not allocations and (node_name in s.deferred or s.by_count):
            found = self._allocate_deferred(s, node_name)
            if isinstance(found, Status):
                return found
            allocations = s.node_allocations[node_name] = found
        if not allocations:
            return Status.error_of("claim allocation not found for node", NAME)
        if len(allocations) != len(pending):
            return Status.error_of(f"internal error, have {len(allocations)} allocations, {len(pending)} claims to "
                                   f"allocate, want {len(pending)} claims", NAME)
        for index, allocation in zip(pending, allocations):
            s.allocated_here[index] = allocation
            # (what the tracker reads of the claim with this allocation, without making it)
            self.tracker.signal_pending(AllocationInFlight(s.claims[index].uid, allocation))
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        s = state.get(STATE_KEY)
        if s is None or not s.claims:
            return
        for claim in s.claims:
            self.tracker.remove_pending(claim.uid)
            if claim.allocated is not None and is_reserved_for(pod, claim):
                others = [r for r in reserved_for_entries(claim) if r.get("uid") != pod.uid]
                self._handle.update_object_later(StatusWrite(obj=with_status(
                    claim, allocation=claim.status.get("allocation"), reserved_for=others, finalizer=False)))

    # --- PreBind ----------------------------------------------------------------------------

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s, err = read_state(state, STATE_KEY)
        if err is not None:
            return err
        carried = offered(state)  # the binder writes them with the binding (framework/bind_writes.py)
        for index, claim in enumerate(s.claims):
            if is_reserved_for(pod, claim):
                continue
            allocation = s.allocated_here.get(index, claim.status.get("allocation"))
            if allocation is None:
                return Status.error_of(f"claim {_kobj(claim)} has no allocation for node {node_name}", NAME)
            entries = reserved_for_entries(claim) + [{"resource": "pods", "name": pod.name, "uid": pod.uid}]
            # As upstream's bindClaim: the allocation and reservedFor through the status
            # subresource, the finalizer (a claim this pod allocates) with a normal update.
            finalizer = finalizer_to_add(claim) if index in s.allocated_here else ""
            if carried is not None:  # one store write with the binding: the finalizer rides along
                carried.add(StatusWrite(obj=with_status(claim, allocation=allocation, reserved_for=entries,
                                                        finalizer=False), finalizer=finalizer),
                            partial(self._written, s, index))
                continue
            failed = await self._bind_claim(s, index, allocation, entries, finalizer)
            if failed is not None:
                return failed
        return None

    async def _bind_claim(self, s: _StateData, index: int, allocation: Mapping[str, Any],
                          entries: list[dict[str, str]], finalizer: str) -> Status | None:
        """PreBind's own writes of one claim (no binder carries them): the finalizer's
        Update, then the status's UpdateStatus, with upstream's error messages."""
        claim = s.claims[index]
        if finalizer:
            try:
                claim = claim.restated(await self._handle.update_object(with_status(
                    claim, allocation=claim.status.get("allocation"), reserved_for=reserved_for_entries(claim),
                    finalizer=True)))
            except Exception as e:  # the store refused (conflict, gone): the pod retries
                return Status.error_of(f"add finalizer to claim {_kobj(claim)}: {e}", NAME)
        try:
            written = await self._handle.update_object(StatusWrite(obj=with_status(
                claim, allocation=allocation, reserved_for=entries, finalizer=False)))
        except Exception as e:
            what = "add allocation and reservation to" if index in s.allocated_here else "add reservation to"
            return Status.error_of(f"{what} claim {_kobj(claim)}: {e}", NAME)
        self._written(s, index, written)
        return None

    def _written(self, s: _StateData, index: int, written: dict[str, Any]) -> None:
        """The claim's allocation and reservation are stored: the tracker holds the stored
        claim until the view has it."""
        claim = s.claims[index].restated(written)
        self.tracker.assume(claim)
        s.claims[index] = claim

    # --- EnqueueExtensions (hints.py) -------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return self._hints.events()


PLUGINS = [DynamicResources]
