"""PreFilter and PreScore state made once per pod shape in a group cycle
(framework/runtime/group_state.py): the members of a gang land where they land when
every member runs every plugin (the same windows, scores, placements and diagnoses),
while a plugin that declares its state made from the pod's shape runs once per shape
of the group, and every other plugin once per member."""
from __future__ import annotations

from typing import Any, Hashable

from hypothesis import HealthCheck, given, settings

from framework.api.objects import Pod
from framework.interface import CycleState, SignPurpose, Status
from framework.runtime.group_state import ShapeStateMemo
from framework.types import Code
from tests.framework.test_node_local_columns import NodeSpec, Shape, clusters, member, place


def assert_same_with_and_without(nodes: list[NodeSpec], groups: list[tuple[int, list[Shape]]], seed: int,
                                 zone: str = "") -> Any:
    every_member = place(nodes, groups, seed, columns=True, zone=zone, shape_state=False)
    by_shape = place(nodes, groups, seed, columns=True, zone=zone, shape_state=True)
    assert by_shape.scored == every_member.scored
    assert by_shape.placements == every_member.placements
    assert by_shape.failures == every_member.failures
    return by_shape


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters())
def test_members_land_where_they_land_when_every_member_runs_every_prefilter_and_prescore(case: Any) -> None:
    nodes, groups, seed, zone = case
    assert_same_with_and_without(nodes, groups, seed, zone)


def test_a_gang_of_one_shape_runs_the_declaring_plugins_once_and_shares_their_state() -> None:
    nodes = [NodeSpec(cpu=4000, used=0, prefer_taints=i % 3 == 0) for i in range(200)]
    run = assert_same_with_and_without(nodes, [(8, [Shape(cpu=100)] * 8)], seed=3)
    memo = run.placer.shape_state
    # NodeResourcesFit declares PreFilter; Fit, BalancedAllocation and TaintToleration
    # declare PreScore: the first member runs them, the seven others are served.
    assert memo.counts == {"PreFilter": [1, 7], "PreScore": [3, 21]}
    states = [t.state for t in run.placer.tries.values()]
    fit_state = states[0].read("PreFilterNodeResourcesFit")
    assert all(s.read("PreFilterNodeResourcesFit") is fit_state for s in states)


def test_each_shape_of_a_gang_gets_its_own_answers() -> None:
    nodes = [NodeSpec(cpu=2000, used=0) for _ in range(150)]
    shapes = [Shape(cpu=100), Shape(cpu=700, tolerate_prefer=True)] * 3
    run = assert_same_with_and_without(nodes, [(6, shapes)], seed=11)
    assert run.placer.shape_state.counts == {"PreFilter": [2, 4], "PreScore": [6, 12]}
    requests = {t.state.read("PreFilterNodeResourcesFit").request.milli_cpu for t in run.placer.tries.values()}
    assert requests == {100, 700}


def test_a_group_that_fits_nowhere_gets_the_same_diagnoses_with_shared_state() -> None:
    nodes = [NodeSpec(cpu=500, used=300) for _ in range(120)]
    run = assert_same_with_and_without(nodes, [(3, [Shape(cpu=300)] * 3)], seed=5)
    assert run.placements[0][0] == {}
    assert run.failures[0]


class _Plugin:
    """A PreFilter plugin that writes its call count and answers `answer`; declares
    its state made from the shape when `declared`, and refuses to sign pods whose
    name ends in `refuse`."""

    def __init__(self, name: str, declared: bool, answer: Status | None = None, refuse: str = "-x") -> None:
        self.name = name
        if declared:
            self.state_from_shape = ("PreFilter",)
        self.answer = answer
        self.refuse = refuse
        self.calls = 0

    def sign_pod(self, pod: Pod, purpose: SignPurpose) -> Hashable | None:
        return None if pod.name.endswith(self.refuse) else ()

    def pre_filter(self, state: CycleState, pod: Pod, nodes: list[Any]) -> tuple[None, Status | None]:
        self.calls += 1
        state.write(f"{self.name}/calls", self.calls)
        return None, self.answer


def _run(memo: ShapeStateMemo, pl: _Plugin, pods: list[Pod]) -> list[tuple[Any, Any]]:
    """Each pod's PreFilter answer and the call count it wrote, asked as the runtime asks."""
    out = []
    for pod in pods:
        state = CycleState()
        ask = memo.served_at("PreFilter").get(pl.name)
        out.append((pl.pre_filter(state, pod, []) if ask is None else ask(state, pod, []), state.get(f"{pl.name}/calls")))
    return out


def test_a_declaring_plugin_runs_once_per_shape_and_its_written_values_reach_every_member() -> None:
    skip = Status(Code.Skip)
    pl = _Plugin("Declared", declared=True, answer=skip)
    memo = ShapeStateMemo([pl])
    got = _run(memo, pl, [member("g", i, Shape(cpu=100)) for i in range(4)])
    assert pl.calls == 1
    assert got == [((None, skip), 1)] * 4


def test_a_plugin_that_does_not_declare_runs_for_every_member() -> None:
    pl = _Plugin("Plain", declared=False)
    memo = ShapeStateMemo([pl])
    got = _run(memo, pl, [member("g", i, Shape(cpu=100)) for i in range(3)])
    assert memo.served_at("PreFilter") == {}
    assert pl.calls == 3
    assert [calls for _, calls in got] == [1, 2, 3]


def test_a_pod_the_plugin_refuses_to_sign_runs_it_again() -> None:
    pl = _Plugin("Refusing", declared=True, refuse="-1")
    got = _run(ShapeStateMemo([pl]), pl, [member("g", i, Shape(cpu=100)) for i in range(3)])
    assert pl.calls == 2  # g-0 runs, g-1 refused: runs, g-2 served from g-0
    assert [calls for _, calls in got] == [1, 2, 1]


def test_pods_that_differ_beyond_their_identity_are_different_shapes() -> None:
    pl = _Plugin("Declared", declared=True)
    a, b = member("g", 0, Shape(cpu=100)), member("g", 1, Shape(cpu=100))
    relabelled = Pod({**b.raw, "metadata": {**b.raw["metadata"], "labels": {"gang": "g", "extra": "1"}}})
    typed = Pod({**b.raw, "spec": {**b.raw["spec"], "containers": [{**b.raw["spec"]["containers"][0], "stdin": 1}]}})
    typed_bool = Pod({**b.raw, "spec": {**b.raw["spec"], "containers": [{**b.raw["spec"]["containers"][0],
                                                                           "stdin": True}]}})
    got = _run(ShapeStateMemo([pl]), pl, [a, b, relabelled, typed, typed_bool])
    assert [calls for _, calls in got] == [1, 1, 2, 3, 4]


def test_a_new_group_forgets_the_answers_of_the_one_before() -> None:
    pl = _Plugin("Declared", declared=True)
    memo = ShapeStateMemo([pl])
    _run(memo, pl, [member("g", 0, Shape(cpu=100))])
    memo.begin_group()
    _run(memo, pl, [member("g", 1, Shape(cpu=100))])
    assert pl.calls == 2


def test_the_runtime_runs_every_plugin_again_outside_the_members_tries() -> None:
    nodes = [NodeSpec(cpu=4000, used=0) for _ in range(120)]
    run = place(nodes, [(2, [Shape(cpu=100)] * 2)], seed=1, columns=True)
    fwk = run.placer.fwk
    assert fwk.filtering.shape_state is None and fwk.scoring.shape_state is None
