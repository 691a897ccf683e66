"""Choosing among nodes: how many feasible nodes a Filter pass looks for, and the
host picked from the scores (upstream: schedule_one.go numFeasibleNodesToFind,
selectHost)."""
from __future__ import annotations

import random
from typing import Sequence

import numpy as np

from framework.interface import NodePluginScores
from framework.runtime import NodeScoreList

EMPTY_PRIORITY_LIST = "empty priorityList"
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (adaptive when unset or 0)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = 50 - num_all_nodes // 125
        if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    n = num_all_nodes * pct // 100
    return max(n, MIN_FEASIBLE_NODES_TO_FIND)


def select_host(scores: Sequence[NodePluginScores], rand: random.Random) -> str:
    """The highest total wins; a tie is broken uniformly at random with one draw
    from `rand` (upstream samples the tied nodes one by one, with the same
    distribution)."""
    if not len(scores):
        raise ValueError(EMPTY_PRIORITY_LIST)
    if isinstance(scores, NodeScoreList):
        totals = scores.totals
        name_at = scores.name_at
    else:
        totals = np.array([s.total_score for s in scores], dtype=object)
        name_at = lambda i: scores[i].name  # noqa: E731
    ties = np.flatnonzero(totals == totals.max())
    if len(ties) == 1:
        return name_at(int(ties[0]))
    return name_at(int(ties[rand.randrange(len(ties))]))
