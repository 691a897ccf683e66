"""Helpers shared by scoring plugins (upstream's plugins/helper package)."""
from __future__ import annotations

from typing import Any

from framework.interface import NodeScore, Status


class FilterEachNode:
    """A batch Filter form that calls the plugin's own `filter` per node, for plugins
    that are seldom run (PreFilter skips them for most pods) but should not keep
    the runtime off the batch path when they do run."""

    def filter_nodes(self, state: Any, pod: Any, nodes: list[Any]) -> list[Status | None]:
        flt = self.filter  # type: ignore[attr-defined]
        return [flt(state, pod, ni) for ni in nodes]


def score_state_for_nodes(state: Any, key: str, nodes: list[Any]) -> tuple[Any, Status | None]:
    """What a batch Score form reads first: its PreScore state, and an Error (as the
    per-node form words it) when that state is missing or a node has no Node."""
    s = state.get(key)
    if s is None:
        return None, Status.error_of(f'reading "{key}" from cycleState: not found')
    if any(ni.node is None for ni in nodes):
        return None, Status.error_of("node not found")
    return s, None


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's int64 `/` does."""
    if a >= 0 and b > 0:
        return a // b
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> Status | None:
    """Scale scores in place from [0, max(scores)] to [0, max_priority].

    With `reverse`, each result is subtracted from max_priority. When every score
    is zero (or the list is empty) the scores stay as they are, or all become
    max_priority when reversed. Scores are assumed non-negative. Always Success.
    """
    for s, v in zip(scores, default_normalize_values(max_priority, reverse, [s.score for s in scores])):
        s.score = v
    return None


def default_normalize_values(max_priority: int, reverse: bool, scores: list[int]) -> list[int]:
    """default_normalize_score on plain integers (the batch form)."""
    max_count = max(scores, default=0)
    if max_count <= 0:
        return [max_priority] * len(scores) if reverse else list(scores)
    if reverse:
        return [max_priority - go_div(max_priority * s, max_count) for s in scores]
    return [go_div(max_priority * s, max_count) for s in scores]
