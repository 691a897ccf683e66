"""The queue keeps its counts as pods move (issue 19): they always equal a recount,
and adding a pod (gated or not) never walks the unschedulable pool.

Adding 50,000 gated pods used to take 36 s because each AddPod counted the gated
pods in the pool (and looked for the oldest ungated one) by visiting every entry.
"""
from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

import actors.queue.scheduling_queue as sq
from actors.clock import FakeClock
from actors.queue.actor import AddPod, QueueActor
from actors.queue.unschedulable_pool import UnschedulablePool
from framework.interface import QueuedPodInfo
from tests.actors.test_queue import NODE_ADD, new_queue, node, pod

EXAMPLES = int(os.environ.get("KSCHED_QUEUE_EXAMPLES", "60"))
PODS = 6


class Touching(QueuedPodInfo):
    """A QueuedPodInfo that records every instance whose attributes are read while
    `recording` is on: how many pool entries an operation visits."""

    recording = False
    touched: set[int] = set()

    def __getattribute__(self, name: str):  # type: ignore[no-untyped-def]
        if Touching.recording:
            Touching.touched.add(id(self))
        return object.__getattribute__(self, name)


def _visited(q: sq.SchedulingQueue, action) -> set[str]:  # type: ignore[no-untyped-def]
    """Keys of the pool entries (present before `action`) read by it."""
    before = {id(qpi): key for key, qpi in q.unschedulable.items()}
    Touching.touched = set()
    Touching.recording = True
    try:
        action()
    finally:
        Touching.recording = False
    return {before[i] for i in Touching.touched if i in before}


async def test_adding_pods_visits_no_entry_of_the_unschedulable_pool(monkeypatch) -> None:
    monkeypatch.setattr(sq, "QueuedPodInfo", Touching)
    q = new_queue()
    actor = QueueActor(q, FakeClock(0.0))
    for i in range(200):
        await actor.handle(AddPod(pod=pod(f"gated-{i}", gates=["wait"])))
    for i in range(50):  # rejected by a plugin: in the pool, not gated (the 5-minute timer)
        await actor.handle(AddPod(pod=pod(f"rejected-{i}")))
        qpi = q.pop()
        assert qpi is not None
        qpi.unschedulable_plugins = {"NodeResourcesFit"}
        assert q.add_unschedulable_if_not_present(qpi, 1.0 + i) == "unschedulable"
    assert q.pending_counts()["gated"] == 200 and q.pending_counts()["unschedulable"] == 50

    for name, gates in (("one-more-gated", ["wait"]), ("free", None)):
        before = {id(qpi): key for key, qpi in q.unschedulable.items()}
        Touching.touched = set()
        Touching.recording = True
        try:
            await actor.handle(AddPod(pod=pod(name, gates=gates)))
        finally:
            Touching.recording = False
        visited = {before[i] for i in Touching.touched if i in before}
        assert visited == set(), f"AddPod({name}) read {len(visited)} pool entries"
    assert q.pending_counts() == {"active": 1, "backoff": 0, "unschedulable": 50, "gated": 201, "inFlight": 0}
    assert q.next_leftover_ns() == 1 * sq.NS + q.max_in_unschedulable_ns + 1


def test_a_node_event_is_not_offered_to_pods_waiting_for_their_scheduling_gates(monkeypatch) -> None:
    monkeypatch.setattr(sq, "QueuedPodInfo", Touching)
    q = new_queue()
    for i in range(100):
        q.add(pod(f"gated-{i}", gates=["wait"]), 0.0)
    q.add(pod("rejected"), 0.0)
    qpi = q.pop()
    assert qpi is not None
    qpi.unschedulable_plugins = {"NodeResourcesFit"}
    q.add_unschedulable_if_not_present(qpi, 1.0)
    visited = _visited(q, lambda: q.move_all_to_active_or_backoff(NODE_ADD, None, node("n"), 2.0))
    assert visited == {"default/rejected"}
    assert q.where("default/rejected") == "backoff"
    # The gate removal of one gated pod, offered as an event, is still offered to
    # that pod (it goes through PreEnqueue again; its own UpdatePod ungates it).
    visited = _visited(q, lambda: q.move_all_to_active_or_backoff(NODE_ADD, None, pod("gated-7"), 3.0))
    assert visited == {"default/gated-7"}


# --- counts equal a recount after any sequence of operations ---------------------------------------

OPS = st.one_of(
    st.tuples(st.just("add"), st.integers(0, PODS - 1), st.booleans()),
    st.tuples(st.just("ungate"), st.integers(0, PODS - 1), st.booleans()),
    st.tuples(st.just("delete"), st.integers(0, PODS - 1), st.booleans()),
    st.tuples(st.just("pop"), st.integers(0, PODS - 1), st.booleans()),
    st.tuples(st.just("fail"), st.integers(0, PODS - 1), st.booleans()),
    st.tuples(st.just("activate"), st.integers(0, PODS - 1), st.booleans()),
    st.tuples(st.just("move"), st.integers(0, PODS - 1), st.booleans()),
    st.tuples(st.just("advance"), st.integers(0, 400), st.booleans()),
    st.tuples(st.just("hold"), st.integers(0, PODS - 1), st.booleans()),  # gated by another plugin
)


class WalkingPool(UnschedulablePool):
    """The pool as it was: a dict in insertion order, every question answered by
    walking it (the reference the kept counts and orders must agree with)."""

    def __init__(self) -> None:
        super().__init__()
        self.order: dict[str, QueuedPodInfo] = {}

    def put(self, qpi: QueuedPodInfo) -> None:
        super().put(qpi)  # pops the key first (self.pop below)
        self.order[qpi.pod.key] = qpi

    def pop(self, key: str, default: QueuedPodInfo | None = None) -> QueuedPodInfo | None:
        self.order.pop(key, None)
        return super().pop(key, default)

    @property
    def gated_count(self) -> int:
        return sum(1 for x in self.order.values() if x.gated)

    def oldest_ungated_timestamp(self) -> int | None:
        return min((x.timestamp for x in self.order.values() if not x.gated), default=None)

    def take_expired(self, before_ns: int) -> list[QueuedPodInfo]:
        out = [x for x in self.order.values() if not x.gated and x.timestamp < before_ns]
        for x in out:
            self.pop(x.pod.key)
        return out

    def movable(self, also: str | None = None, event: object = None) -> list[tuple[str, QueuedPodInfo]]:
        return list(self.order.items())  # the queue skips pods held by SchedulingGates itself; no hint index


def _recount(q: sq.SchedulingQueue) -> dict[str, int]:
    pool = q.unschedulable.values()
    gated = sum(1 for x in pool if x.gated)
    return {"active": len(q.active_q.values()),
            "backoff": len(q.backoff_q.values()) + len(q.error_backoff_q.values()),
            "unschedulable": len(pool) - gated, "gated": gated, "inFlight": len(q.in_flight)}


def _check(q: sq.SchedulingQueue) -> None:
    assert q.pending_counts() == _recount(q)
    ungated = [x.timestamp for x in q.unschedulable.values() if not x.gated]
    want = min(ungated) + q.max_in_unschedulable_ns + 1 if ungated else None
    assert q.next_leftover_ns() == want
    for key, x in q.unschedulable.items():
        assert q.where(key) == ("gated" if x.gated else "unschedulable")


def _run(q: sq.SchedulingQueue, ops, check) -> list[str]:  # type: ignore[no-untyped-def]
    """Apply `ops`; `check(q)` after each; returns where every pod is after each op
    and the order pods are popped in."""
    now = 0.0
    popped: dict[str, QueuedPodInfo] = {}
    trace: list[str] = []
    for op, i, flag in ops:
        p = pod(f"p{i}", gates=["wait"] if flag else None)
        if op == "add":
            q.add(p, now)
        elif op == "ungate":
            q.update(None, pod(f"p{i}"), now)
        elif op == "delete":
            q.delete(p)
            popped.pop(p.key, None)
        elif op == "pop":
            qpi = q.pop()
            if qpi is not None:
                popped[qpi.pod.key] = qpi
                trace.append(f"popped {qpi.pod.key}")
        elif op == "fail" and popped:
            key = sorted(popped)[i % len(popped)]
            qpi = popped.pop(key)
            qpi.unschedulable_plugins = {"NodeResourcesFit"} if flag else set()
            q.add_unschedulable_if_not_present(qpi, now)
        elif op == "activate":
            q.activate([p], now)
        elif op == "move":
            q.move_all_to_active_or_backoff(NODE_ADD, None, pod(f"p{i}") if flag else node("n"), now)
        elif op == "advance":
            now += i
            due = [x.timestamp for x in q.unschedulable.values()
                   if not x.gated and sq.to_ns(now) - x.timestamp > q.max_in_unschedulable_ns]
            q.flush_backoff_completed(now)
            assert q.flush_unschedulable_leftover(now) == len(due)
        elif op == "hold" and q.get(p.key) is None and p.key not in popped:
            qpi = QueuedPodInfo(pod=p, gated=True, gating_plugin="Coscheduling")
            qpi.unschedulable_plugins = {"NodeResourcesFit"}
            q.add_unschedulable_if_not_present(qpi, now)
        check(q)
        trace.append(" ".join(f"{k}:{q.where(k)}" for k in sorted({f"default/p{j}" for j in range(PODS)})))
    while (qpi := q.pop()) is not None:  # what is left, in the order it would be scheduled
        trace.append(f"popped {qpi.pod.key}")
    return trace


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(st.lists(OPS, max_size=60))
def test_counts_equal_a_recount_after_any_sequence_of_queue_operations(ops) -> None:  # type: ignore[no-untyped-def]
    _run(new_queue(), ops, _check)


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(st.lists(OPS, max_size=60))
def test_the_kept_pool_moves_pods_in_the_same_order_as_walking_it(ops) -> None:  # type: ignore[no-untyped-def]
    kept = new_queue()
    walking = new_queue()
    walking.unschedulable = WalkingPool()
    assert _run(kept, ops, _check) == _run(walking, ops, lambda q: None)
