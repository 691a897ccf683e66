"""run_score's flat plugins (every node normalised to one value: scores all alike under
DefaultNormalizeScore or without NormalizeScore, or reversed over scores none above 0)
are weighed once and added to the totals as one number, not made into a column; a
DefaultNormalizeScore over scores none below 0 skips the range check. The scores,
totals, chosen host and statuses are the per-node path's."""
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from framework.api.objects import Node
from framework.cache import Snapshot
from framework.host_selection import select_host
from framework.interface import CycleState
from framework.plugins.helper import DEFAULT_NORMALIZER, REVERSE_NORMALIZER
from tests.framework.test_runtime import make, pod


class ColumnScore:
    """Raw scores given per node name, as an int64 column (columnar form) or one by one."""

    def __init__(self, name, values, ext):
        self.name, self.values, self._ext = name, values, ext

    def score(self, state, pod, node_info):
        return self.values[int(node_info.name[1:])], None

    def score_nodes(self, state, pod, nodes):
        return np.array([self.values[int(ni.name[1:])] for ni in nodes], dtype=np.int64), None

    def score_extensions(self):
        return self._ext


class AlikeColumnScore(ColumnScore):
    """One value for every node, as one int64 element seen through a stride of 0
    (zeros_column's form, ImageLocality where no node reports images)."""

    def score_nodes(self, state, pod, nodes):
        return np.broadcast_to(np.int64(self.values[0]), (len(nodes),)), None


def _nodes(n):
    return Snapshot.build([Node({"metadata": {"name": f"n{i}"}}) for i in range(n)], []).list()


def _run(plugins, weights, n, columnar, traced):
    fwk = make(plugins, {"score": [p.name for p in plugins]}, weights)
    fwk.use_columnar = columnar
    seen = []
    trace = (lambda name, raw, normalized, weight: seen.append(name)) if traced else None
    scores, status = fwk.scoring.run_score(CycleState(), pod(), _nodes(n), trace)
    out = (status.code, status.message(), [(s.name, s.scores, s.total_score) for s in scores])
    host = select_host(scores, random.Random(7)) if status.is_success() else None
    return out, host


_EXTS = {"none": None, "default": DEFAULT_NORMALIZER, "reverse": REVERSE_NORMALIZER}


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6), st.data())
def test_flat_plugins_score_as_the_per_node_path(n, data) -> None:
    plugins, weights = [], {}
    for k in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["alike", "not_above_zero", "any", "wide"]))
        if kind == "alike":
            values = [data.draw(st.integers(-3, 120))] * n
        elif kind == "not_above_zero":
            values = data.draw(st.lists(st.integers(-5, 0), min_size=n, max_size=n))
        elif kind == "any":
            values = data.draw(st.lists(st.integers(-2, 110), min_size=n, max_size=n))
        else:  # products past int64 under DefaultNormalizeScore: the list form answers
            values = data.draw(st.lists(st.integers(-(1 << 62), 1 << 62), min_size=n, max_size=n))
        name = f"P{k}"
        form = AlikeColumnScore if kind == "alike" and data.draw(st.booleans()) else ColumnScore
        plugins.append(form(name, values, _EXTS[data.draw(st.sampled_from(sorted(_EXTS)))]))
        weights[name] = data.draw(st.integers(1, 5))
    per_node = _run(plugins, weights, n, columnar=False, traced=False)
    assert _run(plugins, weights, n, columnar=True, traced=False) == per_node
    assert _run(plugins, weights, n, columnar=True, traced=True) == per_node


def test_a_reversed_plugin_over_scores_none_above_zero_is_one_number_not_a_column() -> None:
    plugins = [ColumnScore("T", [0, -1, 0], REVERSE_NORMALIZER), ColumnScore("F", [5, 9, 2], None)]
    fwk = make(plugins, {"score": ["T", "F"]}, {"T": 3, "F": 1})
    scores, status = fwk.scoring.run_score(CycleState(), pod(), _nodes(3))
    assert status.is_success()
    assert scores.columns[0] == 300  # weighed once: no column of 300s made
    assert scores.totals.tolist() == [305, 309, 302]
    assert [s.scores for s in scores][1] == [("T", 300), ("F", 9)]


def test_a_plugin_without_normalize_scoring_every_node_alike_is_one_number() -> None:
    plugins = [AlikeColumnScore("I", [0, 0], None), ColumnScore("F", [5, 9], None)]
    fwk = make(plugins, {"score": ["I", "F"]}, {"I": 2, "F": 1})
    scores, status = fwk.scoring.run_score(CycleState(), pod(), _nodes(2))
    assert status.is_success() and scores.columns[0] == 0 and scores.totals.tolist() == [5, 9]


def test_alike_scores_out_of_range_without_normalize_still_abort_the_cycle() -> None:
    fwk = make([AlikeColumnScore("I", [101], None)], {"score": ["I"]}, {"I": 1})
    _, status = fwk.scoring.run_score(CycleState(), pod(), _nodes(3))
    assert not status.is_success() and "returns an invalid score 101" in status.message()


def test_default_normalize_over_scores_none_below_zero_is_not_range_checked_again(monkeypatch) -> None:
    from framework.runtime import scoring
    checked = []
    monkeypatch.setattr(scoring, "outside", lambda column, low, high: checked.append(len(column)) or False)
    plugins = [ColumnScore("T", [0, 3, 6], REVERSE_NORMALIZER), ColumnScore("F", [5, 9, 2], None)]
    fwk = make(plugins, {"score": ["T", "F"]}, {"T": 1, "F": 1})
    scores, status = fwk.scoring.run_score(CycleState(), pod(), _nodes(3))
    assert status.is_success() and scores.totals.tolist() == [105, 59, 2]
    assert checked == [3]  # F's column only: T's normalised scores are in range by construction
