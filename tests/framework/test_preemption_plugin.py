"""DefaultPreemption with a real Framework (NodeResourcesFit at PreFilter/Filter)."""
from __future__ import annotations

import pytest

from framework.runtime import run_unsuspended
from framework.api.errors import ValidationError
from framework.api.objects import Pod
from framework.config import build_frameworks, load_config
from framework.handle import FrameworkHandle
from framework.interface import Code, CycleState, NodeToStatus, Status
from framework.plugins.defaultpreemption.default_preemption import DefaultPreemption, parse_args
from framework.waiting import WaitingPod
from tests.framework.preemption_builders import Cluster, ExtensionErrors, node, pdb, pod



def _all_failed(cluster: Cluster, code: Code = Code.Unschedulable) -> NodeToStatus:
    return NodeToStatus({ni.name: Status(code, "Insufficient cpu") for ni in cluster.snapshot.list()})


def _post_filter(cluster: Cluster, preemptor, filtered: NodeToStatus | None = None):  # noqa: ANN001, ANN202
    state = CycleState()
    cluster.fwk.run_pre_filter(state, preemptor)
    return run_unsuspended(cluster.preemption.post_filter(state, preemptor, filtered or _all_failed(cluster)))


# --- args -----------------------------------------------------------------------------------------

def test_args_default_to_ten_percent_and_one_hundred_nodes() -> None:
    assert parse_args(None) == (10, 100)
    assert parse_args({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 5}) == (0, 5)


@pytest.mark.parametrize(
    "args, field, message",
    [
        ({"minCandidateNodesPercentage": 101}, "minCandidateNodesPercentage", "Invalid value: 101: not in valid range [0, 100]"),
        ({"minCandidateNodesPercentage": -1}, "minCandidateNodesPercentage", "Invalid value: -1: not in valid range [0, 100]"),
        ({"minCandidateNodesAbsolute": -1}, "minCandidateNodesAbsolute", "Invalid value: -1: not in valid range [0, inf)"),
        ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}, "minCandidateNodesPercentage",
         "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"),
        ({"minCandidateNodesAbsolute": "5"}, "minCandidateNodesAbsolute", "must be an integer"),
    ],
    ids=["percentage-above-100", "percentage-negative", "absolute-negative", "both-zero", "not-an-integer"],
)
def test_bad_args_are_rejected_naming_the_field(args: dict, field: str, message: str) -> None:
    with pytest.raises(ValidationError) as err:
        DefaultPreemption.new(args, FrameworkHandle())
    assert err.value.field == field and err.value.detail == message


@pytest.mark.parametrize(
    "pct, absolute, num_nodes, expected",
    [(10, 100, 10, 10), (10, 100, 1000, 100), (40, 1, 1000, 400), (10, 50, 1000, 100), (10, 500, 1000, 500), (0, 1, 7, 1)],
)
def test_number_of_candidates_follows_percentage_and_absolute_minimum(pct: int, absolute: int, num_nodes: int, expected: int) -> None:
    pl = DefaultPreemption.new({"minCandidateNodesPercentage": pct, "minCandidateNodesAbsolute": absolute}, FrameworkHandle())
    offset, num = pl.get_offset_and_num_candidates(num_nodes)
    assert num == expected and 0 <= offset < num_nodes


def test_the_runtime_hands_the_plugin_its_own_framework() -> None:
    fwks = build_frameworks(load_config(None), FrameworkHandle())
    fwk = fwks["default-scheduler"]
    assert fwk.plugins["DefaultPreemption"].framework is fwk
    # DRA deallocates first; GangScheduling with GenericWorkload on
    assert fwk.points["postFilter"] == ["DynamicResources", "DefaultPreemption", "GangScheduling"]


# --- eligibility --------------------------------------------------------------------------------------

def test_preemption_policy_never_is_not_eligible() -> None:
    c = Cluster([node("n1")], [])
    ok, why = c.preemption.pod_eligible_to_preempt_others(pod("p", preemptionPolicy="Never"), None)
    assert (ok, why) == (False, "not eligible due to preemptionPolicy=Never.")


def _victim_terminating(name: str, priority: int) -> Pod:
    raw = pod(name, priority=priority, node_name="n1").raw
    return Pod({**raw, "metadata": {**raw["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"},
                           "status": {"conditions": [{"type": "DisruptionTarget", "status": "True",
                                                      "reason": "PreemptionByScheduler"}]}})


@pytest.mark.parametrize(
    "victim_priority, nominated_status, expected",
    [
        (0, None, False),
        (2000, None, True),
        (0, Status(Code.UnschedulableAndUnresolvable), True),
        (0, Status(Code.Unschedulable), False),
    ],
    ids=["lower-priority-victim-terminating", "terminating-pod-not-a-victim", "nominated-node-unresolvable", "nominated-node-unschedulable"],
)
def test_a_pod_waits_while_its_victims_terminate_on_its_nominated_node(victim_priority: int, nominated_status, expected: bool) -> None:  # noqa: ANN001
    c = Cluster([node("n1")], [_victim_terminating("v", victim_priority)])
    preemptor = Pod({**pod("p", priority=1000).raw, "status": {"nominatedNodeName": "n1"}})
    ok, why = c.preemption.pod_eligible_to_preempt_others(preemptor, nominated_status)
    assert ok is expected
    assert why == ("" if expected else "not eligible due to a terminating pod on the nominated node.")


# --- victims on one node ----------------------------------------------------------------------------------

def _select(c: Cluster, preemptor, node_name: str, pdbs=()):  # noqa: ANN001, ANN202
    state = CycleState()
    c.fwk.run_pre_filter(state, preemptor)
    return c.preemption.select_victims_on_node(state.clone(), preemptor, c.snapshot.get(node_name).clone(), list(pdbs))


def test_the_most_important_lower_priority_pods_are_reprieved() -> None:
    pods = [pod("low", cpu="200m", priority=1, node_name="n1"), pod("mid", cpu="200m", priority=5, node_name="n1"),
            pod("high", cpu="100m", priority=2000, node_name="n1")]
    c = Cluster([node("n1", cpu="500m")], pods)
    victims, violations, st = _select(c, pod("p", cpu="200m", priority=1000), "n1")
    assert st.is_success() and violations == 0
    assert [v.name for v in victims] == ["low"]


def test_pdb_protected_pods_are_reprieved_first_and_counted_when_evicted() -> None:
    pods = [pod("guarded", cpu="200m", priority=1, node_name="n1", labels={"app": "db"}),
            pod("plain", cpu="200m", priority=5, node_name="n1")]
    c = Cluster([node("n1", cpu="400m")], pods)
    victims, violations, st = _select(c, pod("p", cpu="200m", priority=1000), "n1", [pdb("db", {"app": "db"}, 0)])
    assert st.is_success()
    assert [v.name for v in victims] == ["plain"] and violations == 0

    victims, violations, st = _select(c, pod("p", cpu="400m", priority=1000), "n1", [pdb("db", {"app": "db"}, 0)])
    assert [v.name for v in victims] == ["plain", "guarded"] and violations == 1


def test_a_node_without_lower_priority_pods_has_no_victims() -> None:
    c = Cluster([node("n1")], [pod("same", priority=1000, node_name="n1")])
    victims, _, st = _select(c, pod("p", priority=1000), "n1")
    assert victims == [] and st == Status(Code.UnschedulableAndUnresolvable, "No preemption victims found for incoming pod")


def test_a_node_too_small_even_when_emptied_keeps_the_filter_status() -> None:
    c = Cluster([node("n1", cpu="200m")], [pod("low", priority=0, node_name="n1")])
    _, _, st = _select(c, pod("p", cpu="300m", priority=1000), "n1")
    assert st.is_rejected() and st.reasons == ["Insufficient cpu"] and st.plugin == "NodeResourcesFit"


def test_selecting_victims_leaves_the_snapshot_untouched() -> None:
    c = Cluster([node("n1", cpu="200m")], [pod("low", cpu="200m", priority=0, node_name="n1")])
    _post_filter(c, pod("p", cpu="200m", priority=1000))
    assert [pi.pod.name for pi in c.snapshot.get("n1").pods] == ["low"]


# --- PostFilter -----------------------------------------------------------------------------------------------

def test_preemption_evicts_victims_on_the_best_node_and_nominates_it() -> None:
    pods = [pod("a1", cpu="300m", priority=100, node_name="n1"),
            pod("b1", cpu="300m", priority=10, node_name="n2"),
            pod("c1", cpu="300m", priority=2000, node_name="n3")]
    c = Cluster([node("n1"), node("n2"), node("n3")], pods)
    result, st = _post_filter(c, pod("p", cpu="300m", priority=1000))
    assert st.is_success() and result.nominated_node_name == "n2"
    assert c.evicted() == ["b1"]
    victim, preemptor, message = c.handle.evicted[0]
    assert preemptor.name == "p" and message == "default-scheduler: preempting to accommodate a higher priority pod"


def test_a_victim_waiting_at_permit_is_rejected_instead_of_evicted() -> None:
    waiting_victim = pod("w", cpu="400m", priority=0, node_name="n1")
    c = Cluster([node("n1")], [waiting_victim])
    decisions: list[Status] = []
    c.waiting.add(WaitingPod(waiting_victim, "n1", {"Coscheduling": 10.0}, decisions.append))
    result, st = _post_filter(c, pod("p", cpu="400m", priority=1000))
    assert st.is_success() and result.nominated_node_name == "n1"
    assert c.evicted() == []
    assert decisions == [Status(Code.Unschedulable, "preempted")] and decisions[0].plugin == "DefaultPreemption"


def test_victims_already_being_deleted_are_not_evicted_again() -> None:
    raw = pod("gone", cpu="400m", priority=0, node_name="n1").raw
    deleting = Pod({**raw, "metadata": {**raw["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"}})
    c = Cluster([node("n1")], [deleting])
    result, st = _post_filter(c, pod("p", cpu="400m", priority=1000))
    assert st.is_success() and result.nominated_node_name == "n1" and c.evicted() == []


def test_lower_priority_nominations_on_the_chosen_node_are_cleared() -> None:
    lower = pod("lower", priority=5)
    higher = pod("higher", priority=5000)
    c = Cluster([node("n1")], [pod("v", cpu="400m", priority=0, node_name="n1")], nominated={"n1": [lower, higher]})
    result, st = _post_filter(c, pod("p", cpu="400m", priority=1000))
    assert st.is_success()
    assert [p.name for p in c.handle.cleared_nominations] == ["lower"]


def test_unresolvable_nodes_are_not_candidates() -> None:
    c = Cluster([node("n1")], [pod("v", cpu="400m", priority=0, node_name="n1")])
    result, st = _post_filter(c, pod("p", cpu="400m", priority=1000), _all_failed(c, Code.UnschedulableAndUnresolvable))
    assert result.nominated_node_name == "" and c.evicted() == []
    assert st == Status(Code.Unschedulable, "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")


def test_preemption_policy_never_gives_no_result() -> None:
    c = Cluster([node("n1")], [pod("v", cpu="400m", priority=0, node_name="n1")])
    result, st = _post_filter(c, pod("p", cpu="400m", priority=1000, preemptionPolicy="Never"))
    assert result is None and st == Status(Code.Unschedulable, "preemption: not eligible due to preemptionPolicy=Never.")


def test_an_extension_error_fails_preemption_only_when_no_node_is_a_candidate() -> None:
    pods = [pod("v1", cpu="400m", priority=0, node_name="n1"), pod("v2", cpu="400m", priority=0, node_name="n2")]
    c = Cluster([node("n1"), node("n2")], pods, extra=[ExtensionErrors({"n1"})])
    result, st = _post_filter(c, pod("p", cpu="400m", priority=1000))
    assert st.is_success() and result.nominated_node_name == "n2"

    c = Cluster([node("n1")], pods[:1], extra=[ExtensionErrors({"n1"})])
    result, st = _post_filter(c, pod("p", cpu="400m", priority=1000))
    assert result is None
    assert st == Status(Code.Error, 'preemption: running RemovePod on PreFilter plugin "ExtensionErrors": cannot remove v1')


def test_candidates_violating_no_pdb_are_preferred() -> None:
    pods = [pod("guarded", cpu="400m", priority=0, node_name="n1", labels={"app": "db"}),
            pod("plain", cpu="400m", priority=500, node_name="n2")]
    c = Cluster([node("n1"), node("n2")], pods, objects=[pdb("db", {"app": "db"}, 0)])
    result, st = _post_filter(c, pod("p", cpu="400m", priority=1000))
    assert st.is_success() and result.nominated_node_name == "n2" and c.evicted() == ["plain"]


def test_dry_run_stops_once_enough_candidates_are_found_starting_at_the_offset() -> None:
    nodes = [node(f"n{i}") for i in range(5)]
    pods = [pod(f"v{i}", cpu="400m", priority=0, node_name=f"n{i}") for i in range(5)]
    c = Cluster(nodes, pods)
    preemptor = pod("p", cpu="400m", priority=1000)
    state = CycleState()
    c.fwk.run_pre_filter(state, preemptor)
    dry = c.preemption.evaluator.dry_run_preemption(state, preemptor, c.snapshot.list(), [], 3, 2)
    assert [cand.name for cand in dry.candidates] == ["n3", "n4"]


def test_dry_run_keeps_looking_while_every_candidate_violates_a_pdb() -> None:
    nodes = [node(f"n{i}") for i in range(3)]
    pods = [pod("g0", cpu="400m", node_name="n0", labels={"app": "db"}),
            pod("g1", cpu="400m", node_name="n1", labels={"app": "db"}),
            pod("free", cpu="400m", node_name="n2")]
    c = Cluster(nodes, pods)
    preemptor = pod("p", cpu="400m", priority=1000)
    state = CycleState()
    c.fwk.run_pre_filter(state, preemptor)
    dry = c.preemption.evaluator.dry_run_preemption(state, preemptor, c.snapshot.list(), [pdb("db", {"app": "db"}, 0)], 0, 1)
    assert [(cand.name, cand.num_pdb_violations) for cand in dry.candidates] == [("n2", 0), ("n0", 1)]


def test_bad_args_in_a_profile_name_the_profile_plugin_and_field() -> None:
    cfg = load_config({"profiles": [{"pluginConfig": [{"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": -1}}]}]})
    with pytest.raises(ValueError) as err:
        build_frameworks(cfg, FrameworkHandle())
    assert str(err.value) == ("profiles[0] (default-scheduler): pluginConfig (DefaultPreemption).args."
                              "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)")
