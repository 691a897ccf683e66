import pytest

from framework.api.objects import Pod
from framework.interface import QueuedPodInfo
from framework.plugins.queuesort.priority_sort import PrioritySort


def _queued(name: str, priority: int | None, timestamp: int) -> QueuedPodInfo:
    spec: dict = {"containers": []}
    if priority is not None:
        spec["priority"] = priority
    return QueuedPodInfo(pod=Pod({"metadata": {"name": name}, "spec": spec}), timestamp=timestamp)


@pytest.mark.parametrize(
    ("a", "b", "a_first", "b_first"),
    [
        ((10, 200), (5, 100), True, False),
        ((5, 100), (5, 200), True, False),
        ((5, 100), (5, 100), False, False),
        ((None, 100), (-1, 50), True, False),
        ((None, 300), (0, 100), False, True),
    ],
    ids=["higher-priority-wins-over-earlier-time", "same-priority-earlier-time-first",
         "identical-is-not-less-either-way", "absent-priority-is-zero-above-negative", "absent-equals-zero-then-time"],
)
def test_priority_sort_orders_by_priority_then_queue_time(a, b, a_first, b_first):
    pl = PrioritySort.new(None, None)
    qa, qb = _queued("a", *a), _queued("b", *b)
    assert pl.less(qa, qb) is a_first
    assert pl.less(qb, qa) is b_first


def test_priority_sort_uses_queue_timestamp_not_initial_attempt():
    pl = PrioritySort.new(None, None)
    qa, qb = _queued("a", 1, 200), _queued("b", 1, 100)
    qa.initial_attempt_timestamp, qb.initial_attempt_timestamp = 0, 999
    assert pl.less(qb, qa)
