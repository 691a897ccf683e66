"""A topology-constrained gang on the pod-by-pod path (scheduler extenders configured,
so the whole-group cycle is bypassed): GangScheduling's PreFilter keeps every member in
one domain of the group's label, chosen for the group (best fit by free capacity) and
pinned by the members already placed; a domain the group was rejected in is not
chosen again until every one was tried."""
from __future__ import annotations

import random
from actors.clock import FakeClock
from actors.pipeline import Pipeline
from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.handle import FrameworkHandle
from framework.plugins.gangscheduling.topology_pin import DomainPin
from framework.workload.policy import GroupPolicy
from tests.actors.test_extenders import Recorder, cfg, scores, serve
from tests.gang.test_group_cycle_pipeline import member
from tests.gang.test_group_topology_pipeline import RACK, racks, topo_gang


async def test_with_an_extender_a_rack_constrained_gang_lands_in_one_rack_pod_by_pod() -> None:
    rec = Recorder({"prioritize": scores({})})
    async with serve(rec) as url:
        async with Pipeline(cfg({"urlPrefix": url, "prioritizeVerb": "prioritize", "weight": 1}),
                            clock=FakeClock(), rand=random.Random(1)) as p:
            await p.client.apply(racks(2, 2))
            await p.client.apply([topo_gang("train", 4, RACK)])
            await p.client.apply([member(f"t{i}", 1, "train") for i in range(4)])
            await p.settle(max_rounds=None)
            pods = {o.name: o.node_name for o in p.store.peek_all("Pod") if isinstance(o, Pod)}
            assert p.scheduler.group_cycle.cycles == 0  # pod by pod
    assert all(pods.values()) and len({n.split("-")[0] for n in pods.values()}) == 1
    assert "prioritize" in rec.verbs()  # the extender was asked (not with one feasible node)


def _handle(racks_free: dict[str, int]) -> FrameworkHandle:
    nodes = []
    for rack, cpu in racks_free.items():
        alloc = {"cpu": str(cpu), "memory": "8Gi", "pods": "110"}
        nodes.append(Node({"metadata": {"name": f"{rack}-0", "labels": {RACK: rack}},
                           "status": {"allocatable": alloc, "capacity": alloc}}))
    return FrameworkHandle(snapshot=Snapshot.build(nodes, []))


def _members(n: int) -> list[Pod]:
    return [Pod(member(f"m{i}", 1, "g")) for i in range(n)]


def test_the_group_domain_is_the_best_fit_and_a_rejected_one_is_tried_last() -> None:
    handle = _handle({"r0": 8, "r1": 2, "r2": 3})
    policy = GroupPolicy(name="g", namespace="default", min_count=2, required_topology_key=RACK)
    pin = DomainPin()
    got, st = pin.nodes_for(handle, policy, [], _members(2))
    assert st is None and got is not None and got.node_names == {"r1-0"}  # the least free that holds 2 cpu
    pin.rejected(("default", "g"))
    got, _ = pin.nodes_for(handle, policy, [], _members(2))
    assert got is not None and got.node_names == {"r2-0"}
    pin.rejected(("default", "g"))
    pin.nodes_for(handle, policy, [], _members(2))
    pin.rejected(("default", "g"))
    got, _ = pin.nodes_for(handle, policy, [], _members(2))
    assert got is not None and got.node_names == {"r1-0"}  # every rack tried: start over


def test_placed_members_pin_the_domain_and_no_rack_big_enough_is_unschedulable_naming_each() -> None:
    handle = _handle({"r0": 8, "r1": 1})
    policy = GroupPolicy(name="g", namespace="default", min_count=4, required_topology_key=RACK)
    got, st = DomainPin().nodes_for(handle, policy, [("default/m0", "r1-0")], _members(3))
    assert st is None and got is not None and got.node_names == {"r1-0"}
    got, st = DomainPin().nodes_for(_handle({"r0": 2, "r1": 1}), policy, [], _members(4))
    assert got is None and st is not None and "no topology domain can hold the pod group" in st.message()
    assert f"{RACK}=r0 (1 nodes): skipped" in st.message() and f"{RACK}=r1" in st.message()
