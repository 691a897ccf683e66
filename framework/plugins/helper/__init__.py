"""Helpers shared by scoring plugins (upstream's plugins/helper package)."""
from __future__ import annotations

from typing import Any, Callable, Generic, Hashable, Sequence, TypeVar

import numpy as np

from framework.api.labels import LabelSelector
from framework.node_table import columnar_table
from framework.reductions import column_max, column_min
from framework.interface import MAX_NODE_SCORE, NodeScore, Status
from framework.plugins.helper import elementwise

C = TypeVar("C")  # one node's contribution
S = TypeVar("S")  # the sums over all nodes


def flagged_positions(nodes: Sequence[Any], flag: str) -> "np.ndarray | None":
    """Positions in `nodes` (a ColumnarNodes) whose row has the NodeTable flag column
    `flag` set; None when `nodes` carries no usable table (use the list path)."""
    tb = columnar_table(nodes)
    if tb is None:
        return None
    table, rows = tb
    column = getattr(table, flag)
    span = getattr(nodes, "span", None)  # consecutive rows: a view, not a gather
    # np.flatnonzero's positions, without its Python-level wrapper
    return (column[rows] if span is None else column[span]).nonzero()[0]


def filter_flagged(nodes: Sequence[Any], flag: str, may_fail: Callable[[Any], bool],
                   filter_one: Callable[[Any], Status | None]) -> list[Status | None]:
    """A columnar Filter that passes every node that cannot fail and asks `filter_one`
    about the others: on a ColumnarNodes the nodes with the column `flag` set, on a
    plain list those `may_fail` says yes to (the same test, node by node)."""
    positions = flagged_positions(nodes, flag)
    if positions is None:
        return [filter_one(ni) if may_fail(ni) else None for ni in nodes]
    out: list[Status | None] = [None] * len(nodes)
    for i in positions.tolist():
        out[i] = filter_one(nodes[i])
    return out


class FilterEachNode:
    """A columnar Filter form that calls the plugin's own `filter` per node, for plugins
    that are seldom run (PreFilter skips them for most pods) but should not keep
    the runtime off the columnar path when they do run."""

    def filter_nodes(self, state: Any, pod: Any, nodes: list[Any]) -> list[Status | None]:
        flt = self.filter  # type: ignore[attr-defined]
        return [flt(state, pod, ni) for ni in nodes]


def read_state(state: Any, key: str) -> tuple[Any, Status | None]:
    """A plugin's entry in the CycleState, and the Error upstream words when the
    entry is missing (`reading "<key>" from cycleState: not found`)."""
    s = state.get(key)
    if s is None:
        return None, Status.error_of(f'reading "{key}" from cycleState: not found')
    return s, None


def state_for_node(state: Any, key: str, node_info: Any) -> tuple[Any, Any, Status | None]:
    """What a per-node Filter or Score reads first: its state entry and the node,
    with the Error when the entry is missing or the NodeInfo has no Node."""
    s, err = read_state(state, key)
    if err is not None:
        return None, None, err
    node = node_info.node
    if node is None:
        return None, None, Status.error_of("node not found")
    return s, node, None


def score_state_for_nodes(state: Any, key: str, nodes: list[Any]) -> tuple[Any, Status | None]:
    """What a columnar Score form reads first: its PreScore state, and an Error (as the
    per-node form words it) when that state is missing or a node has no Node."""
    s, err = read_state(state, key)
    if err is not None:
        return None, err
    if any(ni.node is None for ni in nodes):
        return None, Status.error_of("node not found")
    return s, None


class NodeSumsMemo(Generic[C, S]):
    """Sums over all nodes of per-node contributions, kept between pods per key
    (everything a node's contribution depends on besides the node). The next pod
    with the same key recomputes only the nodes that are not the very NodeInfo, at
    the same generation, seen before (the snapshot replaces a node's NodeInfo
    whenever it changes; NodeInfo's own changes move its generation). Over a
    ColumnarNodes the changed rows are found at once from the NodeTable's generation
    column, so an unchanged cluster costs nothing per node."""

    MAX_KEYS = 4

    def __init__(self) -> None:
        # key -> (table or None, nodes, their generations, their contributions, the sums)
        self._entries: dict[Hashable, tuple[Any, list[Any], Any, list[C], S]] = {}

    def sums(self, key: Hashable, nodes: Sequence[Any], contribution: Callable[[Any], C], new_sums: Callable[[], S],
             apply: Callable[[S, C, int], None]) -> S:
        """The sums for `nodes`; `apply(sums, contribution, +1 or -1)` adds or takes
        back one node's contribution."""
        entry = self._entries.pop(key, None)
        tb = columnar_table(nodes)
        table = tb[0] if tb is not None else None
        if entry is None or len(entry[1]) != len(nodes) or entry[0] is not table:
            sums = new_sums()
            parts = [contribution(ni) for ni in nodes]
            for part in parts:
                apply(sums, part, 1)
            gens: Any = (table.generation[tb[1]] if tb is not None
                         else [ni.generation for ni in nodes])
            entry = (table, list(nodes), gens, parts, sums)
        else:
            _, old_nodes, gens, parts, sums = entry
            if tb is not None:
                now = table.generation[tb[1]]
                changed = np.flatnonzero(now != gens).tolist()
                gens[changed] = now[changed]
            else:
                changed = [k for k, (old, ni, gen) in enumerate(zip(old_nodes, nodes, gens))
                           if old is not ni or gen != ni.generation]
            for k in changed:
                ni = nodes[k]
                apply(sums, parts[k], -1)
                part = contribution(ni)
                apply(sums, part, 1)
                old_nodes[k], parts[k] = ni, part
                if tb is None:
                    gens[k] = ni.generation
        while len(self._entries) >= self.MAX_KEYS:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = entry
        return entry[4]


def selector_key(sel: LabelSelector | None) -> Hashable:
    """A label selector as a hashable value equal for selectors that select alike
    (requirement order kept: it is what the selector says)."""
    if sel is None:
        return None
    return tuple((r.key, r.operator, tuple(sorted(r.values))) for r in sel.requirements)


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's int64 `/` does."""
    if a >= 0 and b > 0:
        return a // b
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> Status | None:
    """Scale scores in place from [0, max(scores)] to [0, max_priority].

    With `reverse`, each result is subtracted from max_priority. When every score
    is zero (or the list is empty) the scores stay as they are, or all become
    max_priority when reversed. Scores are assumed non-negative. Always Success.
    """
    for s, v in zip(scores, default_normalize_values(max_priority, reverse, [s.score for s in scores])):
        s.score = v
    return None


def default_normalize_values(max_priority: int, reverse: bool, scores: list[int]) -> list[int]:
    """default_normalize_score on plain integers (the columnar form)."""
    max_count = max(scores, default=0)
    if max_count <= 0:
        return [max_priority] * len(scores) if reverse else list(scores)
    if reverse:
        return [max_priority - go_div(max_priority * s, max_count) for s in scores]
    return [go_div(max_priority * s, max_count) for s in scores]


# Raw scores whose product with MAX_NODE_SCORE stays inside int64 (beyond, the list form,
# on Python integers).
_COLUMN_LIMIT = (2 ** 63 - 1) // MAX_NODE_SCORE


def default_normalize_column(max_priority: int, reverse: bool, scores: np.ndarray) -> np.ndarray | None:
    """default_normalize_values on an int64 column, the same integers; None when the
    column is not int64 or a product could leave int64 (then the list form answers)."""
    if scores.dtype != np.int64:
        return None
    if not scores.size:
        return scores.copy()
    out, _ = default_normalized(max_priority, reverse, scores)
    return np.full(scores.size, out, dtype=np.int64) if type(out) is int else out


def default_normalized_value(max_priority: int, reverse: bool, value: int) -> int | None:
    """What default_normalize_column makes of each entry of a column all `value`: its
    maximum is `value`, so none above 0 stays as it is (max_priority when reversed), and
    any above it becomes max_priority * value // value = max_priority (0 reversed); None
    when that product could leave int64 (the list form answers)."""
    if value <= 0:
        return max_priority if reverse else value
    if value > _COLUMN_LIMIT:
        return None
    return 0 if reverse else max_priority


def default_normalized(max_priority: int, reverse: bool, scores: np.ndarray) -> tuple[np.ndarray | int | None, bool]:
    """default_normalize_column of a non-empty int64 column, and whether every result is
    known to lie in [0, max_priority]. The result is one int when every entry becomes it
    (reversed, none of the scores above 0: each is max_priority), None when a product could
    leave int64. In range when no score is below 0: each becomes max_priority * s // max
    with 0 <= s <= max (or max_priority less that)."""
    max_count = int(column_max(scores))
    if max_count <= 0:
        return (max_priority, True) if reverse else (scores.copy(), False)
    min_count = int(column_min(scores))
    if max_count > _COLUMN_LIMIT or min_count < -_COLUMN_LIMIT:
        return None, False
    quotient = elementwise.go_div(scores * max_priority, max_count)
    return (max_priority - quotient if reverse else quotient), min_count >= 0


# One int64 zero seen through a stride of 0: every slice of it is a read-only column of
# zeros made without writing them, and known to be all alike without reading them.
_ZEROS = np.broadcast_to(np.zeros(1, dtype=np.int64), (1 << 59,))  # bytes seen stay within intp


def zeros_column(size: int) -> np.ndarray:
    """`size` int64 zeros as one read-only column (a plugin with nothing to say of any node)."""
    return _ZEROS[:size]


def uniform_value(column: Any) -> int | None:
    """The one value of a non-empty int64 column whose every entry is the same element (a
    stride of 0, as zeros_column's), read without a scan; None for any other column."""
    if type(column) is not np.ndarray or column.strides != (0,) or column.dtype != np.int64 or not column.size:
        return None
    return int(column[0])


class DefaultNormalizer:
    """ScoreExtensions whose NormalizeScore is upstream's
    helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores), per node list and
    columnar alike; `reverse` where fewer is better. A plugin's score_extensions
    returns one (DEFAULT_NORMALIZER or REVERSE_NORMALIZER): it holds no state."""

    __slots__ = ("reverse",)

    def __init__(self, reverse: bool) -> None:
        self.reverse = reverse

    def normalize_score(self, state: Any, pod: Any, scores: list[NodeScore]) -> Status | None:
        return default_normalize_score(MAX_NODE_SCORE, self.reverse, scores)

    def normalize_scores(self, state: Any, pod: Any, nodes: list[Any], scores: list[int]) -> tuple[list[int], Status | None]:
        return default_normalize_values(MAX_NODE_SCORE, self.reverse, scores), None

    def normalize_column(self, scores: np.ndarray) -> np.ndarray | None:
        """normalize_scores on an int64 column (None: use the list form)."""
        return default_normalize_column(MAX_NODE_SCORE, self.reverse, scores)


DEFAULT_NORMALIZER = DefaultNormalizer(reverse=False)
REVERSE_NORMALIZER = DefaultNormalizer(reverse=True)


class ScoredByPreScoreState:
    """Score (per node and columnar) and ScoreExtensions of a plugin whose PreScore
    state (written under `pre_score_key`) scores nodes itself, `score_node(pod,
    node_info, node)` and `score_nodes(pod, nodes)`, and normalises the scores:
    `normalize(scores)` and, on node names and plain integers,
    `normalize_values(names, scores)`."""

    pre_score_key: str

    def score(self, state: Any, pod: Any, node_info: Any) -> tuple[int, Status | None]:
        s, node, err = state_for_node(state, self.pre_score_key, node_info)
        if err is not None:
            return 0, err
        return s.score_node(pod, node_info, node), None

    def score_nodes(self, state: Any, pod: Any, nodes: list[Any]) -> tuple[list[int], Status | None]:
        s, err = score_state_for_nodes(state, self.pre_score_key, nodes)
        if err is not None:
            return [], err
        return s.score_nodes(pod, nodes), None

    def score_extensions(self) -> "ScoredByPreScoreState":
        return self

    def normalize_score(self, state: Any, pod: Any, scores: list[NodeScore]) -> Status | None:
        s, err = read_state(state, self.pre_score_key)
        if err is not None:
            return err
        s.normalize(scores)
        return None

    def normalize_scores(self, state: Any, pod: Any, nodes: list[Any], scores: list[int]) -> tuple[list[int], Status | None]:
        s, err = read_state(state, self.pre_score_key)
        if err is not None:
            return scores, err
        return s.normalize_values([ni.name for ni in nodes], scores), None
