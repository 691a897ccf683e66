"""`ksched explain` for DynamicResources: per node, which of the pod's claims keep it off
the node and why, in ksched's own words (upstream's Filter names no claim): allocated
for devices the node cannot use, every matching device in use by other claims, no device
on the node matches, or each claim fits alone but not all together."""
from __future__ import annotations

from typing import Any

from framework.cache import NodeInfo
from framework.dra.allocator import Allocator


def _kobj(claim: Any) -> str:
    return f"{claim.namespace}/{claim.name}"


def _allocates(allocator: Allocator, node: Any, claims: list[Any]) -> bool:
    try:
        return len(allocator.allocate(node, claims)) == len(claims)
    except ValueError:
        return False


def claims_keeping_off(s: Any, node_info: NodeInfo) -> list[dict[str, str]]:
    """`s` is the plugin's cycle state for the pod (its claims, what PreFilter prepared)."""
    node = node_info.node
    labels, name = (node.labels, node.name) if node is not None else ({}, "")
    out: list[dict[str, str]] = []
    for index, sel in sorted(s.available_on.items()):
        if not sel.matches(labels, name):
            out.append({"claim": _kobj(s.claims[index]), "why": "allocated already, for devices this node cannot use"})
    allocator = s.allocator
    if allocator is None:
        return out
    raw_node = node.raw if node is not None else None
    failed_alone = False
    for index in s.to_allocate():
        claim = s.claims[index]
        if _allocates(allocator, raw_node, [claim.raw]):
            continue
        failed_alone = True
        free = Allocator(features=allocator.features, classes=allocator.classes, slices=allocator.slices,
                         allocated=set())
        why = ("every device that matches is in use by other claims"
               if _allocates(free, raw_node, [claim.raw]) else "no device on this node matches")
        out.append({"claim": _kobj(claim), "why": why})
    pending = [s.claims[i].raw for i in s.to_allocate()]
    if not failed_alone and len(pending) > 1 and not _allocates(allocator, raw_node, pending):
        out.append({"claim": ", ".join(_kobj(s.claims[i]) for i in s.to_allocate()),
                    "why": "each fits alone, but not all together"})
    return out
