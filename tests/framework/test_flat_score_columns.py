"""run_score's flat plugins (every node normalised to one value: scores all alike under
DefaultNormalizeScore, or reversed over scores none above 0) are weighed once and added
to the totals as one number, not made into a column: the scores, totals, chosen host and
statuses are the per-node path's."""
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
        kind = data.draw(st.sampled_from(["alike", "not_above_zero", "any"]))
        if kind == "alike":
            values = [data.draw(st.integers(-3, 120))] * n
        elif kind == "not_above_zero":
            values = data.draw(st.lists(st.integers(-5, 0), min_size=n, max_size=n))
        else:
            values = data.draw(st.lists(st.integers(-2, 110), min_size=n, max_size=n))
        name = f"P{k}"
        plugins.append(ColumnScore(name, values, _EXTS[data.draw(st.sampled_from(sorted(_EXTS)))]))
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
