"""What the Scheduler actor answers when asked: frozen copies, never its own objects.

The scheduler keeps, per pending pod, what its last attempt produced (`Attempt`,
its own mutable record) and counters and latencies (`SchedulerStats`). Nothing
outside its loop reads them: a tool that needs them (the conformance runner, the
benchmark, the daemon's /stats) asks with GetAttempts or GetStats and gets the
views below, built in the scheduler's loop between two cycles.
"""
from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass, field

from framework.attempt_outcome import FitError, ScheduleResult

KEEP_LATENCIES = 200_000
RECENT_BINDS = 1_000  # assume-to-bound latencies a stats reply carries


@dataclass(slots=True)
class Attempt:
    """What the last scheduling attempt of a pod produced (the scheduler's own record)."""

    result: ScheduleResult | None = None
    fit_error: FitError | None = None
    error: str = ""


@dataclass(slots=True)
class SchedulerStats:
    attempts: int = 0
    scheduled: int = 0
    failed: int = 0
    # Seconds from first enqueue to bound, for the most recent pods.
    latencies: collections.deque[float] = field(default_factory=lambda: collections.deque(maxlen=KEEP_LATENCIES))
    # Seconds from assume to bound (the binding cycle, Permit's wait included), most recent pods.
    bind_latencies: collections.deque[float] = field(default_factory=lambda: collections.deque(maxlen=KEEP_LATENCIES))


@dataclass(frozen=True, slots=True, kw_only=True)
class GetStats:
    """Ask for the counters (a StatsView); `latencies`: with every kept latency too."""

    reply: asyncio.Future
    latencies: bool = False


@dataclass(frozen=True, slots=True)
class StatsView:
    attempts: int
    scheduled: int
    failed: int
    binding_cycles: int  # running now
    # Assume-to-bound seconds of the most recent binds (at most RECENT_BINDS), oldest first.
    recent_bind_seconds: tuple[float, ...] = ()
    failures_reused: int = 0  # failed attempts that reused a known failure (actors/failure_reuse.py)
    # Only when asked with latencies=True: every kept enqueue-to-bound and
    # assume-to-bound latency (at most KEEP_LATENCIES each), oldest first.
    e2e_seconds: tuple[float, ...] = ()
    bind_seconds: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class GetAttempts:
    """Ask what the last attempt of each of these pods (keys) produced: a dict of
    AttemptView for the pods that have one."""

    keys: tuple[str, ...]
    reply: asyncio.Future


@dataclass(frozen=True, slots=True)
class NodeStatusView:
    node: str
    code: str  # upstream's Code.String()
    reasons: tuple[str, ...]
    plugin: str


@dataclass(frozen=True, slots=True)
class FitErrorView:
    """A FitError as its diagnosis stood when asked, every node of the snapshot listed."""

    num_all_nodes: int
    unschedulable_plugins: tuple[str, ...]  # sorted
    node_statuses: tuple[NodeStatusView, ...]  # in the snapshot's node order
    message: str


@dataclass(frozen=True, slots=True)
class AttemptView:
    evaluated_nodes: int | None  # None: the attempt found no node
    feasible_nodes: int | None
    fit_error: FitErrorView | None
    error: str


def fit_error_view(err: FitError, node_names: list[str]) -> FitErrorView:
    d = err.diagnosis
    statuses = []
    for name in node_names:
        st = d.node_to_status.get(name)
        statuses.append(NodeStatusView(name, st.code.name, tuple(st.reasons), st.plugin or ""))
    return FitErrorView(err.num_all_nodes, tuple(sorted(d.unschedulable_plugins)), tuple(statuses), err.message())


def attempt_view(a: Attempt, node_names: list[str]) -> AttemptView:
    r = a.result
    return AttemptView(r.evaluated_nodes if r is not None else None, r.feasible_nodes if r is not None else None,
                       fit_error_view(a.fit_error, node_names) if a.fit_error is not None else None, a.error)
