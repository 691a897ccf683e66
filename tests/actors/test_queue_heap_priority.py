"""activeQ under PrioritySort compares its entries inline (PodHeap(by_priority=True)):
over any sequence of pushes, removals and pops it hands pods out in the order the
heap calling PrioritySort's `less` through the queue's SortGuard gives."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.queue.heap import PodHeap
from actors.queue.sort_guard import SortGuard
from framework.interface import QueuedPodInfo
from framework.plugins.queuesort.priority_sort import PrioritySort
from tests.actors.test_queue import pod

# (op, pod index, priority, timestamp, tie): few values, so equal priorities,
# timestamps and ties are common
OPS = st.tuples(st.sampled_from(["push", "push", "push", "remove", "pop", "reheapify"]), st.integers(0, 7),
                st.integers(-1, 2), st.integers(0, 3), st.integers(0, 2))


def _qpi(i: int, priority: int, timestamp: int, tie: int) -> QueuedPodInfo:
    qpi = QueuedPodInfo(pod=pod(f"p{i}", priority=priority), timestamp=timestamp)
    qpi.tie = tie
    return qpi


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(OPS, max_size=80))
def test_the_inline_priority_order_pops_what_prioritysorts_less_pops(ops: list) -> None:
    less = SortGuard(PrioritySort().less, "PrioritySort")
    called, inline = PodHeap(less), PodHeap(less, by_priority=True)
    for op, i, priority, timestamp, tie in ops:
        if op == "push":
            for heap in (called, inline):
                heap.push(_qpi(i, priority, timestamp, tie))
        elif op == "reheapify":
            for heap in (called, inline):
                heap.reheapify()
        elif op == "remove":
            assert (called.remove(f"default/p{i}") is None) == (inline.remove(f"default/p{i}") is None)
        else:
            a, b = called.pop(), inline.pop()
            assert (a and a.pod.key) == (b and b.pod.key)
    assert [q.pod.key for q in iter(called.pop, None)] == [q.pod.key for q in iter(inline.pop, None)]
    assert not less.faulted


def test_the_inline_heap_compares_pods_of_distinct_priority_or_time_without_a_python_call(monkeypatch) -> None:
    import actors.queue.heap as heap_module
    calls = []
    entry_lt = heap_module._PriorityEntry.__lt__

    def counted(self, other):  # noqa: ANN001
        calls.append(1)
        return entry_lt(self, other)
    monkeypatch.setattr(heap_module._PriorityEntry, "__lt__", counted)
    inline = PodHeap(SortGuard(PrioritySort().less, "PrioritySort"), by_priority=True)
    for i in range(64):
        inline.push(_qpi(i, priority=i % 3, timestamp=1000 - i, tie=0))
    inline.reheapify()
    popped = [q.pod.key for q in iter(inline.pop, None)]
    assert popped[:3] == ["default/p62", "default/p59", "default/p56"]  # highest priority, earliest first
    assert calls == []
    inline.push(_qpi(1, priority=0, timestamp=5, tie=0))
    inline.push(_qpi(2, priority=0, timestamp=5, tie=0))  # equal keys: the entries decide (push order)
    assert [q.pod.key for q in iter(inline.pop, None)] == ["default/p1", "default/p2"] and calls
