"""The snapshot's nodes as numpy columns (NodeTable) and the columnar node list
(ColumnarNodes) that hands a plugin's columnar form its nodes' rows.

One name for one idea: a plugin's *columnar form* (filter_nodes, score_nodes,
normalize_scores) decides for many nodes at once; over ColumnarNodes it works on
the NodeTable's columns with the same formula its per-node method uses (see
framework/plugins/helper/elementwise.py), elsewhere it calls that method per node.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

if TYPE_CHECKING:
    from framework.api.objects import Node
    from framework.node_info import NodeInfo

_DO_NOT_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")
_RANGE_BITS = 55
_MAX_COLUMN_VALUE = 1 << _RANGE_BITS


class NodeTable:
    """The snapshot's per-node numbers as numpy columns: row i is
    `snapshot.node_info_list[i]` (the stable node index of one snapshot
    structure), so a plugin works on every candidate node at once.

    The Cache keeps it in step with the NodeInfos on every update_snapshot: rows of
    the refreshed nodes are rewritten, and the whole table is rebuilt only when
    nodes are added, removed or reordered, so a scheduling cycle pays nothing for
    it. Readers take the columns for the rows they hold (``table.req_cpu[rows]``)
    and never write them.

    Integer columns (int64): ``alloc_cpu``/``alloc_mem``/``alloc_eph``/``alloc_pods``
    (allocatable milli-CPU, bytes, bytes, pod slots), ``req_cpu``/``req_mem``/
    ``req_eph`` (what the node's pods request), ``nz_cpu``/``nz_mem`` (requests with
    upstream's non-zero defaults, for scoring), ``num_pods`` and ``generation`` (the
    NodeInfo's generation: a row whose generation did not move is unchanged, which
    lets per-node memos find the changed rows at once).
    Flag columns (bool): ``unschedulable`` (spec.unschedulable), ``hard_taints``
    (a NoSchedule/NoExecute taint), ``prefer_taints`` (a PreferNoSchedule taint),
    ``has_images``, ``has_ports`` (pods hold host ports), ``has_scalar`` (extended
    resources allocatable or requested) and ``no_node`` (a NodeInfo without Node).
    Flags name the rare nodes a columnar form hands to its per-node form.

    ``valid`` is False when a number does not fit int64; columnar forms then take
    their list paths. Other engineers' callers (preemption dry runs) may read the
    columns for the rows of unmodified snapshot nodes; a NodeInfo changed in a
    dry run is not in the table.
    """

    INT_COLUMNS = ("alloc_cpu", "alloc_mem", "alloc_eph", "alloc_pods", "req_cpu", "req_mem", "req_eph",
                   "nz_cpu", "nz_mem", "num_pods", "generation")
    FLAG_COLUMNS = ("unschedulable", "hard_taints", "prefer_taints", "has_images", "has_ports", "has_scalar",
                    "no_node")

    def __init__(self, size: int = 0) -> None:
        self.valid = True
        self._ints = np.zeros((size, len(self.INT_COLUMNS)), dtype=np.int64, order="F")
        self._flags = np.zeros((size, len(self.FLAG_COLUMNS)), dtype=np.bool_, order="F")
        self.all_rows = np.arange(size, dtype=np.intp)
        self._nodes: list[Node | None] = [None] * size
        # The (has_images, has_ports, has_scalar) flags each row holds, as set_row wrote
        # them (None: not known), so a row whose flags stand is not written again.
        self._pod_flags: list[tuple[bool, bool, bool] | None] = [None] * size
        self._label_codes: dict[str, tuple[np.ndarray, list[str], dict[str, int]]] = {}
        self._changes = _ChangeLog()
        self._bind_columns()

    def _bind_columns(self) -> None:
        for k, name in enumerate(self.INT_COLUMNS):
            setattr(self, name, self._ints[:, k])
        for k, name in enumerate(self.FLAG_COLUMNS):
            setattr(self, name, self._flags[:, k])

    def __len__(self) -> int:
        return len(self.all_rows)

    @classmethod
    def of(cls, nodes: Sequence[NodeInfo]) -> "NodeTable":
        table = cls(len(nodes))
        for i, ni in enumerate(nodes):
            table.set_row(i, ni)
        table._changes = _ChangeLog()  # a new table: what was written building it is no change
        return table

    def changes_mark(self) -> int:
        """A mark of the rows rewritten so far (changed_since's argument)."""
        return self._changes.mark()

    def changed_since(self, mark: int) -> list[int] | None:
        """The rows set_row rewrote after `mark` (changes_mark's), in order, a row once
        for each time; None when the log no longer reaches back that far."""
        return self._changes.since(mark)

    def set_row(self, i: int, ni: NodeInfo) -> None:
        self._changes.rows.append(i)
        if len(self._changes.rows) > _MAX_LOGGED_CHANGES:
            self._changes.drop_oldest()
        a, r, nz = ni.allocatable, ni.requested, ni.non_zero_requested
        pods, generation = len(ni.pods), ni.generation
        row = (a.milli_cpu, a.memory, a.ephemeral_storage, a.allowed_pod_number, r.milli_cpu,
               r.memory, r.ephemeral_storage, nz.milli_cpu, nz.memory, pods, generation)
        # Scores multiply by 100 and compare as floats: stay far from int64's limits. The
        # usual row, every number in [0, 2**55), is told by one OR of them (no sign, no
        # high bit); any other row takes the exact check.
        if (((a.milli_cpu | a.memory | a.ephemeral_storage | a.allowed_pod_number | r.milli_cpu | r.memory
              | r.ephemeral_storage | nz.milli_cpu | nz.memory | pods | generation) >> _RANGE_BITS)
                and (max(row) >= _MAX_COLUMN_VALUE or min(row) < -_MAX_COLUMN_VALUE)):
            self.valid = False
            return
        self._ints[i] = row
        node = ni.node
        if node is not None and node is self._nodes[i]:
            # The same Node object (a pod assumed, added or removed): its own flags stand;
            # those of its pods and images are written when they moved.
            pod_flags = (bool(ni.image_states), any(ni.used_ports.ports.values()),  # len(used_ports) > 0
                         bool(a.scalar) or bool(r.scalar))
            if pod_flags != self._pod_flags[i]:
                flags = self._flags
                flags[i, _HAS_IMAGES], flags[i, _HAS_PORTS], flags[i, _HAS_SCALAR] = pod_flags
                self._pod_flags[i] = pod_flags
            return
        if node is not self._nodes[i]:
            self._nodes[i] = node
            self._label_codes.clear()
        hard = prefer = False
        if node is not None:
            for t in node.taints:
                if t.effect == "PreferNoSchedule":
                    prefer = True
                elif t.effect in _DO_NOT_SCHEDULE_EFFECTS:
                    hard = True
        pod_flags = self._pod_flags[i] = (bool(ni.image_states), len(ni.used_ports) > 0, bool(a.scalar) or bool(r.scalar))
        self._flags[i] = (node is not None and bool(node.unschedulable), hard, prefer, *pod_flags, node is None)

    def set_generation(self, i: int, ni: NodeInfo) -> None:
        """set_row for a NodeInfo whose row differs from the one written last in its
        generation alone (pods confirmed in place: the same sums, pod count, Node and
        flags)."""
        self._changes.rows.append(i)
        if len(self._changes.rows) > _MAX_LOGGED_CHANGES:
            self._changes.drop_oldest()
        generation = ni.generation
        if generation >> _RANGE_BITS and not -_MAX_COLUMN_VALUE <= generation < _MAX_COLUMN_VALUE:
            self.valid = False
            return
        self.generation[i] = generation

    def _take_rows(self, rows: np.ndarray) -> "NodeTable":
        """A table of `rows` of this one, in that order (its own copy of the numbers)."""
        t = NodeTable.__new__(NodeTable)
        t.valid = self.valid
        t._ints = np.asfortranarray(self._ints[rows])
        t._flags = np.asfortranarray(self._flags[rows])
        t.all_rows = np.arange(len(rows), dtype=np.intp)
        t._nodes = [self._nodes[r] for r in rows.tolist()]
        t._pod_flags = [None] * len(rows)
        t._label_codes = {}
        t._changes = _ChangeLog()
        t._bind_columns()
        return t

    def with_requests(self, rows: np.ndarray, nodes: Sequence[NodeInfo]) -> "NodeTable":
        """A table of `rows` of this one in that order, whose row k has the requests,
        pod count and extended-resource flag of `nodes[k]` (a copy of that row's
        node with more pods on it, as preemption's nominated-pods pass makes): the
        node's own columns are kept, so node-only and request-reading columnar
        forms decide for the copies at once."""
        t = self._take_rows(rows)
        changed = [(ni.requested.milli_cpu, ni.requested.memory, ni.requested.ephemeral_storage, len(ni.pods),
                    ni.generation) for ni in nodes]
        if changed:
            if max(map(max, changed)) >= _MAX_COLUMN_VALUE or min(map(min, changed)) < -_MAX_COLUMN_VALUE:
                t.valid = False
                return t
            values = np.array(changed, dtype=np.int64)
            for k, name in enumerate(("req_cpu", "req_mem", "req_eph", "num_pods", "generation")):
                getattr(t, name)[:] = values[:, k]
            t.has_scalar[:] = t.has_scalar | np.array([bool(ni.requested.scalar) for ni in nodes], dtype=np.bool_)
        return t

    def with_added(self, rows: np.ndarray, count: np.ndarray, cpu: np.ndarray, mem: np.ndarray, eph: np.ndarray,
                   scalar: np.ndarray) -> "NodeTable":
        """A table of `rows` of this one in that order, with `count[k]` more pods
        requesting `cpu[k]`, `mem[k]`, `eph[k]` on row k (the pods nominated to
        those nodes, as with_requests gives for copies of the nodes, without
        making the copies); `scalar[k]` marks rows whose added pods request an
        extended resource. Not valid where a sum leaves the columns' range."""
        t = self._take_rows(rows)
        for name, added in (("req_cpu", cpu), ("req_mem", mem), ("req_eph", eph), ("num_pods", count)):
            column = getattr(t, name)
            column += added
            if len(column) and int(column.max()) >= _MAX_COLUMN_VALUE:
                t.valid = False
        t.generation[:] = -1  # rows no NodeInfo has: a per-node memo finds them changed
        t.has_scalar[:] = t.has_scalar | scalar
        return t

    def node_names(self) -> list[str | None]:
        """Each row's node name (None: a NodeInfo without Node)."""
        return [None if node is None else node.name for node in self._nodes]

    def label_codes(self, key: str) -> tuple[np.ndarray, list[str]]:
        """The value of label `key` per row as a code into the returned value list
        (-1 where the node has no such label), built on first use."""
        codes, values, _ = self.label_index(key)
        return codes, values

    def label_index(self, key: str) -> tuple[np.ndarray, list[str], dict[str, int]]:
        """label_codes plus the code of each value."""
        got = self._label_codes.get(key)
        if got is None:
            values: list[str] = []
            index: dict[str, int] = {}
            codes = np.full(len(self._nodes), -1, dtype=np.int64)
            for i, node in enumerate(self._nodes):
                if node is not None:
                    v = node.labels.get(key)
                    if v is not None:
                        c = index.get(v)
                        if c is None:
                            c = index[v] = len(values)
                            values.append(v)
                        codes[i] = c
            got = self._label_codes[key] = (codes, values, index)
        return got


# Rows kept in a table's change log; past this the older half is dropped.
_MAX_LOGGED_CHANGES = 4096


class _ChangeLog:
    """The rows a NodeTable's set_row rewrote, in order: readers that keep values per row
    (framework/runtime/node_local.py) find the rows moved since their last look without
    comparing every row's generation. `base` counts the entries dropped."""

    __slots__ = ("rows", "base")

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.base = 0

    def mark(self) -> int:
        return self.base + len(self.rows)

    def since(self, mark: int) -> list[int] | None:
        if mark < self.base:
            return None
        return self.rows[mark - self.base:]

    def drop_oldest(self) -> None:
        half = len(self.rows) // 2
        del self.rows[:half]
        self.base += half


# The flag columns set_row writes for a row whose Node object it has seen already.
_HAS_IMAGES, _HAS_PORTS, _HAS_SCALAR = (NodeTable.FLAG_COLUMNS.index(f) for f in ("has_images", "has_ports", "has_scalar"))


class ColumnarNodes(list):
    """Snapshot NodeInfos handed to a plugin's columnar form together with their rows
    in the snapshot's NodeTable (`rows[i]` is the row of `self[i]`). Plugins that
    find a ColumnarNodes may compute on the table's columns; a plain list (or any
    NodeInfo not taken from the snapshot) gets their list path."""

    __slots__ = ("rows", "table", "span")

    def __init__(self, nodes: Iterable[NodeInfo], rows: np.ndarray, table: NodeTable,
                 span: slice | None = None) -> None:
        super().__init__(nodes)
        self.rows = rows
        self.table = table
        # The same rows as a slice when they are consecutive (rows[i] == span.start + i):
        # a column read over them is a view, not a gather. None: not known to be.
        self.span = span

    def take(self, positions: Sequence[int]) -> "ColumnarNodes":
        """The nodes at these positions of this list, with their rows."""
        return ColumnarNodes([self[i] for i in positions], self.rows[np.asarray(positions, dtype=np.intp)], self.table)


def columnar_table(nodes: Sequence[NodeInfo]) -> tuple[NodeTable, np.ndarray] | None:
    """(table, rows) when `nodes` is a ColumnarNodes over a usable table, else None."""
    if type(nodes) is ColumnarNodes and nodes.table.valid:
        return nodes.table, nodes.rows
    return None
