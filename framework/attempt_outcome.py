"""What one scheduling attempt ends with: the Diagnosis of why nodes were filtered
out, the FitError it makes (upstream's FitError.Error() message), the errors that are
not about fit, and the ScheduleResult of a placement (upstream: schedule_one.go,
framework/types.go)."""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import eq
from typing import Iterable, Sequence

from framework.api.objects import Pod
from framework.cache import NodeInfo
from framework.interface import Code, NodeToStatus, Status

NO_NODES_AVAILABLE = "no nodes available to schedule pods"


class NoNodesAvailable(Exception):
    def __init__(self) -> None:
        super().__init__(NO_NODES_AVAILABLE)


class SchedulingError(Exception):
    """A plugin answered Error: the attempt failed for a reason other than fit."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


@dataclass
class Diagnosis:
    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_plugin_status(self, status: Status) -> None:
        if not status.plugin:
            return
        if status.code == Code.Pending:
            self.pending_plugins.add(status.plugin)
        elif status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)


# Up to this many distinct Statuses, a kept map picks each one's names in a C-level
# pass over the nodes (the steady state: a few shared verdicts); beyond, one Python pass.
_FEW_STATUSES = 16


class KeptNodeToStatus(NodeToStatus):
    """A finished attempt's NodeToStatus, kept small: the node names of each
    distinct Status in one tuple (a 5,000-entry dict is ~150 KB; filter statuses
    are shared among nodes, so a few tuples hold the same). Reads as the map it
    was made from (get, items, len, nodes_for_code, absent); lookups are linear,
    for reports, not hot paths. It is not changed after the attempt."""

    __slots__ = ("groups", "count")

    def __init__(self, m: NodeToStatus) -> None:
        if isinstance(m, KeptNodeToStatus):
            self.groups: tuple[tuple[Status, tuple[str, ...]], ...] = m.groups
        elif len(known := getattr(m, "known_counts", None) or ()) == 1:  # an incremental retry's: one verdict
            self.groups = ((next(iter(known.values()))[0], tuple(m.statuses)),)
        else:  # a few distinct Statuses (one per plugin verdict and filtered chunk): each picks its names
            names, values = list(m.statuses), list(m.statuses.values())
            ids = list(map(id, values))
            distinct = dict(zip(ids, values))
            if len(distinct) <= _FEW_STATUSES:
                self.groups = tuple((st, tuple(compress(names, map(eq, ids, repeat(i))))) for i, st in distinct.items())
            else:  # one pass over the nodes
                by_status: dict[int, tuple[Status, list[str]]] = {}
                for name, st in m.items():
                    by_status.setdefault(id(st), (st, []))[1].append(name)
                self.groups = tuple((st, tuple(names)) for st, names in by_status.values())
        self.count = len(m)
        self.absent = m.absent
        self.statuses = None  # type: ignore[assignment]

    def get(self, node_name: str) -> Status:
        for st, names in self.groups:
            if node_name in names:
                return st
        return self.absent

    def set(self, node_name: str, status: Status) -> None:
        raise TypeError("a finished attempt's node statuses do not change")

    def __len__(self) -> int:
        return self.count

    def items(self) -> Iterable[tuple[str, Status]]:
        return [(name, st) for st, names in self.groups for name in names]

    def distinct(self) -> list[Status]:
        return [st for st, _ in self.groups]

    def counts(self) -> list[tuple[Status, int]]:
        return [(st, len(names)) for st, names in self.groups]

    def nodes_for_code(self, all_nodes: Sequence[NodeInfo], code: Code) -> list[NodeInfo]:
        named = {name for st, names in self.groups if st.code == code for name in names}
        listed = {name for _, names in self.groups for name in names}
        if self.absent.code == code:
            return [n for n in all_nodes if n.name in named or n.name not in listed]
        return [n for n in all_nodes if n.name in named]


class FitError(Exception):
    """No node fits the pod; message() is upstream's FitError.Error()."""

    def __init__(self, pod: Pod, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def message(self) -> str:
        msg = f"0/{self.num_all_nodes} nodes are available:"
        d = self.diagnosis
        if d.pre_filter_msg:
            msg += f" {d.pre_filter_msg}."
        else:
            counts: dict[str, int] = {}
            for st, n in d.node_to_status.counts():
                for r in st.reasons:
                    counts[r] = counts.get(r, 0) + n
            explicit = len(d.node_to_status)
            if explicit < self.num_all_nodes:
                for r in d.node_to_status.absent.reasons:
                    counts[r] = counts.get(r, 0) + self.num_all_nodes - explicit
            parts = sorted(f"{n} {r}" for r, n in counts.items())
            if parts:
                msg += f" {', '.join(parts)}."
        if d.post_filter_msg:
            # No period of our own: PostFilter messages end as they please (upstream).
            msg += f" {d.post_filter_msg}"
        return msg

    def __str__(self) -> str:
        return self.message()


@dataclass
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int
