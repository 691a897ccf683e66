"""DefaultPreemption's victimless check reads the lowest priority of a pod on the
candidate nodes from a column refreshed by node generation (LowestPriorities): after
any sequence of pods added and removed, it is the lowest priority actually there."""
from __future__ import annotations

import random

import pytest

from framework.api.objects import Node, Pod
from framework.cache import Cache, Snapshot
from framework.plugins.defaultpreemption.lowest_priorities import PAD_PRIORITY as _PAD_PRIORITY, LowestPriorities


def _node(i: int) -> Node:
    return Node({"metadata": {"name": f"n{i}"}, "status": {"allocatable": {"cpu": "64", "pods": "110"}}})


def _pod(name: str, node: str, priority: int) -> Pod:
    return Pod({"metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"nodeName": node, "priority": priority, "containers": [{"name": "c"}]}})


def _truth(snapshot: Snapshot, names: set[str]) -> int:
    found = [pi.pod.priority for ni in snapshot.list() if ni.name in names for pi in ni.pods]
    return min(found, default=int(_PAD_PRIORITY))


@pytest.mark.parametrize("seed", range(40))
def test_the_column_says_the_lowest_priority_on_the_nodes_after_every_change(seed: int) -> None:
    rng = random.Random(seed)
    cache, snapshot, lowest = Cache(), Snapshot(), LowestPriorities()
    for i in range(rng.randrange(1, 12)):
        cache.add_node(_node(i))
    placed: list[Pod] = []
    for step in range(30):
        if placed and rng.random() < 0.4:
            cache.remove_pod(placed.pop(rng.randrange(len(placed))))
        else:
            pod = _pod(f"p{step}", f"n{rng.randrange(len(snapshot.list()) or 1)}", rng.choice([-5, 0, 0, 7, 100]))
            cache.add_pod(pod)
            placed.append(pod)
        cache.update_snapshot(snapshot)
        assert lowest.refresh(snapshot)
        nodes = snapshot.list()
        some = [ni for ni in nodes if rng.random() < 0.5]
        assert lowest.of(snapshot, nodes) == _truth(snapshot, {ni.name for ni in nodes})
        assert lowest.of(snapshot, some) == _truth(snapshot, {ni.name for ni in some})
