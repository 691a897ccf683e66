"""PodTopologySpread constraints and PreFilter/Filter data (upstream podtopologyspread
common.go and filtering.go).

For each DoNotSchedule constraint, PreFilter counts the matching pods per topology
value over the nodes that carry every constraint's key and pass the constraint's
node inclusion policies. It keeps the global minimum exact under AddPod/RemovePod
with a histogram of domains per count.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Sequence

import numpy as np

from framework.api.labels import LabelSelector, find_untolerated_taint
from framework.api.objects import Node, Pod
from framework.cache import NodeInfo, PodInfo
from framework.node_table import NodeTable
from framework.interface import Code, Status
from framework.plugins.helper import NodeSumsMemo
from framework.plugins.nodeaffinity.node_affinity import RequiredNodeAffinity

PRE_FILTER_STATE_KEY = "PreFilterPodTopologySpread"

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"
_DO_NOT_SCHEDULE_TAINT_EFFECTS = ("NoSchedule", "NoExecute")
_MAX_INT32 = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class Constraint:
    """topologySpreadConstraint: a v1.TopologySpreadConstraint with its selector parsed.
    `selector` None is labels.Nothing(); an empty selector is labels.Everything()."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def selects(self, pod: Pod) -> bool:
        return self.selector is not None and self.selector.matches(pod.labels)

    def includes_node(self, pod: Pod, node: Node, required: RequiredNodeAffinity, comparison_operators: bool) -> bool:
        """matchNodeInclusionPolicies."""
        if self.node_affinity_policy == HONOR and not required.matches(node):
            return False
        if self.node_taints_policy == HONOR and find_untolerated_taint(
                node.taints, pod.tolerations, _DO_NOT_SCHEDULE_TAINT_EFFECTS, comparison_operators) is not None:
            return False
        return True


def node_has_all_topology_keys(node: Node, constraints: Sequence[Constraint]) -> bool:
    """nodeLabelsMatchSpreadConstraints."""
    labels = node.labels
    for c in constraints:
        if c.topology_key not in labels:
            return False
    return True


def count_pods_matching(pod_infos: Iterable[PodInfo], selector: LabelSelector | None, namespace: str) -> int:
    """countPodsMatchSelector: pods of `namespace`, not being deleted, that match.
    An empty selector counts nothing here (upstream's selector.Empty() check)."""
    if selector is None or selector.empty:
        return 0
    n = 0
    for pi in pod_infos:
        p = pi.pod
        if p.meta.deletion_timestamp is not None or p.namespace != namespace:
            continue
        if selector.matches(p.labels):
            n += 1
    return n


class PreFilterState:
    """Per constraint: matching pods per topology value, their minimum, and how many
    domains hold each count (what keeps the minimum exact under +/-1 updates)."""

    __slots__ = ("constraints", "self_match", "tp_value_to_match_num", "min_match_num", "domains_at_count")

    def __init__(self, constraints: tuple[Constraint, ...]) -> None:
        self.constraints = constraints
        self.self_match: tuple[int, ...] = tuple(0 for _ in constraints)  # 1 where the incoming pod matches
        self.tp_value_to_match_num: list[dict[str, int]] = [{} for _ in constraints]
        self.min_match_num: list[int] = [_MAX_INT32 for _ in constraints]
        self.domains_at_count: list[dict[int, int]] = [{} for _ in constraints]

    def finish_counting(self) -> None:
        for i, counts in enumerate(self.tp_value_to_match_num):
            hist: dict[int, int] = {}
            for num in counts.values():
                hist[num] = hist.get(num, 0) + 1
            self.domains_at_count[i] = hist
            self.min_match_num[i] = min(counts.values(), default=_MAX_INT32)

    def clone(self) -> "PreFilterState":
        c = PreFilterState.__new__(PreFilterState)
        c.constraints = self.constraints
        c.self_match = self.self_match
        c.tp_value_to_match_num = [dict(m) for m in self.tp_value_to_match_num]
        c.min_match_num = list(self.min_match_num)
        c.domains_at_count = [dict(h) for h in self.domains_at_count]
        return c

    def min_match(self, i: int) -> int:
        """The global minimum, 0 while there are fewer eligible domains than minDomains."""
        if len(self.tp_value_to_match_num[i]) < self.constraints[i].min_domains:
            return 0
        return self.min_match_num[i]

    def bump(self, i: int, value: str, delta: int) -> None:
        counts = self.tp_value_to_match_num[i]
        hist = self.domains_at_count[i]
        old = counts.get(value)
        cur = (old or 0) + delta
        counts[value] = cur
        hist[cur] = hist.get(cur, 0) + 1
        if old is None:
            # A domain PreFilter did not see: it just joins.
            self.min_match_num[i] = min(self.min_match_num[i], cur)
            return
        hist[old] -= 1
        if hist[old] <= 0:
            del hist[old]
        if cur < self.min_match_num[i] or (old == self.min_match_num[i] and old not in hist):
            self.min_match_num[i] = cur

    def is_empty(self) -> bool:
        return not self.constraints


NodeCounts = tuple[tuple[int, str, int], ...]  # (constraint index, topology value, matching pods)


class NodeCounter:
    """One node's matching pods per constraint (calPreFilterState's count, and with
    `require_all_topologies` False and hostname constraints left out, PreScore's),
    with what does not depend on the node decided once per pod: whether the pod's
    required node affinity can reject anything, which constraints need the
    inclusion check, and which selectors can match at all (a node without pods
    still opens its domains). A missing topology key reads as ""."""

    __slots__ = ("pod", "required", "comparison_operators", "node_check", "keys", "plan")

    def __init__(self, constraints: Sequence[Constraint], pod: Pod, required: RequiredNodeAffinity,
                 inclusion_policies: bool, comparison_operators: bool, require_all_topologies: bool = True,
                 skip_hostname: bool = False) -> None:
        self.pod = pod
        self.required = required
        self.comparison_operators = comparison_operators
        matches_all = required.label_selector is None and required.terms is None
        self.node_check = None if inclusion_policies or matches_all else required.matches
        self.keys = {c.topology_key for c in constraints} if require_all_topologies else set()
        self.plan = [(i, c, c.topology_key,
                      inclusion_policies and ((c.node_affinity_policy == HONOR and not matches_all)
                                              or c.node_taints_policy == HONOR),
                      None if c.selector is None or c.selector.empty else c.selector)
                     for i, c in enumerate(constraints) if not (skip_hostname and c.topology_key == LABEL_HOSTNAME)]

    def node_counts(self, ni: NodeInfo) -> NodeCounts:
        node = ni.node
        if node is None or (self.node_check is not None and not self.node_check(node)):
            return ()
        labels = node.labels
        if not self.keys <= labels.keys():
            return ()
        pod = self.pod
        pods = ni.pods
        out = []
        for i, c, key, check_inclusion, selector in self.plan:
            if check_inclusion and not c.includes_node(pod, node, self.required, self.comparison_operators):
                continue
            out.append((i, labels.get(key, ""),
                        count_pods_matching(pods, selector, pod.namespace) if pods and selector else 0))
        return tuple(out)


def apply_counts(domains: list[dict[str, list[int]]], counts: NodeCounts, sign: int) -> None:
    """Add (sign 1) or take back (-1) one node's counts; a domain no node opens any
    more is dropped."""
    for i, value, n in counts:
        d = domains[i]
        e = d.get(value)
        if e is None:  # only when adding: a node's counts are taken back from domains it opened
            d[value] = [n, 1]
            continue
        e[0] += sign * n
        e[1] += sign
        if e[1] == 0:
            del d[value]


def count_matching_pods(state: PreFilterState, pod: Pod, nodes: Sequence[NodeInfo], required: RequiredNodeAffinity,
                        inclusion_policies: bool, comparison_operators: bool,
                        memo: NodeSumsMemo | None = None, memo_key: Hashable | None = None) -> None:
    """calPreFilterState's counting over all nodes (through `memo` under `memo_key`
    when given: each node's counts, per constraint value -> [matching pods, nodes])."""
    constraints = state.constraints
    state.self_match = tuple(1 if c.selects(pod) else 0 for c in constraints)
    counter = NodeCounter(constraints, pod, required, inclusion_policies, comparison_operators)
    if memo is not None and memo_key is not None:
        domains = memo.sums(memo_key, nodes, counter.node_counts, lambda: [{} for _ in constraints], apply_counts)
        state.tp_value_to_match_num = [{v: e[0] for v, e in d.items()} for d in domains]
    else:
        per_constraint = state.tp_value_to_match_num
        for ni in nodes:
            for i, value, n in counter.node_counts(ni):
                counts = per_constraint[i]
                counts[value] = counts.get(value, 0) + n
    state.finish_counting()


def update_with_pod(state: PreFilterState, updated: Pod, preemptor: Pod, node: Node | None, delta: int,
                    required: RequiredNodeAffinity, inclusion_policies: bool, comparison_operators: bool) -> None:
    """AddPod (+1) / RemovePod (-1) of `updated` on `node`."""
    if updated.namespace != preemptor.namespace or node is None:
        return
    if not node_has_all_topology_keys(node, state.constraints):
        return
    if not inclusion_policies and not required.matches(node):
        return
    for i, c in enumerate(state.constraints):
        if not c.selects(updated):
            continue
        if inclusion_policies and not c.includes_node(preemptor, node, required, comparison_operators):
            continue
        state.bump(i, node.labels[c.topology_key], delta)


# filter_verdicts' answers per node, in the order filter() checks them.
_FITS, _MISSING_LABEL, _TOO_SKEWED = 0, 1, 2


def spread_verdict(state: PreFilterState, lookup: Callable[[int, str], tuple[Any, Any]]) -> Any:
    """Filter's check of the constraints, for one node or a column of nodes alike
    (helper/elementwise.py): `lookup(i, topology_key)` gives, for constraint i,
    whether the node lacks the key and the matching pods in the node's domain.
    The first failing constraint decides: _MISSING_LABEL, or _TOO_SKEWED where
    matching + self match - global minimum exceeds maxSkew; _FITS otherwise."""
    verdict: Any = _FITS
    for i, c in enumerate(state.constraints):
        missing, match_num = lookup(i, c.topology_key)
        skewed = match_num + state.self_match[i] - state.min_match(i) > c.max_skew
        # Where no constraint failed yet: _MISSING_LABEL (1) if missing, else _TOO_SKEWED (2) if skewed.
        verdict = verdict + (verdict == _FITS) * (missing * _MISSING_LABEL + (skewed > missing) * _TOO_SKEWED)
    return verdict


def _verdict_status(verdict: int) -> Status | None:
    if verdict == _MISSING_LABEL:
        return Status(Code.UnschedulableAndUnresolvable, ERR_REASON_NODE_LABEL_NOT_MATCH)
    if verdict == _TOO_SKEWED:
        return Status(Code.Unschedulable, ERR_REASON_CONSTRAINTS_NOT_MATCH)
    return None


def filter_node(state: PreFilterState, node: Node) -> Status | None:
    """Why `node` fails the constraints, or None when it fits."""
    labels = node.labels

    def lookup(i: int, key: str) -> tuple[bool, int]:
        value = labels.get(key)
        return value is None, (0 if value is None else state.tp_value_to_match_num[i].get(value, 0))

    return _verdict_status(spread_verdict(state, lookup))


def filter_rows(state: PreFilterState, table: NodeTable, rows: np.ndarray) -> list[Status | None]:
    """filter_node over NodeTable rows: each node's topology value is read through
    the table's label codes and its count looked up per value, so no node is
    visited. Nodes failing alike share one Status."""

    def lookup(i: int, key: str) -> tuple[np.ndarray, np.ndarray]:
        codes, values = table.label_codes(key)
        node_codes = codes[rows]
        counts = state.tp_value_to_match_num[i]
        per_value = np.fromiter((counts.get(v, 0) for v in values), dtype=np.int64, count=len(values))
        missing = node_codes < 0
        match_num = per_value[np.maximum(node_codes, 0)] if values else np.zeros(len(rows), dtype=np.int64)
        return missing, np.where(missing, 0, match_num)

    verdicts = spread_verdict(state, lookup)
    out: list[Status | None] = [None] * len(rows)
    shared: dict[int, Status | None] = {}
    for k, verdict in zip(np.flatnonzero(verdicts).tolist(), verdicts[verdicts != _FITS].tolist()):
        if verdict not in shared:
            shared[verdict] = _verdict_status(verdict)
        out[k] = shared[verdict]
    return out
