"""The quota tree: ClusterQueues and Cohorts as nodes with per (flavor, resource)
quota, subtree quota and usage (Kueue's pkg/cache/scheduler/resource_node.go).

A ClusterQueue is a leaf; a Cohort holds its own quota plus what its children lend
up. Usage of a ClusterQueue is what its admitted workloads hold; a Cohort's usage is
what its children use beyond the part they keep private (localQuota).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from framework.kueue.amount import FR, UNLIMITED, add, sub


@dataclass(frozen=True, slots=True)
class Quota:
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(eq=False)
class Node:
    """One node of a cohort tree. Subclassed by the ClusterQueue and Cohort snapshots."""

    name: str
    quotas: dict[FR, Quota] = field(default_factory=dict)
    subtree: dict[FR, int] = field(default_factory=dict)
    usage: dict[FR, int] = field(default_factory=dict)
    parent: "CohortNode | None" = None
    weight: float = 1.0

    is_cq = False

    # --- the rules of resource_node.go ---
    def local_quota(self, fr: FR) -> int:
        q = self.quotas.get(fr)
        if q is not None and q.lending_limit is not None:
            return max(0, sub(self.subtree.get(fr, 0), q.lending_limit))
        return 0

    def local_available(self, fr: FR) -> int:
        return max(0, sub(self.local_quota(fr), self.usage.get(fr, 0)))

    def raw_available(self, fr: FR) -> int:
        if self.parent is None:
            return sub(self.subtree.get(fr, 0), self.usage.get(fr, 0))
        parent_avail = self.parent.raw_available(fr)
        q = self.quotas.get(fr)
        if q is not None and q.borrowing_limit is not None:
            lq = self.local_quota(fr)
            stored = sub(self.subtree.get(fr, 0), lq)
            used = max(0, sub(self.usage.get(fr, 0), lq))
            parent_avail = min(add(sub(stored, used), q.borrowing_limit), parent_avail)
        return add(self.local_available(fr), parent_avail)

    def potential_available(self, fr: FR) -> int:
        if self.parent is None:
            return self.subtree.get(fr, 0)
        avail = add(self.local_quota(fr), self.parent.potential_available(fr))
        q = self.quotas.get(fr)
        if q is not None and q.borrowing_limit is not None:
            avail = min(add(self.subtree.get(fr, 0), q.borrowing_limit), avail)
        return avail

    def add_usage(self, fr: FR, v: int) -> None:
        local = self.local_available(fr)
        self.usage[fr] = add(self.usage.get(fr, 0), v)
        if self.parent is not None and v > local:
            self.parent.add_usage(fr, sub(v, local))

    def remove_usage(self, fr: FR, v: int) -> None:
        stored_in_parent = sub(self.usage.get(fr, 0), self.local_quota(fr))
        self.usage[fr] = sub(self.usage.get(fr, 0), v)
        if stored_in_parent <= 0 or self.parent is None:
            return
        self.parent.remove_usage(fr, min(v, stored_in_parent))

    def borrowing_with(self, fr: FR, v: int) -> bool:
        return add(self.usage.get(fr, 0), v) > self.subtree.get(fr, 0)

    def borrowing(self, fr: FR) -> bool:
        return self.borrowing_with(fr, 0)

    def within_nominal(self, frs) -> bool:
        return all(self.subtree.get(fr, 0) >= self.usage.get(fr, 0) for fr in frs)

    def fits_in_quota(self, requests: dict[FR, int]) -> tuple[bool, dict[FR, int]]:
        """QuantitiesFitInQuota: fits, and what remains after this node's local room."""
        fits = True
        remaining: dict[FR, int] = {}
        for fr, v in requests.items():
            if self.subtree.get(fr, 0) < add(self.usage.get(fr, 0), v):
                fits = False
            remaining[fr] = max(0, sub(v, self.local_available(fr)))
        return fits, remaining

    def path_parent_to_root(self) -> Iterator["CohortNode"]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def root(self) -> "Node":
        node: Node = self
        while node.parent is not None:
            node = node.parent
        return node


@dataclass(eq=False)
class CohortNode(Node):
    child_cohorts: list["CohortNode"] = field(default_factory=list)
    child_cqs: list[Node] = field(default_factory=list)

    def height(self) -> int:
        """getNodeHeight: 1 above ClusterQueues, one more per nested level."""
        h = min(len(self.child_cohorts) + len(self.child_cqs), 1)
        for c in self.child_cohorts:
            h = max(h, c.height() + 1)
        return h

    def subtree_cqs(self) -> Iterator[Node]:
        for c in self.child_cohorts:
            yield from c.subtree_cqs()
        yield from self.child_cqs

    def recompute(self) -> None:
        """updateCohortResourceNode: rebuild subtree quota and usage from the children."""
        self.subtree = {fr: q.nominal for fr, q in self.quotas.items()}
        self.usage = {}
        for child in self.child_cohorts:
            child.recompute()
            self._accumulate(child)
        for cq in self.child_cqs:
            cq.subtree = {fr: q.nominal for fr, q in cq.quotas.items()}
            self._accumulate(cq)

    def _accumulate(self, child: Node) -> None:
        for fr, q in child.subtree.items():
            self.subtree[fr] = add(self.subtree.get(fr, 0), sub(q, child.local_quota(fr)))
        for fr, u in child.usage.items():
            self.usage[fr] = add(self.usage.get(fr, 0), max(0, sub(u, child.local_quota(fr))))


def height_of_lowest_subtree_that_fits(cq: Node, fr: FR, v: int) -> tuple[int, bool]:
    """FindHeightOfLowestSubtreeThatFits: the borrowing level v needs, and whether a
    subtree below the root could hold it (mayReclaimInHierarchy)."""
    if not cq.borrowing_with(fr, v) or cq.parent is None:
        return 0, cq.parent is not None
    remaining = sub(v, cq.local_available(fr))
    for node in cq.path_parent_to_root():
        if not node.borrowing_with(fr, remaining):
            return node.height(), node.parent is not None
        remaining = sub(remaining, node.local_available(fr))
    root = cq.root()
    assert isinstance(root, CohortNode)
    return root.height(), False


def available(node: Node, fr: FR) -> int:
    """ClusterQueueSnapshot.Available: never below zero."""
    return max(0, node.raw_available(fr))


UNLIMITED_AMOUNT = UNLIMITED
