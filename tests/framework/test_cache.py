import random

import numpy as np

from framework.api.objects import Node, Pod
from framework.cache import Cache, Snapshot
from framework.node_table import ColumnarNodes, NodeTable
from tests.framework.test_columnar_equivalence import random_node, random_pod


def node(name, zone=None, cpu="4"):
    labels = {"topology.kubernetes.io/zone": zone} if zone else {}
    return Node({"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"cpu": cpu, "pods": "10"}}})


def pod(name, node_name="", cpu="1"):
    return Pod({"metadata": {"name": name}, "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}})


def test_snapshot_orders_nodes_round_robin_across_zones():
    cache = Cache()
    for n in [node("a1", "a"), node("a2", "a"), node("b1", "b"), node("a3", "a"), node("c1", "c")]:
        cache.add_node(n)
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert [n.name for n in snap.list()] == ["a1", "b1", "c1", "a2", "a3"]


def test_only_changed_nodes_are_copied_into_the_snapshot():
    cache = Cache()
    for n in ["n1", "n2", "n3"]:
        cache.add_node(node(n))
    snap = Snapshot()
    cache.update_snapshot(snap)
    before = {ni.name: ni for ni in snap.list()}
    cache.assume_pod(pod("p", "n2"), "n2")
    cache.update_snapshot(snap)
    after = {ni.name: ni for ni in snap.list()}
    assert after["n1"] is before["n1"] and after["n3"] is before["n3"]
    assert after["n2"] is not before["n2"]
    assert after["n2"].requested.milli_cpu == 1000
    assert before["n2"].requested.milli_cpu == 0


def test_forgetting_an_assumed_pod_frees_its_resources_and_add_confirms_it():
    cache = Cache()
    cache.add_node(node("n1"))
    p = pod("p", "n1")
    cache.assume_pod(p, "n1")
    assert cache.nodes["n1"].requested.milli_cpu == 1000
    cache.forget_pod(p)
    assert cache.nodes["n1"].requested.milli_cpu == 0
    cache.assume_pod(p, "n1")
    cache.add_pod(p)
    assert not cache.is_assumed(p)
    cache.forget_pod(p)  # confirmed pods are not forgotten
    assert cache.nodes["n1"].requested.milli_cpu == 1000
    cache.remove_pod(p)
    assert cache.nodes["n1"].requested.milli_cpu == 0


def test_pods_bound_before_their_node_arrives_count_once_it_does():
    cache = Cache()
    cache.add_pod(pod("early", "late-node"))
    cache.add_node(node("late-node"))
    assert cache.nodes["late-node"].requested.milli_cpu == 1000


def test_removed_nodes_leave_the_snapshot():
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    snap = Snapshot()
    cache.update_snapshot(snap)
    cache.remove_node("n1")
    cache.update_snapshot(snap)
    assert [n.name for n in snap.list()] == ["n2"]
    assert snap.get("n1") is None


def test_image_states_count_the_nodes_holding_each_image():
    def with_images(name, images):
        return Node({"metadata": {"name": name}, "status": {"images": [{"names": [i], "sizeBytes": 100} for i in images]}})

    snap = Snapshot.build([with_images("n1", ["nginx", "redis:6"]), with_images("n2", ["nginx:latest"])], [])
    assert snap.get("n1").image_states["nginx:latest"].num_nodes == 2
    assert snap.get("n1").image_states["redis:6"].num_nodes == 1


def test_the_node_table_kept_row_by_row_equals_one_built_from_the_snapshot_as_the_cluster_changes():
    rng = random.Random(3)
    cache = Cache()
    for i in range(30):
        cache.add_node(random_node(rng, i))
    snap = Snapshot()
    cache.update_snapshot(snap)
    placed: list[Pod] = []
    for step in range(300):
        names = cache.node_names()
        action = rng.random()
        if action < 0.5 or not placed:
            p = random_pod(rng, f"p{step}", rng.choice(names))
            cache.assume_pod(p, p.node_name)
            placed.append(p)
        elif action < 0.7:
            cache.forget_pod(placed.pop(rng.randrange(len(placed))))
        elif action < 0.8:
            cache.remove_pod(placed.pop(rng.randrange(len(placed))))
        elif action < 0.9:
            cache.update_node(random_node(rng, int(rng.choice(names).split("-")[1])))
        elif action < 0.95:
            cache.remove_node(rng.choice(names))
        else:
            cache.add_node(random_node(rng, 100 + step))
        cache.update_snapshot(snap)
        assert isinstance(snap.node_info_list, ColumnarNodes) and snap.node_info_list.table is snap.table
        assert list(snap.node_info_list.rows) == list(range(snap.num_nodes()))
        fresh = NodeTable.of(snap.list())
        for column in NodeTable.INT_COLUMNS + NodeTable.FLAG_COLUMNS:
            assert np.array_equal(getattr(snap.table, column), getattr(fresh, column)), (step, column)
        for key in ("topology.kubernetes.io/zone", "disk"):
            codes, values = snap.table.label_codes(key)
            assert [values[c] if c >= 0 else None for c in codes] == \
                [ni.node.labels.get(key) for ni in snap.list()], (step, key)
