import collections
import random

import pytest

from framework.algorithm import SchedulingAlgorithm, num_feasible_nodes_to_find
from framework.attempt_outcome import FitError, NoNodesAvailable, SchedulingError
from framework.host_selection import select_host
from framework.api.objects import Node, Pod
from framework.cache import Snapshot
from framework.handle import FrameworkHandle
from framework.interface import Code, CycleState, NodePluginScores, Status
from framework.runtime import Framework
from tests.framework.fakes import BindFake, FilterFake, PreFilterFake, ScoreFake, SortFake


def nodes(n):
    return [Node({"metadata": {"name": f"n{i}"}}) for i in range(n)]


def pod(name="p"):
    return Pod({"metadata": {"name": name}, "spec": {}})


def framework(snapshot, pre_filter=(), filters=(), scores=(), pct=None):
    plugins = {p.name: p for p in [SortFake(), BindFake("Bind"), *pre_filter, *filters, *scores]}
    points = {
        "queueSort": ["Sort"], "bind": ["Bind"],
        "preFilter": [p.name for p in pre_filter], "filter": [p.name for p in filters], "score": [p.name for p in scores],
    }
    return Framework("default-scheduler", plugins, points, {p.name: 1 for p in scores}, FrameworkHandle(snapshot=snapshot), pct)


@pytest.mark.parametrize(
    "pct, num_nodes, expected",
    [
        (None, 10, 10),
        (40, 10, 10),
        (None, 99, 99),
        (None, 100, 100),
        (None, 1000, 420),
        (40, 1000, 400),
        (None, 6000, 300),
        (40, 6000, 2400),
        (None, 5000, 500),
        (1, 1000, 100),
        (100, 5000, 5000),
    ],
    ids=lambda x: str(x),
)
def test_num_feasible_nodes_to_find_follows_upstreams_table(pct, num_nodes, expected):
    assert num_feasible_nodes_to_find(pct, num_nodes) == expected


def test_select_host_breaks_ties_uniformly_with_a_seeded_random_source():
    scores = [NodePluginScores("a", total_score=5), NodePluginScores("b", total_score=9),
              NodePluginScores("c", total_score=9), NodePluginScores("d", total_score=9)]
    rand = random.Random(42)
    counts = collections.Counter(select_host(scores, rand) for _ in range(30000))
    assert set(counts) == {"b", "c", "d"}
    for name in "bcd":
        assert abs(counts[name] - 10000) < 600, counts


def test_select_host_rejects_an_empty_list():
    with pytest.raises(ValueError, match="empty priorityList"):
        select_host([], random.Random(0))


def test_no_nodes_gives_upstreams_error():
    snap = Snapshot.build([], [])
    with pytest.raises(NoNodesAvailable, match="no nodes available to schedule pods"):
        SchedulingAlgorithm().schedule_pod(framework(snap), CycleState(), pod(), snap)


def test_start_index_rotates_across_pods_by_the_nodes_processed():
    snap = Snapshot.build(nodes(300), [])
    f = FilterFake("F")
    fwk = framework(snap, filters=[f], scores=[ScoreFake("S", {})], pct=50)
    algo = SchedulingAlgorithm(random.Random(1))
    fwk.handle.set_snapshot(snap)
    algo.schedule_pod(fwk, CycleState(), pod("a"), snap)
    assert f.seen[0] == "n0" and len(f.seen) == 150
    f.seen.clear()
    algo.schedule_pod(fwk, CycleState(), pod("b"), snap)
    assert f.seen[0] == "n150"
    f.seen.clear()
    algo.schedule_pod(fwk, CycleState(), pod("c"), snap)
    assert f.seen[0] == "n0"


def test_without_score_plugins_the_first_feasible_node_is_taken():
    snap = Snapshot.build(nodes(5), [])
    f = FilterFake("F", reject={"n0"})
    fwk = framework(snap, filters=[f])
    res = SchedulingAlgorithm().schedule_pod(fwk, CycleState(), pod(), snap)
    assert res.suggested_host == "n1"
    assert res.evaluated_nodes == 2


def test_fit_error_message_counts_reasons_sorted_as_strings():
    snap = Snapshot.build(nodes(12), [])
    reject_cpu = FilterFake("Cpu", reject={f"n{i}" for i in range(10)}, reason="Insufficient cpu")
    taint = FilterFake("Taint", reject="*", reason="node(s) had untolerated taint(s)")
    fwk = framework(snap, filters=[reject_cpu, taint])
    with pytest.raises(FitError) as err:
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), pod(), snap)
    assert err.value.message() == (
        "0/12 nodes are available: 10 Insufficient cpu, 2 node(s) had untolerated taint(s)."
    )
    assert err.value.diagnosis.unschedulable_plugins == {"Cpu", "Taint"}


def test_prefilter_rejection_gives_every_node_its_status_and_the_message_once():
    snap = Snapshot.build(nodes(3), [])
    pre = PreFilterFake("Pre", status=Status(Code.UnschedulableAndUnresolvable, "no volume"))
    fwk = framework(snap, pre_filter=[pre], filters=[FilterFake("F")])
    with pytest.raises(FitError) as err:
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), pod(), snap)
    assert err.value.message() == "0/3 nodes are available: no volume."
    assert err.value.diagnosis.node_to_status.get("n2").reasons == ["no volume"]
    assert err.value.diagnosis.unschedulable_plugins == {"Pre"}


def test_prefilter_result_narrows_the_nodes_and_absent_nodes_are_unresolvable():
    snap = Snapshot.build(nodes(4), [])
    pre = PreFilterFake("Pre", result={"n3"})
    f = FilterFake("F", reject={"n3"})
    fwk = framework(snap, pre_filter=[pre], filters=[f], scores=[ScoreFake("S", {})])
    with pytest.raises(FitError) as err:
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), pod(), snap)
    assert f.seen == ["n3"]
    assert err.value.message() == "0/4 nodes are available: 1 nope, 3 node(s) didn't satisfy plugin(s) [Pre]."


def test_filter_error_aborts_with_upstreams_wording():
    snap = Snapshot.build(nodes(2), [])
    fwk = framework(snap, filters=[FilterFake("Boom", reject="*", code=Code.Error, reason="disk on fire")])
    with pytest.raises(SchedulingError, match='running "Boom" filter plugin: disk on fire'):
        SchedulingAlgorithm().schedule_pod(fwk, CycleState(), pod(), snap)


def test_highest_weighted_total_wins():
    snap = Snapshot.build(nodes(3), [])
    fwk = framework(snap, filters=[FilterFake("F")], scores=[ScoreFake("S", {"n0": 10, "n1": 90, "n2": 50})])
    res = SchedulingAlgorithm(random.Random(3)).schedule_pod(fwk, CycleState(), pod(), snap)
    assert res.suggested_host == "n1"
    assert res.evaluated_nodes == 3 and res.feasible_nodes == 3
