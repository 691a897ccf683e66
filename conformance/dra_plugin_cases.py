"""DynamicResources plugin cases (DRA-TestPlugin.json): one pod taken through the plugin's
extension points in the order upstream's TestPlugin harness calls them, on a cluster
built from the case (nodes, the pod's claims, device classes, slices, claims already
being allocated for other pods).

PreEnqueue; PreFilter; Filter on every node (an Error stops the attempt); when a node
passed, Reserve on the first, then Unreserve (`unreserveBeforePreBind`) or PreBind and,
with `unreserveAfterBindFailure`, Unreserve; when none passed, PostFilter. After every
step the run records its status, the claims as stored and which claims are in flight
(allocated at Reserve, not yet written). The comparison is upstream's: an expected
success or Skip must be exactly that; any other expected status only needs the actual
one to be a failure whose message contains the expected text (the harness compares
`AsError()` strings, not codes). Claims are compared without their uid, resourceVersion
and the device names in allocation results (upstream ignores those fields too)."""
from __future__ import annotations

import asyncio
import copy
from typing import Any, Mapping

from framework.api.dra_kinds import DeviceClass, ResourceClaim, ResourceSlice
from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.dra.allocator import Features
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, NodeScore, Status
from framework.plugins.dynamicresources.args import parse_args
from framework.plugins.dynamicresources.dynamic_resources import DynamicResources
from framework.plugins.dynamicresources.tracker import DeviceTracker

def is_dra_plugin_case(case: dict[str, Any]) -> bool:
    return "draPlugin" in case


def _features(gates: Mapping[str, Any]) -> Features:
    return Features(admin_access=bool(gates.get("DRAAdminAccess", True)),
                    prioritized_list=bool(gates.get("DRAPrioritizedList")),
                    device_taints=bool(gates.get("DRADeviceTaints")),
                    partitionable_devices=bool(gates.get("DRAPartitionableDevices")),
                    consumable_capacity=bool(gates.get("DRAConsumableCapacity")),
                    binding_conditions=bool(gates.get("DRADeviceBindingConditions"))
                    and bool(gates.get("DRAResourceClaimDeviceStatus")))


class _TickingClock:
    """A clock that moves one microsecond each time it is read: a search step always
    takes time, so a filterTimeout of a nanosecond runs out at the first step, whatever
    the machine's speed, and the default 10s never does."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 1e-6
        return self.t


def _status(st: Status | None) -> dict[str, Any] | None:
    if st is None or st.code == Code.Success:
        return None
    return {"code": st.code.name, "message": st.message()}


class _Run:
    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.spec = spec
        claims = [ResourceClaim(c) for c in spec.get("claims") or []]
        objects = ([DeviceClass(c) for c in spec.get("deviceClasses") or []]
                   + [ResourceSlice(s) for s in spec.get("resourceSlices") or []] + claims)
        self.nodes = [Node(n) for n in spec.get("nodes") or []]
        self.snapshot = Snapshot.build(self.nodes, [])
        self.handle = FrameworkHandle(snapshot=self.snapshot, objects=InMemoryObjects(objects), clock=_TickingClock())
        self.plugin = DynamicResources(self.handle, DeviceTracker(), _features(spec.get("features") or {}),
                                       args=parse_args(spec.get("args")))
        self.uids = {c.name: c.uid for c in claims}
        for raw in spec.get("inFlightClaims") or []:
            claim = ResourceClaim(raw)
            self.uids.setdefault(claim.name, claim.uid)
            self.plugin.tracker.signal_pending(claim)
        self.pod = Pod(spec["pod"])
        self.state = CycleState()
        self.steps: dict[str, Any] = {}

    def claims(self) -> dict[str, Any]:
        out = {}
        for c in self.handle.list_objects("ResourceClaim"):
            out[c.name] = {"finalizers": list((c.raw.get("metadata") or {}).get("finalizers") or []),
                           "status": _comparable_status(c.raw.get("status") or {})}
        return out

    def in_flight(self) -> list[str]:
        return sorted(name for name, uid in self.uids.items() if self.plugin.tracker.has_pending(uid))

    def record(self, step: str, status: Status | None, before: dict[str, Any]) -> None:
        self.steps[step] = {"status": _status(status), "before": before, "claims": self.claims(),
                            "inFlight": self.in_flight()}

    def prepare(self, step: str) -> None:
        """Store the changes the case makes before `step` (another writer's, as upstream's `prepare`)."""
        for name, fields in ((self.spec.get("prepare") or {}).get(step) or {}).items():
            claim = self.handle.get_object("ResourceClaim", self.pod.namespace, name)
            raw = copy.deepcopy(claim.raw)
            if "finalizers" in fields:
                raw.setdefault("metadata", {})["finalizers"] = list(fields["finalizers"])
            self.handle.objects.put(ResourceClaim(raw))

    def run(self) -> dict[str, Any]:
        before = self.claims()
        status = self.plugin.pre_enqueue(self.pod)
        self.record("preenqueue", status, before)
        if status is not None and not status.is_success():
            return self.steps
        before = self.claims()
        _, status = self.plugin.pre_filter(self.state, self.pod, self.snapshot.list())
        self.record("prefilter", status, before)
        rejected = status is not None and status.is_rejected()
        feasible: list[str] = []
        if not rejected:
            per_node: dict[str, Any] = {}
            for ni in self.snapshot.list():
                before = self.claims()
                st = self.plugin.filter(self.state, self.pod, ni)
                per_node[ni.name] = {"status": _status(st), "before": before, "claims": self.claims(),
                                     "inFlight": self.in_flight()}
                if st is None or st.is_success():
                    feasible.append(ni.name)
                if st is not None and st.code == Code.Error:
                    self.steps["filter"] = per_node
                    return self.steps
            self.steps["filter"] = per_node
        if feasible and not rejected:
            self._reserve_and_bind(self._score(feasible) if len(feasible) > 1 else feasible[0])
        elif not feasible:
            before = self.claims()
            _, status = self.plugin.post_filter(self.state, self.pod, None)
            self.record("postfilter", status, before)
        return self.steps

    def _score(self, feasible: list[str]) -> str:
        """Score and NormalizeScore over the nodes that passed; the first best one is picked."""
        infos = [ni for ni in self.snapshot.list() if ni.name in feasible]
        scores = []
        for ni in infos:
            value, status = self.plugin.score(self.state, self.pod, ni)
            scores.append(NodeScore(name=ni.name, score=value))
            self.steps.setdefault("score", {})[ni.name] = {"score": value, "status": _status(status)}
        self.plugin.score_extensions().normalize_score(self.state, self.pod, scores)
        self.steps["normalizeScore"] = [{"name": n.name, "score": n.score} for n in scores]
        return max(scores, key=lambda n: n.score).name  # max keeps the first of equals

    def _reserve_and_bind(self, node: str) -> None:
        before = self.claims()
        status = self.plugin.reserve(self.state, self.pod, node)
        self.record("reserve", status, before)
        if status is not None and not status.is_success():
            before = self.claims()
            self.plugin.unreserve(self.state, self.pod, node)
            self.record("unreserve", None, before)
            return
        if self.spec.get("unreserveBeforePreBind"):
            before = self.claims()
            self.plugin.unreserve(self.state, self.pod, node)
            self.record("unreserveBeforePreBind", None, before)
            return
        self.prepare("prebind")
        before = self.claims()
        status = asyncio.run(self.plugin.pre_bind(self.state, self.pod, node))
        self.record("prebind", status, before)
        if self.spec.get("unreserveAfterBindFailure"):
            before = self.claims()
            self.plugin.unreserve(self.state, self.pod, node)
            self.record("unreserveAfterBindFailure", None, before)


def _comparable_status(status: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(status))
    allocation = out.get("allocation")
    if isinstance(allocation, dict):
        allocation.pop("allocationTimestamp", None)
        for r in (allocation.get("devices") or {}).get("results") or []:
            r.pop("device", None)
    return {k: v for k, v in out.items() if v not in (None, [], {})}


def run_dra_plugin_case(case: dict[str, Any]) -> dict[str, Any]:
    return {"steps": _Run(case["draPlugin"]).run()}


def dra_plugin_mismatches(expect: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    steps = actual.get("steps") or {}
    out: list[str] = []
    # As upstream's harness: what a step that did not run was expected to do is not checked.
    for step, got in steps.items():
        want = expect.get(step) or {}
        if step == "score":  # as upstream: a node the case gives no score for scores 0
            for node, g in got.items():
                if g["score"] != (want.get(node) or 0) or g["status"] is not None:
                    out.append(f"score/{node}: expected {want.get(node) or 0}, got {g}")
            continue
        if step == "normalizeScore":
            if got != want:
                out.append(f"normalizeScore: expected {want!r}, got {got!r}")
            continue
        if step == "filter":
            for node, g in got.items():
                out += _step_mismatches(f"filter/{node}", (want or {}).get(node) or {}, g)
        else:
            out += _step_mismatches(step, want, got)
    return out


def _step_mismatches(step: str, want: Mapping[str, Any], got: Mapping[str, Any]) -> list[str]:
    out = []
    exp, act = want.get("status"), got.get("status")
    if not _status_matches(exp, act):
        out.append(f"{step}: status expected {exp!r}, got {act!r}")
    expected_claims = copy.deepcopy(got["before"])
    for name, fields in (want.get("claims") or {}).items():
        entry = expected_claims.setdefault(name, {"finalizers": [], "status": {}})
        if "finalizers" in fields:
            entry["finalizers"] = list(fields["finalizers"])
        if "status" in fields:
            entry["status"] = _comparable_status(fields["status"])
    if expected_claims != got["claims"]:
        out.append(f"{step}: claims expected {expected_claims!r}, got {got['claims']!r}")
    if sorted(want.get("inFlight") or []) != got["inFlight"]:
        out.append(f"{step}: in-flight claims expected {sorted(want.get('inFlight') or [])}, got {got['inFlight']}")
    return out


def _status_matches(exp: Mapping[str, Any] | None, act: Mapping[str, Any] | None) -> bool:
    if exp is None or act is None or exp.get("code") == "Skip" or act.get("code") == "Skip":
        return exp == act or (exp is not None and act is not None and exp.get("code") == act.get("code") == "Skip")
    return str(exp.get("message") or "") in str(act.get("message") or "")
