"""NodeInfo.clone copies only the pod list and shares every other field, which
NodeInfo's own methods replace rather than change in place. Held against the full copy
(every field copied, as before) over random clusters and event sequences: the Cache and
its Snapshot end the same, no NodeInfo a snapshot handed out changes afterwards, and a
copy changed as preemption's dry runs change theirs leaves its original as it was."""
import random

import pytest
from hypothesis import given, settings, strategies as st

from framework.api.resources import Resource
from framework.cache import Cache, Snapshot
from framework.node_info import NodeInfo, next_generation
from tests.framework.test_cache import node, pod
from tests.framework.test_cache_confirm_in_place import random_steps, state, with_volumes
from tests.framework.test_columnar_equivalence import random_node, random_pod


def full_copy(self: NodeInfo) -> NodeInfo:
    """The clone before sharing: every field copied."""
    c = NodeInfo.__new__(NodeInfo)
    c.node, c.name, c.allocatable, c.generation = self.node, self.name, self.allocatable, self.generation
    c.pods = list(self.pods)
    c.pods_with_affinity = list(self.pods_with_affinity)
    c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
    c.used_ports = self.used_ports.clone()
    c.requested = self.requested.clone()
    c.non_zero_requested = self.non_zero_requested.clone()
    c.image_states = dict(self.image_states)
    c.pvc_ref_counts = dict(self.pvc_ref_counts)
    return c


def values(ni: NodeInfo) -> tuple:
    """What a NodeInfo holds, by value (pods by identity)."""
    r, nz = ni.requested, ni.non_zero_requested
    return (ni.name, [id(pi.pod) for pi in ni.pods], [id(pi.pod) for pi in ni.pods_with_affinity],
            [id(pi.pod) for pi in ni.pods_with_required_anti_affinity],
            (r.milli_cpu, r.memory, r.ephemeral_storage, r.allowed_pod_number, sorted(r.scalar.items())),
            (nz.milli_cpu, nz.memory, nz.ephemeral_storage, nz.allowed_pod_number, sorted(nz.scalar.items())),
            sorted((ip, sorted(s)) for ip, s in ni.used_ports.ports.items()), sorted(ni.pvc_ref_counts.items()),
            sorted((k, v.size, v.num_nodes) for k, v in ni.image_states.items()), ni.generation)


def random_world(seed: int, num_nodes: int) -> tuple[list, list[tuple]]:
    """Nodes and a sequence of the Cache's events on them."""
    rng = random.Random(seed)
    nodes = [random_node(rng, i) for i in range(num_nodes)]
    return nodes, random_steps(rng, nodes)


def run(world: tuple[list, list[tuple]], share: bool) -> list[tuple]:
    """The Cache and Snapshot after each of the world's events (pods by identity)."""
    nodes, steps = world
    with pytest.MonkeyPatch.context() as m:
        if not share:
            m.setattr(NodeInfo, "clone", full_copy)
        base = next_generation()
        cache, snap = Cache(), Snapshot()
        for n in nodes:
            cache.add_node(n)
        cache.update_snapshot(snap)
        handed_out: dict[int, tuple[NodeInfo, tuple]] = {}
        seen = []
        for op, *args in steps:
            getattr(cache, op)(*args)
            cache.update_snapshot(snap)
            for ni in snap.list():
                handed_out.setdefault(id(ni), (ni, values(ni)))
            # Every NodeInfo a snapshot held is as it was when first handed out.
            assert all(values(ni) == was for ni, was in handed_out.values())
            seen.append(state(cache, snap, base))
        return seen


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6))
def test_shared_copies_leave_the_cache_and_every_snapshot_as_full_copies_do(seed, num_nodes):
    world = random_world(seed, num_nodes)
    shared, full = (run(world, share) for share in (True, False))
    assert shared == full


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_copy_changed_as_a_dry_run_does_leaves_its_original_and_matches_a_full_copy(seed):
    rng = random.Random(seed)
    original = NodeInfo(random_node(rng, 0))
    for i in range(rng.randint(0, 6)):
        p = random_pod(rng, f"p{i}", "node-0")
        original.add_pod(with_volumes(rng, p) if rng.random() < 0.3 else p)
    before = values(original)
    shared, full = original.clone(), full_copy(original)
    for i in range(rng.randint(1, 6)):
        if original.pods and rng.random() < 0.5:
            victim = rng.choice(shared.pods).pod if shared.pods else None
            if victim is not None:
                assert shared.remove_pod(victim) == full.remove_pod(victim)
        else:
            p = random_pod(rng, f"q{i}", "node-0")
            p = with_volumes(rng, p) if rng.random() < 0.3 else p
            shared.add_pod(p)
            full.add_pod(p)
        assert values(original) == before
        assert values(shared)[:-1] == values(full)[:-1]  # (generations move on each)


def test_a_copy_shares_all_but_its_pod_list_until_a_change_replaces_a_field():
    ni = NodeInfo(node("n1"))
    ni.add_pod(pod("a", "n1"))
    c = ni.clone()
    assert c.pods == ni.pods and c.pods is not ni.pods
    assert c.requested is ni.requested and c.used_ports is ni.used_ports and c.pvc_ref_counts is ni.pvc_ref_counts
    c.add_pod(pod("b", "n1"))
    assert c.requested is not ni.requested and ni.requested.milli_cpu == 1000 and c.requested.milli_cpu == 2000
    assert len(ni.pods) == 1


def test_plus_is_add_or_sub_on_a_copy():
    a = Resource(1000, 2048, 5, 3, {"example.com/gpu": 2})
    b = Resource(250, 1024, 0, 1, {"example.com/gpu": 1, "example.com/fpga": 1})
    for sign, method in ((1, Resource.add), (-1, Resource.sub)):
        want = a.clone()
        method(want, b)
        got = a.plus(b, sign)
        assert got == want and got.scalar == want.scalar and got is not a
    assert a == Resource(1000, 2048, 5, 3, {"example.com/gpu": 2})


def test_plus_cpu_memory_is_a_copy_with_cpu_and_memory_added():
    for a in (Resource(1000, 2048, 5, 3, {"example.com/gpu": 2}), Resource()):
        before = a.clone()
        got = a.plus_cpu_memory(-250, 4096)
        want = a.clone()
        want.milli_cpu, want.memory = want.milli_cpu - 250, want.memory + 4096
        assert got == want and got.scalar == want.scalar and got is not a and got.scalar is not a.scalar
        assert a == before
