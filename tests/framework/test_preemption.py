"""The preemption evaluator's pure parts: pod importance, PDB accounting, choosing the node."""
from __future__ import annotations

import pytest

from framework.cache import PodInfo
from framework.preemption import (
    NOT_STARTED,
    Candidate,
    aggregate_errors,
    earliest_start_time_of_highest_priority,
    filter_pods_with_pdb_violation,
    more_important_pod,
    pick_one_node_for_preemption,
    pod_terminating_by_preemption,
)
from framework.api.objects import Pod
from tests.framework.preemption_builders import pdb, pod

T1 = "2024-01-01T00:00:01Z"
T2 = "2024-01-01T00:00:02Z"
T3 = "2024-01-01T00:00:03Z"


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (pod("a", priority=10), pod("b", priority=5), True),
        (pod("a", priority=5), pod("b", priority=10), False),
        (pod("a", priority=5, start=T1), pod("b", priority=5, start=T2), True),
        (pod("a", priority=5, start=T2), pod("b", priority=5, start=T1), False),
        (pod("a", priority=5, start=T1), pod("b", priority=5), True),
        (pod("a", priority=5), pod("b", priority=5), False),
    ],
    ids=["higher-priority", "lower-priority", "earlier-start", "later-start", "started-beats-not-started", "tie"],
)
def test_more_important_pod_orders_by_priority_then_start_time(a: Pod, b: Pod, expected: bool) -> None:
    assert more_important_pod(a, b) is expected


def test_earliest_start_time_counts_only_the_highest_priority_victims() -> None:
    victims = [pod("a", priority=1, start=T1), pod("b", priority=9, start=T3), pod("c", priority=9, start=T2)]
    assert earliest_start_time_of_highest_priority(victims) == Pod(
        {"metadata": {"name": "x"}, "status": {"startTime": T2}}).start_time
    assert earliest_start_time_of_highest_priority([pod("n")]) == NOT_STARTED
    assert earliest_start_time_of_highest_priority([]) is None


def _cand(name: str, prios: list[int], pdb_violations: int = 0, starts: list[str] | None = None) -> Candidate:
    starts = starts or [T1] * len(prios)
    return Candidate(name, [pod(f"{name}-{i}", priority=p, start=s) for i, (p, s) in enumerate(zip(prios, starts))],
                     pdb_violations)


@pytest.mark.parametrize(
    "candidates, expected",
    [
        ([_cand("n1", [0], 1), _cand("n2", [100, 100], 0)], "n2"),
        ([_cand("n1", [100]), _cand("n2", [50, 50, 50])], "n2"),
        ([_cand("n1", [100, 100]), _cand("n2", [100, 0])], "n2"),
        ([_cand("n1", [100, -100, 100, -100]), _cand("n2", [100, -100])], "n2"),
        ([_cand("n1", [100, -100, -100]), _cand("n2", [100, -100])], "n2"),
        ([_cand("n1", [100, 100], starts=[T2, T2]), _cand("n2", [100, 100], starts=[T3, T3]),
          _cand("n3", [100, 100], starts=[T1, T1])], "n2"),
        ([_cand("n1", [100, 0], starts=[T1, T3]), _cand("n2", [100, 0], starts=[T2, T1])], "n2"),
        ([_cand("n1", [100]), _cand("n2", [100])], "n1"),
    ],
    ids=["fewest-pdb-violations", "lowest-highest-priority", "smallest-priority-sum", "fewest-victims",
         "sum-of-shifted-priorities", "latest-start-of-top-victims", "only-top-priority-start-counts", "first-on-tie"],
)
def test_pick_one_node_applies_upstream_criteria_in_order(candidates: list[Candidate], expected: str) -> None:
    assert pick_one_node_for_preemption({c.name: c for c in candidates}) == expected


def test_pick_one_node_uses_given_score_functions_instead_of_the_defaults() -> None:
    cands = {c.name: c for c in (_cand("n1", [0]), _cand("n2", [500]))}
    assert pick_one_node_for_preemption(cands, [lambda n: len(n) + (10 if n == "n2" else 0)]) == "n2"
    assert pick_one_node_for_preemption({}) == ""


def _infos(*pods: Pod) -> list[PodInfo]:
    return [PodInfo(p) for p in pods]


def test_pdb_budget_is_consumed_in_order_and_the_excess_violates() -> None:
    pods = _infos(pod("a", labels={"app": "x"}), pod("b", labels={"app": "x"}), pod("c", labels={"app": "y"}))
    violating, ok = filter_pods_with_pdb_violation(pods, [pdb("p", {"app": "x"}, 1)])
    assert [pi.pod.name for pi in violating] == ["b"]
    assert [pi.pod.name for pi in ok] == ["a", "c"]


@pytest.mark.parametrize(
    "budget, expect_violating",
    [
        (pdb("p", {"app": "x"}, 0, disrupted=["a"]), []),
        (pdb("p", {"app": "x"}, 0, namespace="other"), []),
        (pdb("p", {}, 0), []),
        (pdb("p", None, 0), []),
        (pdb("p", {"app": "x"}, 0), ["a"]),
    ],
    ids=["already-disrupted", "other-namespace", "empty-selector", "no-selector", "no-budget-left"],
)
def test_pdb_matching_follows_upstream(budget, expect_violating: list[str]) -> None:  # noqa: ANN001
    violating, _ = filter_pods_with_pdb_violation(_infos(pod("a", labels={"app": "x"})), [budget])
    assert [pi.pod.name for pi in violating] == expect_violating


def test_a_pod_without_labels_never_violates_a_pdb() -> None:
    violating, ok = filter_pods_with_pdb_violation(_infos(pod("a")), [pdb("p", {}, 0)])
    assert violating == [] and len(ok) == 1


def _terminating(conditions: list[dict]) -> Pod:
    return Pod({"metadata": {"name": "v", "deletionTimestamp": T1}, "status": {"conditions": conditions}})


@pytest.mark.parametrize(
    "p, expected",
    [
        (_terminating([{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]), True),
        (_terminating([{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}]), False),
        (_terminating([]), False),
        (Pod({"metadata": {"name": "v"}, "status": {"conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]}}), False),
    ],
    ids=["preempted", "evicted-otherwise", "no-condition", "not-deleting"],
)
def test_pod_terminating_by_preemption(p: Pod, expected: bool) -> None:
    assert pod_terminating_by_preemption(p) is expected


def test_aggregate_errors_brackets_several_messages_like_go() -> None:
    assert aggregate_errors(["a"]) == "a"
    assert aggregate_errors(["a", "b"]) == "[a, b]"
