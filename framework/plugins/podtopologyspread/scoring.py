"""PodTopologySpread PreScore/Score/NormalizeScore data (upstream podtopologyspread/scoring.go).

For each ScheduleAnyway constraint, PreScore counts matching pods per topology
value present among the candidate nodes (hostname constraints are counted per node
in Score). A node scores sum(count * log(domains + 2) + maxSkew - 1) over the
constraints, rounded; NormalizeScore turns fewer matches into higher scores.
"""
from __future__ import annotations

import math
from typing import Hashable, Sequence

from framework.api.objects import Node, Pod
from framework.cache import NodeInfo
from framework.interface import MAX_NODE_SCORE, NodeScore
from framework.plugins.helper import NodeSumsMemo
from framework.plugins.helper.elementwise import go_round
from framework.plugins.nodeaffinity.node_affinity import RequiredNodeAffinity
from framework.plugins.podtopologyspread.filtering import (
    LABEL_HOSTNAME,
    Constraint,
    NodeCounter,
    apply_counts,
    count_pods_matching,
    node_has_all_topology_keys,
)

PRE_SCORE_STATE_KEY = "PreScorePodTopologySpread"


def topology_normalizing_weight(size: int) -> float:
    """Weight of a topology with `size` domains, so that small topologies are not
    watered down by big ones."""
    return math.log(size + 2)


def score_for_count(count: int, max_skew: int, weight: float) -> float:
    """maxSkew-1 is added so that differences between domains are softened."""
    return count * weight + (max_skew - 1)


class PreScoreState:
    """Read-only after PreScore, so clone() shares it."""

    __slots__ = ("constraints", "ignored_nodes", "topology_value_to_pod_counts", "weights")

    def __init__(self, constraints: tuple[Constraint, ...]) -> None:
        self.constraints = constraints
        self.ignored_nodes: set[str] = set()
        self.topology_value_to_pod_counts: list[dict[str, int]] = [{} for _ in constraints]
        self.weights: list[float] = []

    def clone(self) -> "PreScoreState":
        return self

    def init_domains(self, filtered: Sequence[NodeInfo], require_all_topologies: bool) -> None:
        """Domains of the candidate nodes; nodes missing a key are ignored when required."""
        sizes = [0] * len(self.constraints)
        for ni in filtered:
            node = ni.node
            if node is None:
                continue
            if require_all_topologies and not node_has_all_topology_keys(node, self.constraints):
                self.ignored_nodes.add(node.name)
                continue
            for i, c in enumerate(self.constraints):
                if c.topology_key == LABEL_HOSTNAME:
                    continue  # counted per node in Score
                value = node.labels.get(c.topology_key, "")
                counts = self.topology_value_to_pod_counts[i]
                if value not in counts:
                    counts[value] = 0
                    sizes[i] += 1
        for i, c in enumerate(self.constraints):
            size = len(filtered) - len(self.ignored_nodes) if c.topology_key == LABEL_HOSTNAME else sizes[i]
            self.weights.append(topology_normalizing_weight(size))

    def count(self, pod: Pod, all_nodes: Sequence[NodeInfo], required: RequiredNodeAffinity,
              require_all_topologies: bool, inclusion_policies: bool, comparison_operators: bool,
              memo: NodeSumsMemo | None = None, memo_key: Hashable | None = None) -> None:
        """Matching pods of every node, added to the domains the candidates span:
        the sums per topology value over every counted node, read for each domain
        (through `memo` under `memo_key` when given). Hostname constraints have no
        domains here; Score counts them per node."""
        counter = NodeCounter(self.constraints, pod, required, inclusion_policies, comparison_operators,
                              require_all_topologies, skip_hostname=True)
        new_sums = lambda: [{} for _ in self.constraints]  # noqa: E731
        if memo is not None and memo_key is not None:
            sums = memo.sums(memo_key, all_nodes, counter.node_counts, new_sums, apply_counts)
        else:
            sums = new_sums()
            for ni in all_nodes:
                apply_counts(sums, counter.node_counts(ni), 1)
        for counts, value_sums in zip(self.topology_value_to_pod_counts, sums):
            for value in counts:
                e = value_sums.get(value)
                if e is not None:
                    counts[value] += e[0]

    def score_node(self, pod: Pod, node_info: NodeInfo, node: Node) -> int:
        if node.name in self.ignored_nodes:
            return 0
        total = 0.0
        labels = node.labels
        for i, c in enumerate(self.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                cnt = count_pods_matching(node_info.pods, c.selector, pod.namespace)
            else:
                cnt = self.topology_value_to_pod_counts[i].get(value, 0)
            total += score_for_count(cnt, c.max_skew, self.weights[i])
        return go_round(total)

    def score_nodes(self, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        return [self.score_node(pod, ni, ni.node) for ni in nodes]

    def normalize(self, scores: list[NodeScore]) -> None:
        """Fewest matches -> MAX_NODE_SCORE; ignored nodes -> 0 (Go int64 arithmetic)."""
        for s, v in zip(scores, self.normalize_values([s.name for s in scores], [s.score for s in scores])):
            s.score = v

    def normalize_values(self, names: Sequence[str], scores: list[int]) -> list[int]:
        """normalize() on the node names and plain integer scores (the columnar form)."""
        ignored = self.ignored_nodes
        counted = [s for name, s in zip(names, scores) if name not in ignored] if ignored else scores
        min_score = min(counted, default=0)
        max_score = max(0, max(counted, default=0))
        if max_score == 0:
            out = [MAX_NODE_SCORE] * len(scores)
        else:
            out = [MAX_NODE_SCORE * (max_score + min_score - s) // max_score for s in scores]
        if ignored:
            return [0 if name in ignored else v for name, v in zip(names, out)]
        return out
