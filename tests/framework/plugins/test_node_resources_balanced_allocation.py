import pytest

from framework.api.errors import ValidationError
from framework.interface import Code, CycleState, Status
from framework.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balanced_resource_score,
    balanced_resource_scorer,
)
from tests.framework.plugins.resource_builders import container, handle_for, make_node, make_pod, requests_pod


def run_score(pod, nodes, pods=(), args=None):
    handle = handle_for(nodes, list(pods))
    plugin = NodeResourcesBalancedAllocation.new(args, handle)
    state = CycleState()
    status = plugin.pre_score(state, pod, handle.snapshot().list())
    scores = {ni.name: plugin.score(state, pod, ni) for ni in handle.snapshot().list()}
    return status, scores


@pytest.mark.parametrize(
    ("requested", "allocatable", "expected"),
    [
        ([1, 1], [2, 2], 100),
        ([2, 0], [2, 2], 50),
        ([3, 1], [4, 4], 75),
        ([8, 1], [4, 4], 62),  # cpu capped at 1: |1 - 0.25| / 2 = 0.375
        ([1, 1, 0], [2, 2, 0], 100),  # unoffered resources are left out
        ([1, 0, 0], [1, 1, 1], 52),  # three resources: sqrt(2/9) = 0.4714
        ([1], [2], 100),
    ],
    ids=["balanced", "one-sided", "quarter-apart", "capped", "skips-unoffered", "three-resources", "single"],
)
def test_balance_is_one_minus_the_standard_deviation_of_used_fractions(requested, allocatable, expected):
    assert balanced_resource_score(requested, allocatable) == expected


@pytest.mark.parametrize(
    ("requested", "allocated", "allocatable", "expected"),
    [
        ([1, 1], [0, 0], [2, 2], 75),  # stays balanced: no improvement
        ([2, 2], [2, 0], [2, 2], 100),  # from 50 to 100
        ([2, 0], [0, 0], [2, 2], 50),  # from 100 to 50
        ([3, 1], [1, 1], [4, 4], 62),  # 50 + (50 + 75 - 100) / 2 truncates 12.5
    ],
    ids=["no-change", "best-improvement", "worst-degradation", "integer-division"],
)
def test_score_rewards_the_change_in_balance_the_pod_brings(requested, allocated, allocatable, expected):
    assert balanced_resource_scorer(requested, allocated, allocatable) == expected


def test_plain_requests_count_so_pods_without_requests_add_nothing():
    # Without defaults for missing requests: the bound pod adds nothing, the new pod
    # makes cpu 1/2 and memory 1Gi/2Gi -> balanced (100) from balanced empty (100) -> 75.
    node = make_node("n1", cpu="2", memory="2Gi")
    existing = make_pod("old", container(), node="n1")
    status, scores = run_score(requests_pod(cpu="1", memory="1Gi"), [node], [existing])
    assert status is None and scores == {"n1": (75, None)}


def test_best_effort_pods_skip_the_plugin():
    node = make_node("n1", cpu="2", memory="2Gi")
    status, _ = run_score(make_pod("p", container()), [node])
    assert status == Status(Code.Skip)


def test_score_without_prescore_gives_zero_for_best_effort_pods():
    handle = handle_for([make_node("n1", cpu="2", memory="2Gi")])
    plugin = NodeResourcesBalancedAllocation.new(None, handle)
    (ni,) = handle.snapshot().list()
    assert plugin.score(CycleState(), make_pod("p", container()), ni) == (0, None)
    assert plugin.score(CycleState(), requests_pod(cpu="1", memory="1Gi"), ni) == (75, None)


def test_a_pod_requesting_only_an_unconfigured_resource_is_best_effort_here():
    node = make_node("n1", cpu="2", memory="2Gi", **{"example.com/gpu": "2"})
    status, _ = run_score(make_pod("p", container({"example.com/gpu": "1"})), [node])
    assert status == Status(Code.Skip)


def test_configured_extended_resources_join_the_balance_when_requested():
    args = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "example.com/gpu"}]}
    node = make_node("n1", cpu="2", memory="2Gi", **{"example.com/gpu": "2"})
    # with the pod: 0.5, 0.5, 0.5 -> 100; without: 0, 0, 0 -> 100 -> 75.
    pod = make_pod("p", container({"cpu": "1", "memory": "1Gi", "example.com/gpu": "1"}))
    _, scores = run_score(pod, [node], args=args)
    assert scores == {"n1": (75, None)}
    # Not requested: the gpu is left out; cpu 0.5 vs memory 0 -> 75, from 100 -> 62.
    _, scores = run_score(requests_pod(cpu="1"), [node], args=args)
    assert scores == {"n1": (62, None)}


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        ({"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}]}, "resources[1].name",
         'Duplicate value: "cpu"'),
        ({"resources": [{"name": "cpu", "weight": 2}]}, "resources[0].weight", "Invalid value: 2: must be 1"),
        ({"resources": [{"name": "cpu", "weight": "1"}]}, "resources[0].weight", "must be an integer"),
        ({"resources": {"cpu": 1}}, "resources", "must be a list"),
    ],
    ids=["duplicate-name", "weight-not-one", "weight-not-integer", "not-a-list"],
)
def test_invalid_args_are_rejected_naming_the_field(args, field, message):
    with pytest.raises(ValidationError) as err:
        NodeResourcesBalancedAllocation.new(args, handle_for([]))
    assert (err.value.field, err.value.detail) == (field, message)


def test_default_resources_are_cpu_and_memory_with_weight_one():
    plugin = NodeResourcesBalancedAllocation.new({"resources": []}, handle_for([]))
    assert [(r.name, r.weight) for r in plugin.scorer.resources] == [("cpu", 1), ("memory", 1)]
    assert plugin.score_extensions() is None
