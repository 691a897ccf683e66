"""Helpers shared by scoring plugins (upstream's plugins/helper package)."""
from __future__ import annotations

from framework.interface import NodeScore, Status


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's int64 `/` does."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> Status | None:
    """Scale scores in place from [0, max(scores)] to [0, max_priority].

    With `reverse`, each result is subtracted from max_priority. When every score
    is zero (or the list is empty) the scores stay as they are, or all become
    max_priority when reversed. Scores are assumed non-negative. Always Success.
    """
    max_count = 0
    for s in scores:
        if s.score > max_count:
            max_count = s.score
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return None
    for s in scores:
        score = go_div(max_priority * s.score, max_count)
        s.score = max_priority - score if reverse else score
    return None
