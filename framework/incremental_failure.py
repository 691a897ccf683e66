"""Incremental failure: a retry of an equivalence class filters only the nodes that
changed since the class's last failure.

A class (pods of one profile and one failure signature, framework/failure_memo.py)
that failed on every node is retried when an event wakes it. Most of its nodes did
not change since: their Filter verdicts are the ones of the last failure, so only
the nodes whose NodeInfo generation moved are filtered again, and the other nodes'
statuses are taken over. Exact when, for the pod, every Filter plugin that runs
(PreFilter did not skip it) declares what its verdict on one node reads
(framework/interface.py's FilterReadsPlugin: the node, or the node and its pods),
no PreFilter extension (AddPod/RemovePod, kept by plugins that read other nodes)
runs, and the nominated pods and the lister's objects are the ones the last
failure saw (their versions are part of the kept failure). Then a node whose
generation did not move gets the verdict it got, and:

- when fewer nodes pass than the pass looks for, a full pass would have walked
  every node: its feasible nodes are the changed nodes that pass, in rotation
  order, and its statuses are the kept ones with the changed nodes' new verdicts;
- otherwise (a full pass would stop early, and which nodes it records depends on
  where it stops), or when a changed node answers Error, the full pass runs.

The diagnosis is the one a full pass gives (the same node statuses, in rotation
order, the same plugin sets), so the FitError message, PostFilter, events,
conditions and metrics are too (tests/actors/test_incremental_failure_differential.py).
"""
from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter
from typing import Hashable, Sequence

import numpy as np

from framework.api.objects import Pod
from framework.attempt_outcome import Diagnosis
from framework.cache import NodeInfo, Snapshot
from framework.interface import Code, CycleState, NodeToStatus, Status
from framework.node_table import ColumnarNodes
from framework.runtime import Framework

_NAME = attrgetter("name")

# What else a node's verdict may depend on: the nominator's and the lister's versions.
Versions = tuple[int, int]


def same_but_nominations(now: tuple[int, int, int], then: tuple[int, int, int]) -> bool:
    """Whether two worlds (snapshot generation, nominator version, lister version)
    differ at most in their nominations: a failure kept in `then` still serves a
    retry, which re-filters the nodes whose nominations moved."""
    return now[0] == then[0] and now[2] == then[2]


@dataclass(frozen=True, slots=True)
class KeptFailure:
    """A class's last failure: every node's Filter status and each node's
    generation when it was filtered (`generations[i]` is node_info_list[i]'s)."""

    snapshot_id: int
    epoch: int  # Snapshot.change_epoch: the same nodes in the same order while it holds
    generations: np.ndarray
    names: list[str]  # node_info_list's names, in order
    statuses: dict[str, Status]  # every node failed; not changed after it is kept
    counts: dict[int, tuple[Status, int]]  # each distinct Status (by id) and its number of nodes
    skip: frozenset[str]  # the Filter plugins PreFilter skipped
    versions: Versions
    # The start index whose rotation order `statuses` are in (an incremental pass's
    # with no node tried before it); None when not known.
    rotation_start: int | None = None


class LastFailures:
    """The last failure of each class, by (profile, failure signature), the least
    recently used dropped beyond `limit`. Owned by one Scheduler actor."""

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._kept: OrderedDict[Hashable, KeptFailure] = OrderedDict()
        # The requests of each kept class's pods: pods of one class have one spec, so a
        # pod whose requests no kept class has cannot be of one, and is not signed.
        self._requests_of: dict[Hashable, frozenset] = {}
        self._requests: Counter[frozenset] = Counter()
        self.looked_up = 0  # cycles that asked for their class's kept failure
        self.refiltered = 0  # retries that filtered only the changed nodes
        self.nodes_reused = 0  # node statuses taken over by them

    def may_hold(self, pod: Pod) -> bool:
        """Whether a class of the pod's could be kept (False: no need to sign it)."""
        return _requests(pod) in self._requests

    def _forget(self, key: Hashable) -> None:
        self._kept.pop(key, None)
        gone = self._requests_of.pop(key, None)
        if gone is not None:
            self._requests[gone] -= 1
            if not self._requests[gone]:
                del self._requests[gone]

    def get(self, key: Hashable) -> KeptFailure | None:
        self.looked_up += 1
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
        return kept

    def keep(self, key: Hashable, pod: Pod, fwk: Framework, state: CycleState, diagnosis: Diagnosis,
             snapshot: Snapshot, versions: Versions, previous: KeptFailure | None) -> None:
        """Keep a failure whose Filter pass tried and rejected every node of the
        snapshot (no PreFilter rejection or narrowing) with node-local verdicts;
        forget the class's kept failure otherwise."""
        statuses = diagnosis.node_to_status.statuses
        table = snapshot.table
        nodes = snapshot.node_info_list
        if (diagnosis.pre_filter_msg or table is None or not table.valid or not isinstance(statuses, dict)
                or len(statuses) != len(nodes) or len(table) != len(nodes)
                or not fwk.filter_verdicts_node_local(state)):
            self._forget(key)
            return
        if previous is not None and previous.snapshot_id == id(snapshot) and previous.epoch == snapshot.change_epoch:
            names = previous.names
        else:
            names = [ni.name for ni in nodes]
        m = diagnosis.node_to_status
        counts = m.known_counts if isinstance(m, CountedNodeToStatus) else {
            id(st): (st, n) for st, n in m.counts()}
        self._kept[key] = KeptFailure(id(snapshot), snapshot.change_epoch, table.generation.copy(), names, statuses,
                                      counts, frozenset(state.skip_filter_plugins or ()), versions,
                                      getattr(m, "rotation_start", None))
        self._kept.move_to_end(key)
        if key not in self._requests_of:
            self._requests_of[key] = requests = _requests(pod)
            self._requests[requests] += 1
        if len(self._kept) > self.limit:
            self._forget(next(iter(self._kept)))

    def __len__(self) -> int:
        return len(self._kept)


@dataclass(slots=True)
class Retry:
    """What the algorithm's Filter pass may start from for this cycle's pod."""

    kept: KeptFailure
    versions: Versions
    ledger: LastFailures


def filter_changed_nodes(retry: Retry, fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis,
                         snapshot: Snapshot, nodes: Sequence[NodeInfo], start: int,
                         to_find: int) -> list[NodeInfo] | None:
    """The full Filter pass's feasible nodes (rotation order from `start`), with the
    statuses it records put into `diagnosis`, by filtering only the nodes changed
    since `retry.kept`; None when that would not give the full pass's result (the
    caller then runs it)."""
    kept = retry.kept
    table = snapshot.table
    if (kept.snapshot_id != id(snapshot) or kept.epoch != snapshot.change_epoch or table is None
            or not table.valid or nodes is not snapshot.node_info_list or len(nodes) != len(kept.generations)
            or retry.versions[1] != kept.versions[1]
            or kept.skip != frozenset(state.skip_filter_plugins or ()) or not fwk.filter_verdicts_node_local(state)):
        return None
    moved = table.generation != kept.generations
    if retry.versions[0] != kept.versions[0]:
        renominated = _renominated_positions(fwk, snapshot, kept.versions[0])
        if renominated is None:
            return None
        moved[renominated] = True
    changed: list[int] = np.flatnonzero(moved).tolist()
    failed = _filter(fwk, state, pod, nodes, changed)
    if failed is None:
        return None
    n = len(nodes)
    passing = [p for k, p in enumerate(changed) if k not in failed]
    if len(passing) >= to_find:
        return None  # a full pass stops at its to_find-th feasible node
    names = kept.names
    # A node tried before the pass (OpportunisticBatching's hint) keeps its first place.
    before = diagnosis.node_to_status
    in_rotation = not before.statuses
    if in_rotation and kept.rotation_start == start:  # already in this pass's order
        statuses = dict(kept.statuses)
    else:
        rotation = names[start:] + names[:start] if start else names
        statuses = dict(before.statuses)
        statuses.update(zip(rotation, map(kept.statuses.__getitem__, rotation)))
    counts = dict(kept.counts)
    shared = {_same(st): st for st, _ in counts.values()}
    if len(shared) < len(counts):  # equal verdicts in several objects (a full pass's chunks): one each, once a class
        statuses, counts = _merged(statuses, counts, shared)
    for k, p in enumerate(changed):
        name = names[p]
        old = statuses[name]  # the kept verdict (merged above, when it was)
        _count(counts, old, -1)
        st = failed.get(k)
        if st is None:
            del statuses[name]
            continue
        st = shared.setdefault(_same(st), st)  # nodes share Status objects, as after a full pass
        statuses[name] = st  # keeps the node's place in rotation order
        _count(counts, st, 1)
    diagnosis.node_to_status = CountedNodeToStatus(statuses, before.absent, counts, start if in_rotation else None)
    for st, _ in counts.values():
        diagnosis.add_plugin_status(st)
    retry.ledger.refiltered += 1
    retry.ledger.nodes_reused += n - len(changed)
    passing.sort(key=lambda p: (p - start) % n)
    if isinstance(nodes, ColumnarNodes):
        return nodes.take(passing)
    return [nodes[p] for p in passing]


def _renominated_positions(fwk: Framework, snapshot: Snapshot, version: int) -> list[int] | None:
    """The positions of the nodes whose nominated pods changed after the nominator's
    `version` (a node's verdict reads the pods nominated to it, and nothing else of
    the nominations); None when the owner cannot say."""
    names = fwk.handle.nominated_nodes_changed_since(version)
    if names is None:
        return None
    index = snapshot.index
    return [p for p in map(index.get, set(names)) if p is not None]


class CountedNodeToStatus(NodeToStatus):
    """A NodeToStatus that knows how many nodes hold each distinct Status (the
    kept failure's counts moved by the changed nodes), so counts() does not walk
    the nodes. Its statuses are not changed after the pass."""

    __slots__ = ("known_counts", "rotation_start")

    def __init__(self, statuses: dict[str, Status], absent: Status, counts: dict[int, tuple[Status, int]],
                 rotation_start: int | None = None) -> None:
        super().__init__(statuses, absent)
        self.known_counts = counts
        self.rotation_start = rotation_start  # statuses are in rotation order from it (None: not known)

    def set(self, node_name: str, status: Status) -> None:
        raise TypeError("an incremental pass's node statuses do not change")

    def counts(self) -> list[tuple[Status, int]]:
        return list(self.known_counts.values())

    def distinct(self) -> list[Status]:
        return [st for st, _ in self.known_counts.values()]

    def nodes_for_code(self, all_nodes: Sequence[NodeInfo], code: Code) -> list[NodeInfo]:
        """From the distinct Statuses when they all have `code` or none has (a retry's
        map holds every node it filtered; the steady state shares one Status), else
        node by node."""
        held = [st.code == code for st in self.distinct()]
        if self.absent.code == code and all(held):
            return list(all_nodes)
        if self.absent.code != code and not any(held):
            return []
        if self.absent.code != code and all(held):  # the map's membership, at C speed
            return list(compress(all_nodes, map(self.statuses.__contains__, map(_NAME, all_nodes))))
        return super().nodes_for_code(all_nodes, code)


def _merged(statuses: dict[str, Status], counts: dict[int, tuple[Status, int]],
            shared: dict[tuple[object, ...], Status]) -> tuple[dict[str, Status], dict[int, tuple[Status, int]]]:
    """`statuses` and `counts` with every Status replaced by the one `shared` holds
    for its verdict: the same verdicts, nodes and order, fewer objects (a retry's
    compaction and counts then walk one group per verdict)."""
    one = {i: shared[_same(st)] for i, (st, _) in counts.items()}
    merged: dict[int, tuple[Status, int]] = {}
    for i, (_, n) in counts.items():
        _count(merged, one[i], n)
    return {name: one[id(st)] for name, st in statuses.items()}, merged


def _same(st: Status) -> tuple[object, ...]:
    """What makes two filter statuses interchangeable."""
    return st.code, tuple(st.reasons), st.plugin, st.error


def _count(counts: dict[int, tuple[Status, int]], st: Status, delta: int) -> None:
    got = counts.get(id(st))
    n = (got[1] if got is not None else 0) + delta
    if n:
        counts[id(st)] = (st, n)
    else:
        del counts[id(st)]


# Up to this many changed nodes are filtered one by one: the columnar pass's fixed
# cost (gathering columns, each plugin's vector set-up) outweighs a few per-node
# calls (PreemptionBasic's retry re-filters ~3 nodes). Both give the same verdicts.
FEW_NODES_PER_NODE = 16


def _filter(fwk: Framework, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo],
            positions: list[int]) -> dict[int, Status] | None:
    """{k: status} for the nodes at `positions` that fail (k indexes `positions`);
    None when one answers Error (the full pass raises the first in its order)."""
    if not positions:
        return {}
    if (len(positions) > FEW_NODES_PER_NODE and fwk.can_filter_columnar(state)
            and isinstance(nodes, ColumnarNodes)):
        failed = fwk.run_filter_nodes_failed(state, pod, nodes.take(positions))
    else:
        failed = {}
        for k, p in enumerate(positions):
            st = fwk.run_filter_with_nominated_pods(state, pod, nodes[p])
            if st.code != Code.Success:
                failed[k] = st
    if any(st.code == Code.Error for st in failed.values()):
        return None
    return failed


def _requests(pod: Pod) -> frozenset:
    return frozenset(pod.requests.items())
