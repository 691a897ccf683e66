"""For `ksched explain`: which of a pod's claims keeps it off a node, and why, in
ksched's own words (upstream's Filter names no claim); DynamicResources.explain_node."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from framework.api.dra_kinds import ResourceClaim
from framework.api.labels import NodeSelector
from framework.cache import NodeInfo
from framework.dra.allocator import Allocator
from framework.plugins.dynamicresources.claims import kobj as _kobj


def _allocates(allocator: Allocator, node: Any, claims: list[Any]) -> bool:
    try:
        return len(allocator.allocate(node, claims)) == len(claims)
    except ValueError:
        return False


def claims_not_satisfied(claims: Sequence[ResourceClaim], available_on: Mapping[int, NodeSelector],
                         to_allocate: Sequence[int], allocator: Allocator | None,
                         node_info: NodeInfo) -> list[dict[str, str]]:
    """Per claim that cannot be had on the node: {"claim": namespace/name, "why": ...};
    `available_on`: an allocated claim's node selector by its index, `to_allocate`: the
    indices of the claims still to allocate, `allocator`: PreFilter's."""
    node = node_info.node
    labels, name = (node.labels, node.name) if node is not None else ({}, "")
    out: list[dict[str, str]] = []
    for index, sel in sorted(available_on.items()):
        if not sel.matches(labels, name):
            out.append({"claim": _kobj(claims[index]), "why": "allocated already, for devices this node cannot use"})
    if allocator is None:
        return out
    raw_node = node.raw if node is not None else None
    failed_alone = False
    for index in to_allocate:
        claim = claims[index]
        if _allocates(allocator, raw_node, [claim.raw]):
            continue
        failed_alone = True
        free = Allocator(features=allocator.features, classes=allocator.classes, slices=allocator.slices,
                         allocated=set())
        why = ("every device that matches is in use by other claims"
               if _allocates(free, raw_node, [claim.raw]) else "no device on this node matches")
        out.append({"claim": _kobj(claim), "why": why})
    pending = [claims[i].raw for i in to_allocate]
    if not failed_alone and len(pending) > 1 and not _allocates(allocator, raw_node, pending):
        out.append({"claim": ", ".join(_kobj(claims[i]) for i in to_allocate),
                    "why": "each fits alone, but not all together"})
    return out
