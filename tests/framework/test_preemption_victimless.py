"""A preemptor that no pod on any candidate node is below (the steady state of a
one-priority batch cluster) gets NO_VICTIMS on every node at once
(DefaultPreemption.victimless): the same node statuses, in the same order, the
same message and the same evictions (none) as the per-node dry run, on the
randomised clusters of test_preemption_columnar."""
from __future__ import annotations

from typing import Any

import pytest

from framework.runtime import run_unsuspended
from framework.interface import Code
from tests.framework.test_preemption_columnar import CASES, _World


def _lowest(seed: int) -> _World:
    """The seed's cluster with a preemptor of the lowest priority drawn (0): no victims anywhere."""
    w = _World(seed)
    w.preemptor.raw["spec"]["priority"] = 0
    w.preemptor = type(w.preemptor)(w.preemptor.raw)
    return w


def _outcome(seed: int, at_once: bool) -> tuple[Any, ...]:
    w = _lowest(seed)
    if not at_once:
        w.plugin.victimless = lambda pod, potential: None  # type: ignore[method-assign]
    state, m = w.filtered()
    dry = w.plugin.evaluator.find_candidates(state, w.snapshot.list(), w.preemptor, m)
    w2 = _lowest(seed)
    if not at_once:
        w2.plugin.victimless = lambda pod, potential: None  # type: ignore[method-assign]
    state2, m2 = w2.filtered()
    result, st = run_unsuspended(w2.plugin.post_filter(state2, w2.preemptor, m2))
    return ([(n, s.code, s.plugin, s.message()) for n, s in dry.node_to_status.items()], dry.candidates,
            result.nominated_node_name if result is not None else None, st.code, st.message(), w2.handle.evicted)


@pytest.mark.parametrize("seed", range(CASES))
def test_a_preemptor_with_no_lower_pods_anywhere_gets_what_the_per_node_dry_run_says(seed: int) -> None:
    assert _outcome(seed, at_once=True) == _outcome(seed, at_once=False)


def test_every_node_says_no_victims_at_once_when_no_pod_is_below_the_preemptor() -> None:
    answered = 0
    for seed in range(CASES):
        w = _lowest(seed)
        state, m = w.filtered()
        potential = m.nodes_for_code(w.snapshot.list(), Code.Unschedulable)
        st = w.plugin.victimless(w.preemptor, potential)
        if potential:
            assert st is not None and (st.code, st.message()) == (
                Code.UnschedulableAndUnresolvable, "No preemption victims found for incoming pod")
            answered += 1
    assert answered >= CASES // 4


def test_a_single_lower_priority_pod_on_a_candidate_node_leaves_the_dry_run_to_decide() -> None:
    checked = 0
    for seed in range(CASES):
        w = _World(seed)
        w.preemptor.raw["spec"]["priority"] = 1_000
        w.preemptor = type(w.preemptor)(w.preemptor.raw)
        state, m = w.filtered()
        potential = m.nodes_for_code(w.snapshot.list(), Code.Unschedulable)
        if any(ni.pods for ni in potential):
            assert w.plugin.victimless(w.preemptor, potential) is None
            checked += 1
    assert checked >= CASES // 4
