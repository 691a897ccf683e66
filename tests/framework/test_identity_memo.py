"""IdentityMemo answers again only for the very object it kept, and keeps a bounded number."""
from __future__ import annotations

from framework.identity_memo import IdentityMemo


def test_the_same_object_is_answered_from_the_memo_and_an_equal_one_is_worked_out_again() -> None:
    calls: list[object] = []
    memo: IdentityMemo[list[int], int] = IdentityMemo(4)
    first, equal = [1, 2], [1, 2]
    compute = lambda obj: (calls.append(obj), sum(obj))[1]  # noqa: E731
    assert memo.of(first, compute) == 3 and memo.of(first, compute) == 3
    assert memo.of(equal, compute) == 3
    assert [c is first for c in calls] == [True, False]


def test_the_oldest_answer_goes_once_the_memo_is_full() -> None:
    calls: list[int] = []
    memo: IdentityMemo[tuple[int], int] = IdentityMemo(2)
    a, b, c = (1,), (2,), (3,)
    compute = lambda obj: (calls.append(obj[0]), obj[0])[1]  # noqa: E731
    for obj in (a, b, c, b, a):
        memo.of(obj, compute)
    assert calls == [1, 2, 3, 1]  # b kept, a dropped when c came
