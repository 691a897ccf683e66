"""TaintToleration's columnar Score where no node of the list has a PreferNoSchedule
taint: one read-only zero seen through a stride of 0 (h26-algo3), which the runtime
normalises once (reversed: every node 100). Scores, totals and the chosen host are the
per-node path's whatever the taints."""
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.handle import FrameworkHandle
from framework.host_selection import select_host
from framework.interface import CycleState
from framework.node_table import ColumnarNodes
from framework.plugins.tainttoleration.taint_toleration import TaintToleration
from tests.framework.test_runtime import make

EFFECTS = ("PreferNoSchedule", "NoSchedule", "NoExecute")


def _node(i: int, effects: list[str]) -> Node:
    taints = [{"key": f"k{j}", "value": "v", "effect": e} for j, e in enumerate(effects)]
    return Node({"metadata": {"name": f"n{i}"}, "spec": {"taints": taints} if taints else {}})


def _pod(tolerate_prefer: bool) -> Pod:
    spec = {"tolerations": [{"key": "k0", "operator": "Exists", "effect": "PreferNoSchedule"}]} if tolerate_prefer else {}
    return Pod({"metadata": {"name": "p", "uid": "p"}, "spec": spec})


def _plugin() -> TaintToleration:
    return TaintToleration.new(None, FrameworkHandle())


def test_untainted_nodes_score_one_read_only_zero_and_a_prefer_taint_the_counts():
    pl, p = _plugin(), _pod(False)
    state = CycleState()
    pl.pre_score(state, p, [])
    nodes = Snapshot.build([_node(i, ["NoSchedule"] if i == 2 else []) for i in range(6)], []).list()
    assert type(nodes) is ColumnarNodes
    raw, status = pl.score_nodes(state, p, nodes)
    assert status is None and raw.strides == (0,) and not raw.flags.writeable and raw.tolist() == [0] * 6
    tainted = Snapshot.build([_node(i, ["PreferNoSchedule"] if i == 4 else []) for i in range(6)], []).list()
    raw, _ = pl.score_nodes(state, p, tainted)
    assert raw.strides != (0,) and raw.tolist() == [0, 0, 0, 0, 1, 0]


@settings(max_examples=60, deadline=None)
@given(taints=st.lists(st.lists(st.sampled_from(EFFECTS), max_size=2), min_size=1, max_size=12),
       tolerate_prefer=st.booleans(), seed=st.integers(0, 99))
def test_columnar_scores_totals_and_host_are_the_per_node_paths(taints, tolerate_prefer, seed):
    nodes = Snapshot.build([_node(i, effects) for i, effects in enumerate(taints)], []).list()
    got = []
    for columnar in (True, False):
        pl = _plugin()
        fwk = make([pl], {"preScore": [pl.name], "score": [pl.name]}, {pl.name: 3})
        fwk.use_columnar = columnar
        state, p = CycleState(), _pod(tolerate_prefer)
        assert fwk.run_pre_score(state, p, nodes).is_success()
        scores, status = fwk.run_score(state, p, nodes)
        assert status.is_success()
        got.append(([(s.name, s.scores, s.total_score) for s in scores], select_host(scores, random.Random(seed))))
    assert got[0] == got[1]
