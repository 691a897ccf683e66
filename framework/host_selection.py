"""Choosing among nodes: the host picked from the scores (upstream: schedule_one.go
selectHost). How many feasible nodes a Filter pass looks for is the algorithm's
(framework/algorithm.py)."""
from __future__ import annotations

import random
from typing import Sequence

import numpy as np

from framework.interface import NodePluginScores
from framework.runtime import NodeScoreList
from framework.reductions import column_max

EMPTY_PRIORITY_LIST = "empty priorityList"


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
    ties = (totals == column_max(totals)).nonzero()[0]
    if len(ties) == 1:
        return name_at(int(ties[0]))
    return name_at(int(ties[rand.randrange(len(ties))]))
