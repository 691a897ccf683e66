"""InterPodAffinity PreScore/Score/NormalizeScore data (upstream interpodaffinity/scoring.go).

PreScore sums, per topology key and value, the weights of:
- the incoming pod's preferred (anti-)affinity terms matched by existing pods (+/-);
- existing pods' required affinity terms matched by the incoming pod (+hardPodAffinityWeight);
- existing pods' preferred (anti-)affinity terms matched by the incoming pod (+/-).
A node's score is the sum over the topology values it carries.
"""
from __future__ import annotations

from typing import Hashable, Mapping, Sequence

from framework.api.affinity import AffinityTerm, WeightedAffinityTerm
from framework.api.objects import Node, Pod
from framework.cache import NodeInfo, PodInfo
from framework.interface import MAX_NODE_SCORE, NodeScore
from framework.plugins.helper import NodeSumsMemo

PRE_SCORE_STATE_KEY = "PreScoreInterPodAffinity"


class ScoreMap(dict[str, dict[str, int]]):
    """topology key -> topology value -> summed weight."""

    def process_term(self, term: AffinityTerm, weight: int, pod: Pod, ns_labels: Mapping[str, str] | None,
                     node: Node, multiplier: int) -> None:
        if term.matches(pod, ns_labels):
            tv = node.labels.get(term.topology_key)
            if tv is not None:
                values = self.setdefault(term.topology_key, {})
                values[tv] = values.get(tv, 0) + weight * multiplier

    def process_terms(self, terms: Sequence[WeightedAffinityTerm], pod: Pod, ns_labels: Mapping[str, str] | None,
                      node: Node, multiplier: int) -> None:
        for wt in terms:
            self.process_term(wt.term, wt.weight, pod, ns_labels, node, multiplier)


class PreScoreState:
    """Read-only after PreScore, so clone() shares it (as upstream does)."""

    __slots__ = ("topology_score", "preferred_affinity", "preferred_anti_affinity", "namespace_labels")

    def __init__(self, preferred_affinity: tuple[WeightedAffinityTerm, ...],
                 preferred_anti_affinity: tuple[WeightedAffinityTerm, ...],
                 namespace_labels: Mapping[str, str] | None) -> None:
        self.topology_score = ScoreMap()
        self.preferred_affinity = preferred_affinity
        self.preferred_anti_affinity = preferred_anti_affinity
        self.namespace_labels = namespace_labels

    def clone(self) -> "PreScoreState":
        return self

    def process_existing_pod(self, existing: PodInfo, node: Node, incoming: Pod, hard_weight: int) -> None:
        if not node.labels:
            return
        score = self.topology_score
        existing_pod = existing.pod
        # The incoming pod's terms have their namespace selector merged already.
        score.process_terms(self.preferred_affinity, existing_pod, None, node, 1)
        score.process_terms(self.preferred_anti_affinity, existing_pod, None, node, -1)
        ns_labels = self.namespace_labels
        if hard_weight > 0:
            for t in existing.required_affinity_terms:
                score.process_term(t, hard_weight, incoming, ns_labels, node, 1)
        score.process_terms(existing.preferred_affinity_terms, incoming, ns_labels, node, 1)
        score.process_terms(existing.preferred_anti_affinity_terms, incoming, ns_labels, node, -1)

    def process_nodes(self, nodes: Sequence[NodeInfo], incoming: Pod, all_pods: bool, hard_weight: int) -> None:
        # Without preferred terms of the incoming pod, an existing pod counts only
        # through terms of its own: pods with required anti-affinity alone add nothing.
        own_terms = bool(self.preferred_affinity or self.preferred_anti_affinity)
        for ni in nodes:
            node = ni.node
            if node is None:
                continue
            for existing in (ni.pods if all_pods else ni.pods_with_affinity):
                if not own_terms:
                    terms = existing.affinity_terms
                    if (not (hard_weight > 0 and terms.required_affinity) and not terms.preferred_affinity
                            and not terms.preferred_anti_affinity):
                        continue
                self.process_existing_pod(existing, node, incoming, hard_weight)

    def node_contribution(self, ni: NodeInfo, incoming: Pod, all_pods: bool,
                          hard_weight: int) -> tuple[tuple[str, str, int], ...]:
        """What process_nodes([ni]) adds to the topology scores: (key, value, weight)."""
        part = PreScoreState(self.preferred_affinity, self.preferred_anti_affinity, self.namespace_labels)
        part.process_nodes((ni,), incoming, all_pods, hard_weight)
        return tuple((key, value, w) for key, values in part.topology_score.items() for value, w in values.items())

    def process_nodes_memoized(self, memo: NodeSumsMemo, key: Hashable, nodes: Sequence[NodeInfo], incoming: Pod,
                               all_pods: bool, hard_weight: int) -> None:
        """process_nodes over every node, recomputing only the nodes that changed
        since a pod with the same key (everything a node's part depends on). A
        topology value stays in the scores while some node adds to it, even when
        its weights add up to 0, as process_nodes leaves it."""
        sums = memo.sums(key, nodes, lambda ni: self.node_contribution(ni, incoming, all_pods, hard_weight),
                         dict, _apply_scores)
        score = self.topology_score
        for (topology_key, value), (total, count) in sums.items():
            if count > 0:
                score.setdefault(topology_key, {})[value] = total

    def score(self, node: Node) -> int:
        total = 0
        labels = node.labels
        for key, values in self.topology_score.items():
            v = labels.get(key)
            if v is not None:
                total += values.get(v, 0)
        return total

    def score_node(self, pod: Pod, node_info: NodeInfo, node: Node) -> int:
        return self.score(node)

    def score_nodes(self, pod: Pod, nodes: Sequence[NodeInfo]) -> list[int]:
        score = self.score
        return [score(ni.node) for ni in nodes]

    def normalize(self, scores: list[NodeScore]) -> None:
        if self.topology_score:
            normalize(scores)

    def normalize_values(self, names: Sequence[str], scores: list[int]) -> list[int]:
        return normalize_values(scores) if self.topology_score else scores


def _apply_scores(sums: dict[tuple[str, str], list[int]], part: tuple[tuple[str, str, int], ...], sign: int) -> None:
    for key, value, weight in part:
        e = sums.get((key, value))
        if e is None:
            e = sums[(key, value)] = [0, 0]
        e[0] += sign * weight
        e[1] += sign
        if e[1] == 0:
            del sums[(key, value)]


def normalize(scores: list[NodeScore]) -> None:
    """Scale linearly so the lowest score becomes 0 and the highest MAX_NODE_SCORE,
    truncating like Go's int64(float64) conversion."""
    for s, v in zip(scores, normalize_values([s.score for s in scores])):
        s.score = v


def normalize_values(scores: list[int]) -> list[int]:
    """normalize() on plain integer scores (the columnar form)."""
    if not scores:
        return []
    min_count = min(scores)
    diff = max(scores) - min_count
    if diff <= 0:
        return [0] * len(scores)
    return [int(float(MAX_NODE_SCORE) * (float(s - min_count) / float(diff))) for s in scores]
