"""PreScore, Score, NormalizeScore and the weights, as upstream's RunPreScorePlugins
and RunScorePlugins; NodeScoreList, what run_score gives. A part the Framework
holds (framework.runtime.framework)."""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import numpy as np

from framework.api.objects import Pod
from framework.cache import NodeInfo
from framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    CycleState,
    NodePluginScores,
    NodeScore,
    Status,
)
from framework.plugins.helper import DefaultNormalizer, default_normalized, default_normalized_value, uniform_value
from framework.reductions import outside
from framework.runtime.common import _OK, _SKIP, _SUCCESS, ProfileSettings, _error, has_columnar_form
from framework.runtime.node_local import FEW_NODES, NodeLocalColumns

# (plugin, raw scores, normalized scores, weight), in node order
ScoreTrace = Callable[[str, list[int], list[int], int], None]


_INT64 = (-(1 << 63), (1 << 63) - 1)
_INT64_DTYPE = np.dtype(np.int64)


def _add(totals: np.ndarray, column: np.ndarray) -> np.ndarray:
    """totals + column into totals (int64, wrapping as Go's int64 sum does); a column
    of Python integers past int64 makes the totals such a column too."""
    if column.dtype is _INT64_DTYPE and totals.dtype is _INT64_DTYPE:
        totals += column
        return totals
    return totals + column


def _wrap_int64(value: int) -> int:
    """A Python integer as int64 arithmetic leaves it (Go's int64 wraps)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def _with_flat(totals: np.ndarray | None, flat_total: int, size: int) -> np.ndarray:
    """The totals of the plugins' columns plus the flat plugins' summed value (int64,
    wrapping; `flat_total` within int64): the totals the flat columns would have made."""
    if totals is None:
        return filled(size, flat_total)
    if flat_total:
        if totals.dtype is _INT64_DTYPE:
            totals += flat_total
        else:
            totals = totals + flat_total
    return totals


def _int_column(scores: Sequence[int]) -> np.ndarray:
    if isinstance(scores, np.ndarray):
        return scores.astype(np.int64, copy=False)
    constant = _constant(scores)
    if constant is not None:
        return filled(len(scores), constant)
    try:
        return np.array(scores, dtype=np.int64)
    except OverflowError:
        # Far out of range: keep Python ints so the range check reports the score.
        return np.array(scores, dtype=object)


def filled(size: int, value: int) -> np.ndarray:
    """np.full(size, value, dtype=np.int64) without np.full's Python wrapper (a fifth of its cost)."""
    column = np.empty(size, dtype=np.int64)
    column.fill(value)
    return column


def _constant(scores: Sequence[int]) -> int | None:
    """The one integer (within int64) every entry of a list of scores equals, else None:
    its int64 column is np.full's, with no element converted one by one (a plugin
    with nothing to say gives [0] * n), or of an int64 column of one element seen n times
    (DynamicResources' zeros_column for a pod without claims), read without a scan."""
    if type(scores) is not list or not scores:
        return uniform_value(scores)
    first = scores[0]
    if type(first) is not int or not _INT64[0] <= first <= _INT64[1] or scores.count(first) != len(scores):
        return None
    return first


class NodeScoreList(Sequence[NodePluginScores]):
    """run_score's result: per node (in the order scored) the weighted score of each
    plugin and the total, as upstream's []NodePluginScores. The numbers live in
    numpy columns (`totals`, one column per plugin); the NodePluginScores are made
    only when someone reads an entry, and from then on they are the truth (a
    caller may add to an entry's total_score, as upstream's extenders do)."""

    __slots__ = ("nodes", "names", "columns", "_totals", "_entries")

    def __init__(self, nodes: Sequence[NodeInfo], names: list[str], columns: list[np.ndarray | int],
                 totals: np.ndarray) -> None:
        self.nodes = nodes
        self.names = names
        self.columns = columns
        self._totals = totals
        self._entries: list[NodePluginScores] | None = None

    @property
    def totals(self) -> np.ndarray:
        """The total per node (an int64 column)."""
        if self._entries is None:
            return self._totals
        return np.array([e.total_score for e in self._entries], dtype=np.int64)

    @classmethod
    def empty(cls) -> "NodeScoreList":
        return cls([], [], [], np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.nodes)

    def name_at(self, i: int) -> str:
        return self.nodes[i].name

    def entries(self) -> list[NodePluginScores]:
        if self._entries is None:
            size = len(self.nodes)  # a flat plugin's one weighted value, once per node
            columns = [c.tolist() if type(c) is np.ndarray else [c] * size for c in self.columns]
            self._entries = [NodePluginScores(ni.name, [(n, c[i]) for n, c in zip(self.names, columns)], total)
                             for i, (ni, total) in enumerate(zip(self.nodes, self._totals.tolist()))]
        return self._entries

    def __getitem__(self, i):  # noqa: ANN001, ANN204 - int or slice, as a list
        return self.entries()[i]

    def __iter__(self) -> Iterator[NodePluginScores]:
        return iter(self.entries())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __repr__(self) -> str:
        return f"NodeScoreList({list(self)!r})"


def _default_normalized_constant(ext: Any, raw: Sequence[int]) -> int | None:
    """What upstream's DefaultNormalizeScore (`ext` a DefaultNormalizer) makes of each of
    raw scores that are one integer `v` repeated: the column's maximum is `v`, so every
    entry normalises as a column of that one entry does. None when the scores are not
    one repeated int64 value, or the columnar form declines (the general path answers)."""
    if type(ext) is not DefaultNormalizer:
        return None
    value = _constant(raw)
    return None if value is None else default_normalized_value(MAX_NODE_SCORE, ext.reverse, value)


def _default_normalized_column(ext: Any, raw: Sequence[int]) -> tuple[np.ndarray | int | None, bool]:
    """Upstream's DefaultNormalizeScore (`ext` a DefaultNormalizer) of a non-empty int64
    column (helper.default_normalized: one int when every node gets it), and whether
    every result is known to lie in [MIN_NODE_SCORE, MAX_NODE_SCORE]; (None, False) for
    anything else, or when a product could leave int64 (the general path answers)."""
    if type(ext) is not DefaultNormalizer or type(raw) is not np.ndarray or raw.dtype is not _INT64_DTYPE or not raw.size:
        return None, False
    return default_normalized(MAX_NODE_SCORE, ext.reverse, raw)


def _int64_values(raw: Sequence[int]) -> np.ndarray:
    """`raw` as an int64 column (OverflowError, TypeError or ValueError past int64)."""
    constant = _constant(raw)
    return filled(len(raw), constant) if constant is not None else np.asarray(raw, dtype=np.int64)


class Scoring:
    """The scoring extension points of one profile's Framework; the weights and
    use_columnar are read from the profile's settings at each run."""

    def __init__(self, settings: ProfileSettings, pre_score_plugins: list[Any], score_plugins: list[Any]) -> None:
        self.settings = settings
        self.pre_score_plugins = pre_score_plugins
        self.score_plugins = score_plugins

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def run_pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        skipped: set[str] = set()
        state.skip_score_plugins = skipped
        for pl in self.pre_score_plugins:
            try:
                st = pl.pre_score(state, pod, nodes)
            except Exception as e:  # noqa: BLE001
                return _error(pl.name, f'running PreScore plugin "{pl.name}": {e}')
            if st is None:
                continue
            code = st.code
            if code == _SUCCESS:
                continue
            if code == _SKIP:
                skipped.add(pl.name)
                continue
            return _error(pl.name, f'running PreScore plugin "{pl.name}": {st.message()}')
        return _OK

    def run_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo], trace: ScoreTrace | None = None,
                  node_local: NodeLocalColumns | None = None) -> tuple["NodeScoreList", Status]:
        """Score, normalize, check the range and weigh; totals per node in node order.
        A plugin with a columnar form (`score_nodes`) scores all nodes in one call. The
        totals are a numpy column (`.totals`); the per-node NodePluginScores are
        made only when someone reads them. `trace` (explain) is told each plugin's raw
        and normalized scores and its weight once they passed the range check.
        `node_local` (a group cycle's NodeLocalColumns) serves the raw scores of the
        plugins that declare them node-local from its columns."""
        names: list[str] = []
        # Weighted scores, one per plugin: a column, or the one value of a plugin whose
        # every node normalised alike (not made into a column: added to the totals once).
        columns: list[np.ndarray | int] = []
        skip = state.skip_score_plugins
        weights = self.settings.score_weights
        first: np.ndarray | None = None  # the first column, until a second one comes
        totals: np.ndarray | None = None
        flat_total = 0  # the flat plugins' weighted values, summed
        for pl in self.score_plugins:
            name = pl.name
            if name in skip:
                continue
            # Only a plugin that declares its raw scores node-local can be read from columns.
            got = (node_local.raw_scores(pl, state, pod, nodes, self.score_refresh)
                   if node_local is not None and getattr(pl, "score_node_local", False) else None)
            raw, st = got if got is not None else self._score_plugin(pl, state, pod, nodes)
            if st is not None:
                return NodeScoreList.empty(), st
            ext_fn = getattr(pl, "score_extensions", None)
            ext = ext_fn() if ext_fn is not None else None
            scored = list(raw) if trace is not None else raw
            # Every node scores one value: raw scores all alike without NormalizeScore
            # (ImageLocality where no node reports images), upstream's DefaultNormalizeScore of
            # scores all alike (DynamicResources' zeros for a pod without claims) or reversed
            # over scores none above 0 (TaintToleration on untainted nodes); nothing else is read.
            if not self.settings.use_columnar:
                flat = None
            elif type(raw) is np.ndarray and raw.dtype is _INT64_DTYPE and raw.strides == (0,) and raw.size:
                # One element seen through a stride of 0 (uniform_value's case, read here without its calls).
                flat = int(raw[0])
                if ext is not None:
                    flat = default_normalized_value(MAX_NODE_SCORE, ext.reverse, flat) if type(ext) is DefaultNormalizer else None
            else:
                flat = _constant(raw) if ext is None else _default_normalized_constant(ext, raw)
            # DefaultNormalizeScore of an int64 column, and whether its result is known in range.
            normalized, within = None, False
            if flat is None and ext is not None and self.settings.use_columnar:
                normalized, within = _default_normalized_column(ext, raw)
                if type(normalized) is int:
                    flat, normalized = normalized, None
            weight = weights.get(name, 1)
            if flat is not None and trace is None and MIN_NODE_SCORE <= flat <= MAX_NODE_SCORE and len(raw):
                # Passes the range check: weighed once, as the column's int64 product would be.
                value = (flat * weight + (1 << 63)) % (1 << 64) - (1 << 63)  # _wrap_int64's, inline
                names.append(name)
                columns.append(value)
                flat_total += value
                continue
            if flat is not None:  # a read-only column of that one value is kept as it is
                raw = raw if flat == uniform_value(raw) else filled(len(raw), flat)
            elif normalized is not None:
                raw = normalized
            elif ext is not None:
                try:
                    raw, st = self._normalize(ext, state, pod, nodes, raw)
                except Exception as e:  # noqa: BLE001
                    return NodeScoreList.empty(), _error(name, f'running Normalize on Score plugins: plugin "{name}" failed with: {e}')
                if st is not None and not st.is_success():
                    return NodeScoreList.empty(), _error(name, f'running Normalize on Score plugins: plugin "{name}" failed with: {st.message()}')
            # An int64 column (the usual answer of a columnar form or a normaliser) is used as it is.
            column = raw if type(raw) is np.ndarray and raw.dtype is _INT64_DTYPE else _int_column(raw)
            # Raw scores read from a column whose every stored value is in range need no check,
            # nor scores all alike whose one value is.
            checked = (MIN_NODE_SCORE <= flat <= MAX_NODE_SCORE if flat is not None else within or
                       ext is None and got is not None and node_local.read_in_range(pl))  # type: ignore[union-attr]
            if not checked and len(column) and outside(column, MIN_NODE_SCORE, MAX_NODE_SCORE):
                bad = int(column[(column > MAX_NODE_SCORE) | (column < MIN_NODE_SCORE)][0])
                return NodeScoreList.empty(), _error(
                    name,
                    f'running Score plugins: plugin "{name}" failed with: plugin "{name}" returns an invalid '
                    f"score {bad}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                )
            if trace is not None:
                trace(name, [int(x) for x in scored], column.tolist(), weight)
            if weight != 1:
                column = column * weight
            names.append(name)
            columns.append(column)
            # The first column is kept aside and the second added to it into new totals (a
            # later += must not write a plugin's column); one column alone is copied.
            if totals is not None:
                totals = _add(totals, column)
            elif first is None:
                first = column
            else:
                totals = first + column
        flat_total = _wrap_int64(flat_total)
        if totals is None and first is not None:  # one column: the totals are it plus the flat plugins', a new column
            totals, flat_total = (first + flat_total if flat_total else first.copy()), 0
        return NodeScoreList(nodes, names, columns, _with_flat(totals, flat_total, len(nodes))), _OK

    def _normalize(self, ext: Any, state: CycleState, pod: Pod, nodes: list[NodeInfo],
                   raw: list[int]) -> tuple[list[int], Status | None]:
        """NormalizeScore on the raw scores: the columnar form on plain integers when
        the extension has one, else upstream's form on NodeScores. An extension that
        normalises int64 columns (`normalize_column`, the same integers) gets the scores as
        one: the conversion run_score makes anyway, made before instead of after."""
        column = getattr(ext, "normalize_column", None) if self.settings.use_columnar else None
        if column is not None:
            try:
                values = raw if isinstance(raw, np.ndarray) else _int64_values(raw)
            except (OverflowError, TypeError, ValueError):
                values = None  # past int64: the list form, on Python integers
            out = column(values) if values is not None else None
            if out is not None:
                return out, None
        if isinstance(raw, np.ndarray):
            raw = raw.tolist()
        if self.settings.use_columnar and has_columnar_form(ext, "normalize_scores"):
            out, st = ext.normalize_scores(state, pod, nodes, raw)
            if len(out) != len(raw):
                raise ValueError(f"returned {len(out)} scores for {len(raw)} nodes")
            return list(out), st
        scores = [NodeScore(ni.name, s) for ni, s in zip(nodes, raw)]
        st = ext.normalize_score(state, pod, scores)
        return [ns.score for ns in scores], st

    def _score_plugin(self, pl: Any, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[list[int], Status | None]:
        """One plugin's raw scores in node order, or the Error that ends the cycle."""
        name = pl.name
        if self.settings.use_columnar and has_columnar_form(pl, "score_nodes"):
            try:
                raw, st = pl.score_nodes(state, pod, nodes)
            except Exception as e:  # noqa: BLE001
                return [], _error(name, f'running Score plugins: plugin "{name}" failed with: {e}')
            if st is not None and not st.is_success():
                return [], _error(name, f'running Score plugins: plugin "{name}" failed with: {st.message()}')
            if len(raw) != len(nodes):
                return [], _error(name, f'running Score plugins: plugin "{name}" returned {len(raw)} scores for {len(nodes)} nodes')
            return (raw if isinstance(raw, np.ndarray) else list(raw)), None
        return self._score_each(pl, state, pod, nodes)

    def score_refresh(self, pl: Any, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[list[int], Status | None]:
        """_score_plugin for a node-local column's refresh (NodeLocalColumns.raw_scores): at
        most FEW_NODES nodes are scored one by one (the per-node form's scores are the
        columnar form's, without its fixed cost of numpy calls), more in one columnar call."""
        if len(nodes) <= FEW_NODES:
            return self._score_each(pl, state, pod, nodes)
        return self._score_plugin(pl, state, pod, nodes)

    @staticmethod
    def _score_each(pl: Any, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> tuple[list[int], Status | None]:
        """The per-node form: pl.score on each node in order, or the Error that ends the cycle."""
        name = pl.name
        raw = []
        score = pl.score
        for ni in nodes:
            try:
                s, st = score(state, pod, ni)
            except Exception as e:  # noqa: BLE001
                return [], _error(name, f'running Score plugins: plugin "{name}" failed with: {e}')
            if st is not None and not st.is_success():
                return [], _error(name, f'running Score plugins: plugin "{name}" failed with: {st.message()}')
            raw.append(s)
        return raw, None
