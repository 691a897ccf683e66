"""DynamicResources' claim writes ride with the binding when the binding cycle offers it
(framework/bind_writes.py): PreBind writes nothing, DefaultBinder writes the claims and
the binding together, and a binding that fails leaves the claim unwritten and its device
free after Unreserve."""
from __future__ import annotations

import asyncio
from typing import Any, Mapping

from framework.api.dra_kinds import DeviceClass, ResourceClaim, ResourceSlice
from framework.api.objects import KubeObject, Node, Pod
from framework.bind_writes import StatusWrite, Update as BindUpdate, offer
from framework.cache import Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import Code, CycleState
from framework.plugins.defaultbinder.default_binder import DefaultBinder
from framework.plugins.dynamicresources.dynamic_resources import DynamicResources
from framework.plugins.dynamicresources.tracker import DeviceTracker
from tests import dra_manifests as m


def _pod(name: str, claim: str) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid"},
                "spec": {"containers": [{"name": "c", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}],
                         "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}]}})


def _claim(name: str) -> ResourceClaim:
    raw: dict[str, Any] = m.resource_claim(name, count=1)
    raw["metadata"].update(uid=f"{name}-uid", resourceVersion="5")
    return ResourceClaim(raw)


class _Store:
    """What the Pipeline gives the handle, over the handle's objects: the binding with its
    updates in one call (failing when told to), and the other writes counted."""

    def __init__(self, objects: InMemoryObjects) -> None:
        self.objects = objects
        self.fail = False
        self.calls: list[tuple[str, int]] = []
        self.carried: list[BindUpdate] = []

    async def bind_with_updates(self, pod: Pod, node: str, updates: list[BindUpdate]) -> list[dict[str, Any]]:
        self.calls.append(("bind_with_updates", len(updates)))
        self.carried = updates
        if self.fail:
            raise RuntimeError(f'Pod "default/{pod.name}" not found')
        stored = []
        for update in updates:
            obj = update.as_object() if isinstance(update, StatusWrite) else update
            raw = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "6"}}
            self.objects.put(ResourceClaim(raw))
            stored.append(raw)
        return stored

    async def bind(self, pod: Pod, node: str) -> None:
        self.calls.append(("bind", 0))

    async def update(self, obj: BindUpdate) -> dict[str, Any]:
        if isinstance(obj, StatusWrite):
            self.calls.append(("update_status", 1))
            return obj.as_object()
        self.calls.append(("update", 1))
        return dict(obj)


def _world() -> tuple[DynamicResources, DefaultBinder, _Store, Snapshot]:
    snap = Snapshot.build([Node({"metadata": {"name": "node-1"}})], [])
    base: list[KubeObject] = [DeviceClass(m.device_class()), ResourceSlice(m.resource_slice("node-1", gpus=1)),
                              _claim("a"), _claim("b")]
    objects = InMemoryObjects(base)
    store = _Store(objects)
    handle = FrameworkHandle(snapshot=snap, objects=objects, binder=store.bind, updater=store.update,
                             binder_with_updates=store.bind_with_updates)
    return DynamicResources(handle, DeviceTracker()), DefaultBinder(handle), store, snap


def _claim_spec(plugin: DynamicResources, name: str) -> Any:
    return plugin._handle.get_object("ResourceClaim", "default", name).raw["spec"]


def _reserved(plugin: DynamicResources, pod: Pod, snap: Snapshot) -> CycleState:
    state = CycleState()
    assert plugin.pre_filter(state, pod, snap.list())[1] is None
    assert plugin.filter_nodes(state, pod, snap.list()) == [None]
    assert plugin.reserve(state, pod, "node-1") is None
    return state


def test_with_the_offer_pre_bind_writes_nothing_and_the_binder_writes_the_claim_with_the_binding() -> None:
    plugin, binder, store, snap = _world()
    pod = _pod("p1", "a")
    state = _reserved(plugin, pod, snap)
    offer(state)
    assert asyncio.run(plugin.pre_bind(state, pod, "node-1")) is None
    assert store.calls == []
    assert asyncio.run(binder.bind(state, pod, "node-1")) is None
    assert store.calls == [("bind_with_updates", 1)]
    # the claim goes as a status-only write, its finalizer the one metadata change carried
    [carried] = store.carried
    assert isinstance(carried, StatusWrite) and carried.finalizer == "resource.kubernetes.io/delete-protection"
    assert carried.obj["spec"] is _claim_spec(plugin, "a")
    claim = plugin.tracker.current(_claim("a"))  # the tracker holds the stored claim
    assert claim.status["reservedFor"] == [{"resource": "pods", "name": "p1", "uid": "p1-uid"}]
    assert claim.status["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    second = _pod("p2", "b")
    state2 = CycleState()
    plugin.pre_filter(state2, second, snap.list())
    assert [s.code if s else None for s in plugin.filter_nodes(state2, second, snap.list())] == [
        Code.UnschedulableAndUnresolvable]


def test_a_binding_that_fails_leaves_the_claim_unwritten_and_unreserve_frees_its_device() -> None:
    plugin, binder, store, snap = _world()
    store.fail = True
    pod = _pod("p1", "a")
    state = _reserved(plugin, pod, snap)
    offer(state)
    assert asyncio.run(plugin.pre_bind(state, pod, "node-1")) is None
    status = asyncio.run(binder.bind(state, pod, "node-1"))
    assert status is not None and status.code == Code.Error
    plugin.unreserve(state, pod, "node-1")
    assert store.calls == [("bind_with_updates", 1)]  # no claim update of its own: nothing was written
    assert "allocation" not in (plugin._handle.get_object("ResourceClaim", "default", "a").status or {})
    assert _reserved(plugin, _pod("p2", "b"), snap) is not None  # the device is free for the next pod


def test_without_the_offer_pre_bind_writes_the_claim_itself_and_the_binding_is_plain() -> None:
    plugin, binder, store, snap = _world()
    pod = _pod("p1", "a")
    state = _reserved(plugin, pod, snap)
    assert asyncio.run(plugin.pre_bind(state, pod, "node-1")) is None
    assert asyncio.run(binder.bind(state, pod, "node-1")) is None
    # as upstream's bindClaim: the finalizer with an Update, then the status with UpdateStatus
    assert store.calls == [("update", 1), ("update_status", 1), ("bind", 0)]
