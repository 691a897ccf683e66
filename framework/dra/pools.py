"""Resource pools as the structured allocator sees them from one node (GatherPools).

Slices are resource.k8s.io/v1 ResourceSlice objects (plain mappings). Per pool only the
slices of its newest generation count; a pool is incomplete when that generation has
fewer slices than `resourceSliceCount`, invalid when a device name repeats in it.

With DRAPartitionableDevices a slice may publish shared counter sets instead of devices
(such a slice belongs to its pool whatever node it names) and devices say which counters
they consume; a pool is then also invalid when a counter set name repeats or a device
consumes from a counter set or counter the pool does not publish. Without the gate such
slices, and slices with per-device node selection, are ignored as upstream ignores them."""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Mapping, Sequence

from framework.api.labels import NodeSelector
from framework.api.quantity import parse_quantity_text


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
    # DRAPartitionableDevices: counter set name -> counter -> amount the pool publishes, and
    # the slices of the generation that do not reach the node when upstream reads them
    # too (the node's own slices do not complete the pool), for the counters they use.
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    not_targeting: list[Mapping[str, Any]] = field(default_factory=list)

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


def _slice_targets_node(spec: Mapping[str, Any], node: Mapping[str, Any] | None, partitionable: bool) -> bool:
    """Whether the slice's devices are read for the node. A slice that is not (other
    nodes', or one the gates make the allocator ignore) still counts towards its pool's
    completeness, as upstream's checkSlicesInPool counts every slice of the generation."""
    if not partitionable and (spec.get("perDeviceNodeSelection") is not None or spec.get("sharedCounters")):
        return False
    if spec.get("sharedCounters"):
        return True
    if spec.get("nodeName") or spec.get("allNodes") or spec.get("nodeSelector") is not None:
        return node_matches(node, spec.get("nodeName") or "", bool(spec.get("allNodes")), spec.get("nodeSelector"))
    if spec.get("perDeviceNodeSelection"):
        return any(node_matches(node, d.get("nodeName") or "", bool(d.get("allNodes")), d.get("nodeSelector"))
                   for d in spec.get("devices") or [])
    return False  # an unknown future way of saying where devices are


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
        if partitionable and not pool.incomplete and not pool.invalid:
            if len(pool.targeting) != count:
                pool.not_targeting = [s for s in pool.slices if not any(s is t for t in pool.targeting)]
            pool.invalid_reason = _counter_sets(pool)
            pool.invalid = bool(pool.invalid_reason)
    return list(pools.values())


def _counter_sets(pool: Pool) -> str:
    """Fills pool.counter_sets; the reason the pool is invalid, or ""."""
    for s in pool.targeting:
        for counter_set in (s.get("spec") or {}).get("sharedCounters") or []:
            name = counter_set.get("name", "")
            if name in pool.counter_sets:
                return f"duplicate counter set name {name}"
            pool.counter_sets[name] = {c: parse_quantity_text(str((v or {}).get("value", "0")))
                                       for c, v in (counter_set.get("counters") or {}).items()}
    for s in pool.targeting + pool.not_targeting:
        for d in (s.get("spec") or {}).get("devices") or []:
            for consumption in d.get("consumesCounters") or []:
                counters = pool.counter_sets.get(consumption.get("counterSet", ""))
                if counters is None:
                    return f"counter set {consumption.get('counterSet', '')} not found"
                for c in consumption.get("counters") or {}:
                    if c not in counters:
                        return f"counter {c} not found in counter set {consumption.get('counterSet', '')}"
    return ""


def _invalid(pool: Pool) -> tuple[bool, str]:
    seen: set[str] = set()
    for s in pool.targeting:
        for d in (s.get("spec") or {}).get("devices") or []:
            if d.get("name") in seen:
                return True, f"duplicate device name {d.get('name')}"
            seen.add(d.get("name"))
    return False, ""
