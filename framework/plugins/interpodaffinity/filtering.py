"""InterPodAffinity PreFilter/Filter data (upstream interpodaffinity/filtering.go).

PreFilter counts, per topology pair (key, value):
- existing_anti_affinity_counts: existing pods whose required anti-affinity terms
  match the incoming pod;
- affinity_counts: existing pods matching ALL required affinity terms of the
  incoming pod;
- anti_affinity_counts: existing pods matching a required anti-affinity term of
  the incoming pod.
Filter then only looks the node's labels up in these maps.
"""
from __future__ import annotations

from typing import Hashable, Iterable, Mapping, Sequence

import numpy as np

from framework.api.affinity import AffinityTerm
from framework.api.objects import Node, Pod
from framework.cache import NodeInfo, PodInfo
from framework.node_table import NodeTable
from framework.interface import Code, Status
from framework.plugins.helper import NodeSumsMemo, selector_key

PRE_FILTER_STATE_KEY = "PreFilterInterPodAffinity"

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
NAME = "InterPodAffinity"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

TopologyPair = tuple[str, str]

# Filter's three rejections. Statuses are never changed once made (Status.with_plugin
# copies), so every failing node shares its reason's one object.
AFFINITY_NOT_MATCH = Status(Code.UnschedulableAndUnresolvable, ERR_REASON_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
ANTI_AFFINITY_NOT_MATCH = Status(Code.Unschedulable, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
EXISTING_ANTI_AFFINITY_NOT_MATCH = Status(Code.Unschedulable, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
                                          plugin=NAME)
# A node's Filter verdict by the index of its first failing check (0: none fails).
_VERDICTS = np.array([None, AFFINITY_NOT_MATCH, ANTI_AFFINITY_NOT_MATCH, EXISTING_ANTI_AFFINITY_NOT_MATCH],
                     dtype=object)


class TopologyCounts(dict[TopologyPair, int]):
    """topologyToMatchedTermCount: a pair is dropped when its count returns to zero."""

    def bump(self, node: Node, topology_key: str, value: int) -> None:
        tv = node.labels.get(topology_key)
        if tv is None:
            return
        pair = (topology_key, tv)
        n = self.get(pair, 0) + value
        if n == 0:
            self.pop(pair, None)
        else:
            self[pair] = n

    def add_affinity_terms(self, terms: Sequence[AffinityTerm], pod: Pod, node: Node, value: int) -> None:
        """Count `pod` once per term's topology when it matches ALL terms."""
        if pod_matches_all_affinity_terms(terms, pod):
            for t in terms:
                self.bump(node, t.topology_key, value)

    def add_anti_affinity_terms(self, terms: Sequence[AffinityTerm], pod: Pod, ns_labels: Mapping[str, str] | None,
                                node: Node, value: int) -> None:
        """Count `pod` for each term it matches."""
        for t in terms:
            if t.matches(pod, ns_labels):
                self.bump(node, t.topology_key, value)

    def clone(self) -> "TopologyCounts":
        return TopologyCounts(self)


def pod_matches_all_affinity_terms(terms: Sequence[AffinityTerm], pod: Pod) -> bool:
    """True iff there are terms and `pod` matches every one. The incoming pod's terms
    have their namespace selector merged into the namespaces, so no namespace labels."""
    if not terms:
        return False
    for t in terms:
        if not t.matches(pod, None):
            return False
    return True


class PreFilterState:
    __slots__ = ("existing_anti_affinity_counts", "affinity_counts", "anti_affinity_counts",
                 "required_affinity", "required_anti_affinity", "pod", "namespace_labels", "row_masks",
                 "memo_counts")

    def __init__(self, pod: Pod, required_affinity: tuple[AffinityTerm, ...],
                 required_anti_affinity: tuple[AffinityTerm, ...], namespace_labels: Mapping[str, str] | None) -> None:
        self.pod = pod
        self.required_affinity = required_affinity
        self.required_anti_affinity = required_anti_affinity
        self.namespace_labels = namespace_labels
        self.existing_anti_affinity_counts = TopologyCounts()
        self.affinity_counts = TopologyCounts()
        self.anti_affinity_counts = TopologyCounts()
        # The counts as NodeTable masks (failing_rows), until the counts change.
        self.row_masks: RowMasks | None = None
        # The memo's PairCounts the three counts were copied from (affinity, anti,
        # existing), while the counts still equal them.
        self.memo_counts: list[PairCounts | None] = [None, None, None]

    def clone(self) -> "PreFilterState":
        c = PreFilterState(self.pod, self.required_affinity, self.required_anti_affinity, self.namespace_labels)
        c.existing_anti_affinity_counts = self.existing_anti_affinity_counts.clone()
        c.affinity_counts = self.affinity_counts.clone()
        c.anti_affinity_counts = self.anti_affinity_counts.clone()
        return c

    def update_with_pod(self, pod_info: PodInfo, node: Node | None, multiplier: int) -> None:
        """AddPod (+1) / RemovePod (-1) of an existing pod on `node`."""
        if node is None:
            return
        self.row_masks = None
        self.memo_counts = [None, None, None]
        self.existing_anti_affinity_counts.add_anti_affinity_terms(
            pod_info.required_anti_affinity_terms, self.pod, self.namespace_labels, node, multiplier)
        self.affinity_counts.add_affinity_terms(self.required_affinity, pod_info.pod, node, multiplier)
        self.anti_affinity_counts.add_anti_affinity_terms(self.required_anti_affinity, pod_info.pod, None, node, multiplier)

    def count_existing_anti_affinity(self, nodes: Iterable[NodeInfo]) -> None:
        """Existing pods' required anti-affinity terms that match the incoming pod."""
        counts = self.existing_anti_affinity_counts
        pod, ns_labels = self.pod, self.namespace_labels
        for ni in nodes:
            node = ni.node
            if node is None:
                continue
            labels = node.labels
            for existing in ni.pods_with_required_anti_affinity:
                for t in existing.required_anti_affinity_terms:
                    if t.matches(pod, ns_labels):
                        _count_one(counts, labels, t.topology_key)

    def count_incoming(self, nodes: Iterable[NodeInfo]) -> None:
        """Existing pods that match the incoming pod's required (anti-)affinity terms."""
        affinity, anti = self.required_affinity, self.required_anti_affinity
        if not affinity and not anti:
            return
        affinity_counts, anti_counts = self.affinity_counts, self.anti_affinity_counts
        for ni in nodes:
            pods = ni.pods
            node = ni.node
            if not pods or node is None:
                continue
            labels = node.labels
            for existing in pods:
                p = existing.pod
                if affinity and pod_matches_all_affinity_terms(affinity, p):
                    for t in affinity:
                        _count_one(affinity_counts, labels, t.topology_key)
                for t in anti:
                    if t.matches(p, None):
                        _count_one(anti_counts, labels, t.topology_key)


# --- PreFilter counts kept between pods ------------------------------------------------------

# (which counts: 0 affinity, 1 anti-affinity; topology pair)
NodeCounts = tuple[tuple[int, TopologyPair], ...]
CountsKey = tuple[Hashable, ...]


def terms_key(terms: Sequence[AffinityTerm]) -> Hashable:
    return tuple((tuple(sorted(t.namespaces)), selector_key(t.selector), t.topology_key, selector_key(t.namespace_selector))
                 for t in terms)


def counts_key(state: PreFilterState) -> CountsKey:
    """Everything count_incoming's count of a node depends on besides the node: the
    incoming pod's merged required terms."""
    return (terms_key(state.required_affinity), terms_key(state.required_anti_affinity))


def node_counts(state: PreFilterState, ni: NodeInfo) -> NodeCounts:
    """What count_incoming adds for this node."""
    node = ni.node
    if node is None or not ni.pods:
        return ()
    labels = node.labels
    out: list[tuple[int, TopologyPair]] = []
    affinity, anti = state.required_affinity, state.required_anti_affinity
    for existing in ni.pods:
        p = existing.pod
        if affinity and pod_matches_all_affinity_terms(affinity, p):
            out.extend((0, (t.topology_key, tv)) for t in affinity if (tv := labels.get(t.topology_key)) is not None)
        out.extend((1, (t.topology_key, tv)) for t in anti
                   if t.matches(p, None) and (tv := labels.get(t.topology_key)) is not None)
    return tuple(out)


class PairCounts(dict[TopologyPair, int]):
    """A memo's sums per topology pair that also keeps, per NodeTable, the masks
    failing_rows reads (value codes with a positive count) up to date as pairs
    appear and disappear, so a pod after a small change costs no walk over the
    pairs."""

    def __init__(self) -> None:
        super().__init__()
        self._table: NodeTable | None = None
        self._masks: dict[str, np.ndarray] = {}
        self._flipped: list[TopologyPair] = []

    def bump(self, pair: TopologyPair, delta: int) -> None:
        n = self.get(pair, 0) + delta
        if n == 0:
            del self[pair]
            self._flipped.append(pair)
        else:
            if pair not in self:
                self._flipped.append(pair)
            self[pair] = n

    def masks(self, table: NodeTable, keys: Iterable[str] = ()) -> dict[str, np.ndarray]:
        """_marked(table, self, None) with the given keys present too."""
        if self._table is not table or len(self._flipped) > len(self):
            self._table = table
            self._masks = _marked(table, self, None)
        else:
            for key, value in self._flipped:
                _, values, index = table.label_index(key)
                mask = self._masks.get(key)
                if mask is None:
                    mask = self._masks[key] = np.zeros(len(values) + 1, dtype=np.bool_)
                code = index.get(value)
                if code is not None:
                    mask[code] = self.get((key, value), 0) > 0
        self._flipped.clear()
        for key in keys:
            if key not in self._masks:
                self._masks[key] = np.zeros(len(table.label_index(key)[1]) + 1, dtype=np.bool_)
        return self._masks


def count_incoming_memoized(memo: NodeSumsMemo, state: PreFilterState, nodes: Sequence[NodeInfo]) -> None:
    """The state's affinity and anti-affinity counts as state.count_incoming(nodes)
    fills them, recounting only the nodes that changed since a pod with the same
    terms."""
    sums = memo.sums(counts_key(state), nodes, lambda ni: node_counts(state, ni),
                     lambda: (PairCounts(), PairCounts()), _apply)
    state.affinity_counts = TopologyCounts(sums[0])
    state.anti_affinity_counts = TopologyCounts(sums[1])
    state.memo_counts[0], state.memo_counts[1] = sums


def existing_anti_affinity_key(state: PreFilterState) -> Hashable:
    """Everything whether an existing pod's term matches the incoming pod depends on."""
    return existing_anti_affinity_key_of(state.pod, state.namespace_labels)


def existing_anti_affinity_key_of(pod: Pod, ns_labels: Mapping[str, str] | None) -> Hashable:
    """Everything whether an existing pod's term matches `pod` depends on."""
    return (pod.namespace, tuple(sorted(pod.labels.items())), None if ns_labels is None else tuple(sorted(ns_labels.items())))



def node_existing_anti_affinity(state: PreFilterState, ni: NodeInfo) -> NodeCounts:
    """What count_existing_anti_affinity adds for this node."""
    node = ni.node
    if node is None or not ni.pods_with_required_anti_affinity:
        return ()
    labels = node.labels
    pod, ns_labels = state.pod, state.namespace_labels
    return tuple((0, (t.topology_key, tv)) for existing in ni.pods_with_required_anti_affinity
                 for t in existing.required_anti_affinity_terms
                 if t.matches(pod, ns_labels) and (tv := labels.get(t.topology_key)) is not None)


def count_existing_anti_affinity_memoized(memo: NodeSumsMemo, state: PreFilterState, nodes: Sequence[NodeInfo]) -> None:
    """state.count_existing_anti_affinity over every node, recounting only the nodes
    that changed since a pod with the same labels in the same namespace."""
    sums = memo.sums(existing_anti_affinity_key(state), nodes, lambda ni: node_existing_anti_affinity(state, ni),
                     lambda: (PairCounts(),), _apply)
    state.existing_anti_affinity_counts = TopologyCounts(sums[0])
    state.memo_counts[2] = sums[0]


class RowMasks:
    """Per topology key, which of a NodeTable's label values the PreFilter counts
    mark (a bool per value code, plus a False last slot so a node without the
    label, code -1, reads False). Built once per table and counts."""

    __slots__ = ("table", "affinity", "anti", "existing")

    def __init__(self, state: PreFilterState, table: NodeTable) -> None:
        self.table = table
        affinity_keys = {t.topology_key for t in state.required_affinity}
        anti_keys = {t.topology_key for t in state.required_anti_affinity}
        memo_affinity, memo_anti, memo_existing = state.memo_counts
        # The memo's counts keep their masks up to date; the state's own (changed by
        # AddPod/RemovePod, or counted without a memo) are marked afresh.
        self.affinity = (memo_affinity.masks(table, affinity_keys) if memo_affinity is not None
                         else _marked(table, state.affinity_counts, affinity_keys))
        self.anti = (memo_anti.masks(table, anti_keys) if memo_anti is not None
                     else _marked(table, state.anti_affinity_counts, anti_keys))
        self.existing = (memo_existing.masks(table) if memo_existing is not None
                         else _marked(table, state.existing_anti_affinity_counts, None))


def _marked(table: NodeTable, counts: Mapping[TopologyPair, int], keys: set[str] | None) -> dict[str, np.ndarray]:
    """Per key (those given, else every key counted), the value codes with a positive count."""
    codes_by_key: dict[str, list[int]] = {k: [] for k in keys} if keys is not None else {}
    for (key, value), count in counts.items():
        if count > 0 and (keys is None or key in keys):
            codes_by_key.setdefault(key, []).append(value)
    out: dict[str, np.ndarray] = {}
    for key, values in codes_by_key.items():
        _, all_values, index = table.label_index(key)
        mask = out[key] = np.zeros(len(all_values) + 1, dtype=np.bool_)
        codes = [c for v in values if (c := index.get(v)) is not None]
        if codes:
            mask[codes] = True
    return out


def failing_rows(state: PreFilterState, table: NodeTable, rows: np.ndarray) -> list[Status | None]:
    """The Filter verdicts over NodeTable rows (nodes all set): the three checks as
    masks through the table's label codes, each node's first failing check
    giving its status, as filter() words it."""
    masks = state.row_masks
    if masks is None or masks.table is not table:
        masks = state.row_masks = RowMasks(state, table)
    n = len(rows)
    affinity_ok = np.ones(n, dtype=np.bool_)
    if state.required_affinity:
        has_keys = np.ones(n, dtype=np.bool_)
        pods_exist = np.ones(n, dtype=np.bool_)
        for term in state.required_affinity:
            key = term.topology_key
            node_codes = table.label_codes(key)[0][rows]
            has_keys &= node_codes >= 0
            pods_exist &= masks.affinity[key][node_codes]
        first_of_group = not state.affinity_counts and pod_matches_all_affinity_terms(state.required_affinity, state.pod)
        affinity_ok = has_keys & (pods_exist | first_of_group)
    anti_ok = np.ones(n, dtype=np.bool_)
    if state.anti_affinity_counts:
        for term in state.required_anti_affinity:
            key = term.topology_key
            anti_ok &= ~masks.anti[key][table.label_codes(key)[0][rows]]
    existing_ok = np.ones(n, dtype=np.bool_)
    for key, mask in masks.existing.items():
        existing_ok &= ~mask[table.label_codes(key)[0][rows]]
    # Each node's first failing check as an index into _VERDICTS (later assignments win,
    # so the checks go last to first), all shared Statuses: the runtime words, and the
    # diagnosis records, each object once rather than once per failing node.
    verdicts = np.zeros(n, dtype=np.intp)
    verdicts[~existing_ok] = 3
    verdicts[~anti_ok] = 2
    verdicts[~affinity_ok] = 1
    return _VERDICTS[verdicts].tolist()


def _apply(sums: tuple[PairCounts, ...], counts: NodeCounts, sign: int) -> None:
    """Add (1) or take back (-1) one node's counts; a pair back at zero is dropped,
    as if never counted."""
    for which, pair in counts:
        sums[which].bump(pair, sign)


def _count_one(counts: TopologyCounts, node_labels: Mapping[str, str], topology_key: str) -> None:
    """+1 for the node's value of the key (PreFilter only adds, so no zero to drop)."""
    tv = node_labels.get(topology_key)
    if tv is not None:
        pair = (topology_key, tv)
        counts[pair] = counts.get(pair, 0) + 1


def satisfies_existing_pods_anti_affinity(state: PreFilterState, node: Node) -> bool:
    counts = state.existing_anti_affinity_counts
    if counts:
        for pair in node.labels.items():
            if counts.get(pair, 0) > 0:
                return False
    return True


def satisfies_pod_anti_affinity(state: PreFilterState, node: Node) -> bool:
    counts = state.anti_affinity_counts
    if counts:
        labels = node.labels
        for term in state.required_anti_affinity:
            tv = labels.get(term.topology_key)
            if tv is not None and counts.get((term.topology_key, tv), 0) > 0:
                return False
    return True


def satisfies_pod_affinity(state: PreFilterState, node: Node) -> bool:
    pods_exist = True
    labels = node.labels
    counts = state.affinity_counts
    for term in state.required_affinity:
        tv = labels.get(term.topology_key)
        if tv is None:
            # Every topology key must be on the node.
            return False
        if counts.get((term.topology_key, tv), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group with affinity to itself: no pod anywhere matches its
    # terms, but it matches them itself, so it may go to any node with the keys.
    return not counts and pod_matches_all_affinity_terms(state.required_affinity, state.pod)
