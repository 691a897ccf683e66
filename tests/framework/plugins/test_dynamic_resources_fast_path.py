"""DynamicResources' fast Filter path (device_index.py, the tracker's incremental held
devices) against the structured allocator on every node: random slices, classes,
claims and pods give the same Filter verdicts, the same allocations, and never one
device in two claims."""
from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from framework.api.dra_kinds import DeviceClass, ResourceClaim, ResourceSlice
from framework.api.objects import KubeObject, Node, Pod
from framework.cache import Snapshot
from framework.handle import FrameworkHandle, InMemoryObjects
from framework.interface import CycleState, Status
from framework.plugins.dynamicresources.device_index import DeviceIndex
from framework.plugins.dynamicresources.dynamic_resources import DynamicResources
from framework.plugins.dynamicresources.tracker import DeviceTracker
from tests import dra_manifests as m

NODE_NAMES = ["node-1", "node-2", "node-3"]
MODEL_A = f'device.attributes["{m.DRIVER}"].model == "a"'
MODEL_B = f'device.attributes["{m.DRIVER}"].model == "b"'
CLASSES = [m.device_class("any"), m.device_class("model-a", MODEL_A)]


def _slice(node: str, models: list[str], *, all_nodes: bool = False, incomplete: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"driver": m.DRIVER, "pool": {"name": node, "generation": 1,
                                                        "resourceSliceCount": 2 if incomplete else 1},
                            "devices": [{"name": f"dev-{i}", "attributes": {"model": {"string": model}}}
                                        for i, model in enumerate(models)]}
    if all_nodes:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return {"apiVersion": m.V1, "kind": "ResourceSlice", "metadata": {"name": f"{node}-slice"}, "spec": spec}


def _claim(name: str, requests: list[tuple[str, int, bool]]) -> dict[str, Any]:
    out = []
    for i, (cls, count, only_b) in enumerate(requests):
        exactly: dict[str, Any] = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
        if only_b:
            exactly["selectors"] = [{"cel": {"expression": MODEL_B}}]
        out.append({"name": f"r{i}", "exactly": exactly})
    return {"apiVersion": m.V1, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid", "resourceVersion": "1"},
            "spec": {"devices": {"requests": out}}}


def _pod(name: str, claims: list[str]) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": f"{name}-uid"},
                "spec": {"containers": [{"name": "c", "image": "x"}],
                         "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims]}})


models = st.lists(st.sampled_from(["a", "b"]), max_size=4)
request = st.tuples(st.sampled_from(["any", "model-a"]), st.integers(1, 2), st.booleans())
pod_claims = st.lists(st.lists(request, min_size=1, max_size=2), min_size=1, max_size=2)


@st.composite
def worlds(draw: Any) -> tuple[list[dict[str, Any]], list[list[list[tuple[str, int, bool]]]], list[bool]]:
    slices = [_slice(n, draw(models)) for n in NODE_NAMES if draw(st.booleans()) or n == "node-1"]
    extra = draw(st.sampled_from(["none", "shared", "incomplete"]))
    if extra != "none":
        slices.append(_slice("pool-x", draw(models), all_nodes=extra == "shared", incomplete=extra == "incomplete"))
    pods = draw(st.lists(pod_claims, min_size=1, max_size=8))
    deletes = draw(st.lists(st.booleans(), min_size=len(pods), max_size=len(pods)))
    return slices, pods, deletes


class _Side:
    def __init__(self, slices: list[dict[str, Any]], fast: bool) -> None:
        nodes = [Node({"metadata": {"name": n}}) for n in NODE_NAMES + ["pool-x"]]
        self.snap = Snapshot.build(nodes, [])
        base: list[KubeObject] = [DeviceClass(c) for c in CLASSES] + [ResourceSlice(s) for s in slices]
        self.handle = FrameworkHandle(snapshot=self.snap, objects=InMemoryObjects(base))
        self.plugin = DynamicResources(self.handle, DeviceTracker())
        self.plugin.fast_filter = fast

    def schedule(self, pod: Pod) -> tuple[Status | None, dict[str, Status | None], str | None]:
        state = CycleState()
        _, pre = self.plugin.pre_filter(state, pod, self.snap.list())
        if pre is not None:
            return pre, {}, None
        nodes = self.snap.list()
        if self.plugin.fast_filter:  # the columnar form the runtime calls
            verdicts = dict(zip([ni.name for ni in nodes], self.plugin.filter_nodes(state, pod, nodes)))
        else:
            verdicts = {ni.name: self.plugin.filter(state, pod, ni) for ni in nodes}
        chosen = next((n for n in sorted(verdicts) if verdicts[n] is None), None)
        if chosen is not None:
            assert self.plugin.reserve(state, pod, chosen) is None
            assert asyncio.run(self.plugin.pre_bind(state, pod, chosen)) is None
        return None, verdicts, chosen

    def allocations(self) -> dict[str, Any]:
        return {c.name: c.status.get("allocation") for c in self.handle.list_objects("ResourceClaim")}


@settings(max_examples=150, deadline=None)
@given(worlds())
def test_the_fast_filter_path_decides_and_allocates_as_the_allocator_on_every_node_and_no_device_is_given_twice(
        world: tuple[list[dict[str, Any]], list[list[list[tuple[str, int, bool]]]], list[bool]]) -> None:
    slices, pods, deletes = world
    fast, reference = _Side(slices, True), _Side(slices, False)
    for p, (claims, delete_after) in enumerate(zip(pods, deletes)):
        names = [f"c{p}-{i}" for i in range(len(claims))]
        for side in (fast, reference):
            for name, requests in zip(names, claims):
                side.handle.objects.put(ResourceClaim(_claim(name, requests)))
        pod = _pod(f"p{p}", names)
        assert fast.schedule(pod) == reference.schedule(pod)
        assert fast.allocations() == reference.allocations()
        held = [(r["pool"], r["device"]) for a in fast.allocations().values() if a
                for r in a["devices"]["results"]]
        assert len(held) == len(set(held))
        if delete_after:  # the pod's claims go away (pod deleted): their devices are free again
            for side in (fast, reference):
                for name in names:
                    side.handle.objects.delete("ResourceClaim", f"default/{name}")


def test_a_slice_changed_between_pods_is_seen_by_the_fast_path() -> None:
    side = _Side([_slice("node-1", ["b"])], True)
    side.handle.objects.put(ResourceClaim(_claim("c0", [("model-a", 1, False)])))
    _, verdicts, chosen = side.schedule(_pod("p0", ["c0"]))
    assert chosen is None
    side.handle.objects.put(ResourceSlice(_slice("node-1", ["b", "a"])))
    side.handle.objects.put(ResourceClaim(_claim("c1", [("model-a", 1, False)])))
    _, verdicts, chosen = side.schedule(_pod("p1", ["c1"]))
    assert chosen == "node-1"
    assert side.allocations()["c1"]["devices"]["results"][0]["device"] == "dev-1"


def test_a_device_freed_by_a_deleted_claim_is_given_to_the_next_pod() -> None:
    side = _Side([_slice("node-1", ["a"])], True)
    side.handle.objects.put(ResourceClaim(_claim("c0", [("any", 1, False)])))
    assert side.schedule(_pod("p0", ["c0"]))[2] == "node-1"
    side.handle.objects.put(ResourceClaim(_claim("c1", [("any", 1, False)])))
    assert side.schedule(_pod("p1", ["c1"]))[2] is None
    side.handle.objects.delete("ResourceClaim", "default/c0")
    assert side.schedule(_pod("p1", ["c1"]))[2] == "node-1"


def test_the_columnar_filter_gives_each_node_of_a_subset_in_any_order_its_per_node_verdict() -> None:
    side = _Side([_slice("node-1", ["a", "a"]), _slice("node-2", ["b"]), _slice("node-3", ["a"])], True)
    side.handle.objects.put(ResourceClaim(_claim("c0", [("model-a", 2, False)])))
    assert side.schedule(_pod("p0", ["c0"]))[2] == "node-1"
    side.handle.objects.put(ResourceClaim(_claim("c1", [("model-a", 1, False)])))
    pod = _pod("p1", ["c1"])
    state = CycleState()
    assert side.plugin.pre_filter(state, pod, side.snap.list())[1] is None
    subset = side.snap.list().take([2, 0, 1])
    columns = side.plugin.filter_nodes(state, pod, subset)
    assert columns == [side.plugin.filter(state, pod, ni) for ni in subset]
    assert [ni.name for ni, v in zip(subset, columns) if v is None] == ["node-3"]


def test_nodes_whose_devices_are_alike_share_one_cel_verdict_and_different_devices_get_their_own() -> None:
    nodes = [f"n{i}" for i in range(20)]
    index = DeviceIndex([_slice(n, ["a", "b"] if n != "n7" else ["b", "c"]) for n in nodes])
    key = ((MODEL_A,), ())
    selected = {n: index.selected(n, key) for n in nodes}
    assert selected["n0"] == (f"{m.DRIVER}/n0/dev-0",)
    assert selected["n7"] == ()
    assert all(selected[n] == (f"{m.DRIVER}/{n}/dev-0",) for n in nodes if n != "n7")
    # three device shapes (models a, b, c): three evaluations of the selector, not forty
    assert len(index._verdicts) == 3


def test_a_claims_plain_request_is_read_once_per_spec_and_class_object_and_again_when_either_is_another() -> None:
    index = DeviceIndex([m.resource_slice()])
    spec = m.claim_spec(count=2)
    first, second = ({**m.resource_claim(name), "spec": spec} for name in ("made-1", "made-2"))  # one template's spec
    classes = {"gpu.example.com": m.device_class()}
    single = index.single_request(0, first, classes)
    assert single is not None and single.count == 2
    assert index.single_request(0, second, classes) is single
    changed = {"gpu.example.com": m.device_class(expression='device.driver == "other.example.com"')}
    again = index.single_request(0, second, changed)
    assert again is not single and again is not None and again.selectors[0] == ('device.driver == "other.example.com"',)
    assert index.single_request(0, second, {}) is None  # its class deleted: the allocator words the error
    other = index.single_request(0, {**second, "spec": m.claim_spec(count=3)}, classes)
    assert other is not None and other.count == 3


def test_when_every_node_has_enough_free_devices_the_columnar_filter_passes_all_and_reserve_allocates_as_the_allocator(
        ) -> None:
    slices = [_slice(n, ["a", "b", "a"]) for n in NODE_NAMES + ["pool-x"]]  # three pods fit on the first node
    fast, reference = _Side(slices, True), _Side(slices, False)
    for p in range(5):  # the fourth finds the first node full
        for side in (fast, reference):
            side.handle.objects.put(ResourceClaim(_claim(f"c{p}", [("any", 1, False)])))
        pod = _pod(f"p{p}", [f"c{p}"])
        state = CycleState()
        assert fast.plugin.pre_filter(state, pod, fast.snap.list())[1] is None
        nodes = fast.snap.list()
        verdicts = fast.plugin.filter_nodes(state, pod, nodes)
        assert (verdicts == [None] * len(nodes)) == (p < 3)
        assert fast.schedule(pod) == reference.schedule(pod)
        assert fast.allocations() == reference.allocations()
