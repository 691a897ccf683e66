"""Resource pools as the structured allocator sees them from one node (GatherPools).

Slices are resource.k8s.io/v1 ResourceSlice objects (plain mappings). Per pool only the
slices of its newest generation count; a pool is incomplete when that generation has
fewer slices than `resourceSliceCount`, invalid when a device name repeats in it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from framework.api.labels import NodeSelector


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    generation: int
    slices: list[Mapping[str, Any]] = field(default_factory=list)        # newest generation, all nodes
    targeting: list[Mapping[str, Any]] = field(default_factory=list)     # of those, reachable from the node
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""

    @property
    def pool_id(self) -> str:
        return f"{self.driver}/{self.name}"


def node_matches(node: Mapping[str, Any] | None, node_name: str, all_nodes: bool,
                 selector: Mapping[str, Any] | None) -> bool:
    """nodeMatches: a named node, every node, or a node selector; nothing set matches nothing."""
    if node_name:
        return node is not None and (node.get("metadata") or {}).get("name") == node_name
    if all_nodes:
        return True
    if selector is not None:
        if node is None:
            return False
        meta = node.get("metadata") or {}
        return NodeSelector.parse(selector, "nodeSelector").matches(meta.get("labels") or {}, meta.get("name", ""))
    return False


def _slice_targets_node(spec: Mapping[str, Any], node: Mapping[str, Any] | None, partitionable: bool) -> bool | None:
    """True/False whether the slice reaches the node; None when the slice is to be ignored."""
    if spec.get("perDeviceNodeSelection") is not None and not partitionable:
        return None
    if spec.get("nodeName") or spec.get("allNodes") or spec.get("nodeSelector") is not None:
        return node_matches(node, spec.get("nodeName") or "", bool(spec.get("allNodes")), spec.get("nodeSelector"))
    if spec.get("perDeviceNodeSelection"):
        return any(node_matches(node, d.get("nodeName") or "", bool(d.get("allNodes")), d.get("nodeSelector"))
                   for d in spec.get("devices") or [])
    return None  # an unknown future way of saying where devices are


def gather_pools(slices: Sequence[Mapping[str, Any]], node: Mapping[str, Any] | None,
                 partitionable: bool) -> list[Pool]:
    """The pools with a slice reachable from the node, in first-seen order.

    The pool's generation is the newest among the slices that reach the node; slices for
    other nodes count towards completeness only when they are of that generation (so a
    newer generation published for other nodes only does not replace this node's slices,
    as upstream's multi-host pool cases at v1.35 show)."""
    pools: dict[tuple[str, str], Pool] = {}
    elsewhere: list[tuple[tuple[str, str], int, Mapping[str, Any]]] = []
    for s in slices:
        spec = s.get("spec") or {}
        targets = _slice_targets_node(spec, node, partitionable)
        if targets is None:
            continue
        pool_spec = spec.get("pool") or {}
        key = (spec.get("driver", ""), pool_spec.get("name", ""))
        generation = int(pool_spec.get("generation", 0))
        if not targets:
            elsewhere.append((key, generation, s))
            continue
        pool = pools.get(key)
        if pool is None:
            pool = pools[key] = Pool(driver=key[0], name=key[1], generation=generation)
        elif generation < pool.generation:
            continue
        elif generation > pool.generation:
            pool.generation, pool.slices, pool.targeting = generation, [], []
        pool.slices.append(s)
        pool.targeting.append(s)
    for key, generation, s in elsewhere:
        pool = pools.get(key)
        if pool is not None and generation == pool.generation:
            pool.slices.append(s)
    for pool in pools.values():
        count = int(((pool.slices[0].get("spec") or {}).get("pool") or {}).get("resourceSliceCount", 0))
        pool.incomplete = len(pool.slices) != count
        pool.invalid, pool.invalid_reason = _invalid(pool)
    return list(pools.values())


def _invalid(pool: Pool) -> tuple[bool, str]:
    seen: set[str] = set()
    for s in pool.slices:
        for d in (s.get("spec") or {}).get("devices") or []:
            if d.get("name") in seen:
                return True, f"duplicate device name {d.get('name')}"
            seen.add(d.get("name"))
    return False, ""
