"""Preemption that frees devices: DefaultPreemption's dry run, through DynamicResources'
AddPod/RemovePod, counts the devices a victim's claims hold as free, so a high-priority
pod whose claim needs a GPU held by a low-priority pod preempts that pod (and only it)."""
from __future__ import annotations

import random
from typing import Any

from framework.api.dra_kinds import DeviceClass, ResourceClaim, ResourceSlice
from framework.api.objects import Node, Pod
from framework.cache import PodInfo, Snapshot
from framework.features import FeatureGates
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState, NodeToStatus, Status
from framework.plugins.defaultpreemption.default_preemption import DefaultPreemption
from framework.plugins.dynamicresources.dynamic_resources import CANNOT_ALLOCATE, DynamicResources
from framework.plugins.noderesources.fit import NodeResourcesFit
from framework.runtime import Framework, run_unsuspended
from framework.waiting import WaitingPodsMap
from tests import dra_manifests as m
from tests.framework.preemption_builders import node


def _pod(name: str, *, priority: int, claim: str | None, node_name: str = "") -> Pod:
    spec: dict[str, Any] = {"priority": priority,
                            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    if claim is not None:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
    if node_name:
        spec["nodeName"] = node_name
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec, "status": {}})


def _claim(name: str, *, device: str | None = None, reserved_for: tuple[str, ...] = ()) -> ResourceClaim:
    raw: dict[str, Any] = m.resource_claim(name, count=1)
    raw["metadata"].update(uid=f"{name}-uid", resourceVersion="5")
    if device is not None:
        raw["status"] = {"allocation": m.allocation("node-1", device),
                         "reservedFor": [{"resource": "pods", "name": p, "uid": p} for p in reserved_for]}
    return ResourceClaim(raw)


class _World:
    """One node with `gpus` GPUs, a Framework with NodeResourcesFit and DynamicResources
    at PreFilter/Filter, DynamicResources and DefaultPreemption at PostFilter."""

    def __init__(self, pods: list[Pod], claims: list[ResourceClaim], gpus: int = 1) -> None:
        nodes: list[Node] = [node("node-1", cpu="4")]
        self.snapshot = Snapshot.build(nodes, pods)
        objects = [DeviceClass(m.device_class()), ResourceSlice(m.resource_slice("node-1", gpus=gpus)), *claims]
        self.handle = FrameworkHandle(snapshot=self.snapshot, objects=InMemoryObjects([*nodes, *pods, *objects]),
                                      waiting_pods=WaitingPodsMap(), nominated=lambda n: [], rand=random.Random(0),
                                      features=FeatureGates({"SchedulerAsyncPreemption": False}))
        self.preemption = DefaultPreemption.new(None, self.handle)
        fit = NodeResourcesFit.new(None, self.handle)
        self.dra = DynamicResources.new(None, self.handle)
        plugins: dict[str, Any] = {fit.name: fit, self.dra.name: self.dra, self.preemption.name: self.preemption}
        self.fwk = Framework("default-scheduler", plugins,
                             {"preFilter": [fit.name, self.dra.name, self.preemption.name],
                              "filter": [fit.name, self.dra.name], "postFilter": [self.preemption.name]},
                             {}, self.handle)

    def schedule(self, pod: Pod) -> tuple[Status, Any, list[str]]:
        """Filter on every node, then preemption; (node-1's Filter status, the
        PostFilter result, the evicted pods)."""
        state = CycleState()
        self.fwk.run_pre_filter(state, pod)
        filtered = NodeToStatus({})
        for ni in self.snapshot.list():
            filtered.set(ni.name, self.fwk.run_filter(state, pod, ni))
        result, _ = run_unsuspended(self.preemption.post_filter(state, pod, filtered))
        return filtered.get("node-1"), result, [v.name for v, _, _ in self.handle.evicted]


def test_a_high_priority_pod_preempts_the_low_priority_pod_holding_the_gpu_it_needs() -> None:
    low = _pod("low", priority=0, claim="low-claim", node_name="node-1")
    world = _World([low], [_claim("low-claim", device="gpu-0", reserved_for=("low",)), _claim("high-claim")])
    status, result, evicted = world.schedule(_pod("high", priority=1000, claim="high-claim"))
    assert status == Status(Code.UnschedulableAndUnresolvable, CANNOT_ALLOCATE)
    assert evicted == ["low"]
    assert result is not None and result.nominated_node_name == "node-1"


def test_only_the_pod_holding_the_device_is_preempted_not_its_neighbour_without_claims() -> None:
    low = _pod("low", priority=0, claim="low-claim", node_name="node-1")
    plain = _pod("plain", priority=0, claim=None, node_name="node-1")
    world = _World([low, plain], [_claim("low-claim", device="gpu-0", reserved_for=("low",)), _claim("high-claim")])
    _, _, evicted = world.schedule(_pod("high", priority=1000, claim="high-claim"))
    assert evicted == ["low"]


def test_a_device_shared_with_a_pod_that_is_no_victim_stays_taken_and_nobody_is_preempted() -> None:
    low = _pod("low", priority=0, claim="shared", node_name="node-1")
    boss = _pod("boss", priority=5000, claim="shared", node_name="node-1")
    world = _World([low, boss], [_claim("shared", device="gpu-0", reserved_for=("low", "boss")), _claim("high-claim")])
    _, result, evicted = world.schedule(_pod("high", priority=1000, claim="high-claim"))
    assert evicted == []
    assert result is None or not result.nominated_node_name


def test_the_dry_run_leaves_the_cycle_state_of_the_scheduling_attempt_untouched() -> None:
    low = _pod("low", priority=0, claim="low-claim", node_name="node-1")
    world = _World([low], [_claim("low-claim", device="gpu-0", reserved_for=("low",)), _claim("high-claim")])
    high = _pod("high", priority=1000, claim="high-claim")
    state = CycleState()
    world.fwk.run_pre_filter(state, high)
    info = world.snapshot.get("node-1").clone()
    clone = state.clone()
    info.remove_pod(low)
    assert world.fwk.run_pre_filter_extension_remove_pod(clone, high, PodInfo(low), info).is_success()
    assert world.fwk.run_filter(clone, high, info).is_success()
    assert world.fwk.run_filter(state, high, world.snapshot.get("node-1")) == Status(
        Code.UnschedulableAndUnresolvable, CANNOT_ALLOCATE)
    info.add_pod(PodInfo(low))
    assert world.fwk.run_pre_filter_extension_add_pod(clone, high, PodInfo(low), info).is_success()
    assert world.fwk.run_filter(clone, high, info) == Status(Code.UnschedulableAndUnresolvable, CANNOT_ALLOCATE)
