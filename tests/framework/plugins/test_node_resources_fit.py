import pytest

from framework.api.errors import ValidationError
from framework.cache import NodeInfo
from framework.interface import ActionType, Code, CycleState, QueueingHint, Status
from framework.plugins.noderesources.fit import NodeResourcesFit
from framework.plugins.noderesources.requested_to_capacity_ratio import build_broken_linear_function, go_round
from tests.framework.plugins.resource_builders import (
    container,
    handle_for,
    make_node,
    make_pod,
    requests_pod,
)

MI = 1024 * 1024


def run_filter(pod, nodes, pods=(), args=None, gates=None):
    handle = handle_for(nodes, list(pods), gates)
    plugin = NodeResourcesFit.new(args, handle)
    state = CycleState()
    result, status = plugin.pre_filter(state, pod, handle.snapshot().list())
    assert result is None and status is None
    return {ni.name: plugin.filter(state, pod, ni) for ni in handle.snapshot().list()}


def run_score(pod, nodes, pods=(), args=None, gates=None):
    handle = handle_for(nodes, list(pods), gates)
    plugin = NodeResourcesFit.new(args, handle)
    state = CycleState()
    assert plugin.pre_score(state, pod, handle.snapshot().list()) is None
    scores = {}
    for ni in handle.snapshot().list():
        score, status = plugin.score(state, pod, ni)
        assert status is None
        scores[ni.name] = score
    return scores


def strategy(kind, resources=None, shape=None):
    s = {"type": kind}
    if resources is not None:
        s["resources"] = [{"name": n, "weight": w} for n, w in resources]
    if shape is not None:
        s["requestedToCapacityRatio"] = {"shape": [{"utilization": u, "score": sc} for u, sc in shape]}
    return {"scoringStrategy": s}


# --- Filter ------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (requests_pod(cpu="500m", memory="1Gi"), None),
        (requests_pod(cpu="1500m"), Status(Code.Unschedulable, "Insufficient cpu")),
        (requests_pod(cpu="3"), Status(Code.UnschedulableAndUnresolvable, "Insufficient cpu")),
        (requests_pod(memory="3Gi"), Status(Code.Unschedulable, "Insufficient memory")),
        (requests_pod(ephemeral_storage="11Gi"), Status(Code.UnschedulableAndUnresolvable, "Insufficient ephemeral-storage")),
        (requests_pod(cpu="1500m", memory="5Gi"),
         Status(Code.UnschedulableAndUnresolvable, "Insufficient cpu", "Insufficient memory")),
    ],
    ids=["fits", "cpu-taken-by-pods", "cpu-beyond-allocatable", "memory-taken", "storage-beyond-allocatable",
         "unresolvable-wins-over-unschedulable"],
)
def test_filter_reports_each_missing_resource_and_whether_preemption_could_help(pod, expected):
    node = make_node("n1", cpu="2", memory="4Gi", ephemeral_storage="10Gi")
    existing = requests_pod("old", node="n1", cpu="1", memory="2Gi")
    assert run_filter(pod, [node], [existing]) == {"n1": expected}


def test_filter_lists_too_many_pods_first_and_still_checks_resources():
    node = make_node("n1", cpu="1", memory="1Gi", pods="1")
    existing = requests_pod("old", node="n1", cpu="500m")
    got = run_filter(requests_pod(cpu="800m"), [node], [existing])
    assert got == {"n1": Status(Code.Unschedulable, "Too many pods", "Insufficient cpu")}


def test_a_pod_requesting_nothing_is_only_checked_for_the_pod_count():
    full = make_node("full", cpu="1", memory="1Gi", pods="1")
    roomy = make_node("roomy", cpu="1", memory="1Gi")
    existing = requests_pod("old", node="full", cpu="1", memory="1Gi")
    existing2 = requests_pod("old2", node="roomy", cpu="1", memory="1Gi")
    got = run_filter(make_pod("p", container()), [full, roomy], [existing, existing2])
    assert got == {"full": Status(Code.Unschedulable, "Too many pods"), "roomy": None}


@pytest.mark.parametrize(
    ("args", "requests", "expected"),
    [
        (None, {"example.com/gpu": "3"}, Status(Code.Unschedulable, "Insufficient example.com/gpu")),
        (None, {"example.com/gpu": "5"}, Status(Code.UnschedulableAndUnresolvable, "Insufficient example.com/gpu")),
        (None, {"example.com/other": "1"}, Status(Code.UnschedulableAndUnresolvable, "Insufficient example.com/other")),
        (None, {"example.com/other": "0"}, None),
        ({"ignoredResources": ["example.com/other"]}, {"example.com/other": "1"}, None),
        ({"ignoredResourceGroups": ["example.com"]}, {"example.com/gpu": "9", "example.com/other": "1"}, None),
        ({"ignoredResourceGroups": ["example.com"]}, {"kubernetes.io/thing": "1"},
         Status(Code.UnschedulableAndUnresolvable, "Insufficient kubernetes.io/thing")),
        ({"ignoredResources": ["hugepages-2Mi"]}, {"hugepages-2Mi": "8Mi"},
         Status(Code.UnschedulableAndUnresolvable, "Insufficient hugepages-2Mi")),
    ],
    ids=["extended-taken", "extended-beyond-allocatable", "unknown-extended", "zero-quantity-skipped",
         "ignored-by-name", "ignored-by-group", "native-prefixed-not-ignorable", "hugepages-not-ignorable"],
)
def test_filter_checks_scalar_resources_unless_ignored(args, requests, expected):
    node = make_node("n1", cpu="4", memory="4Gi", **{"example.com/gpu": "4", "hugepages-2Mi": "4Mi"})
    existing = make_pod("old", container({"example.com/gpu": "2"}), node="n1")
    pod = make_pod("p", container({"cpu": "100m", **requests}))
    assert run_filter(pod, [node], [existing], args) == {"n1": expected}


def test_sidecars_add_to_the_containers_while_plain_init_containers_only_set_a_floor():
    node = make_node("n1", cpu="1", memory="1Gi")
    sidecar_pod = make_pod("p", container({"cpu": "600m"}), init=[container({"cpu": "500m"}, sidecar=True)])
    init_pod = make_pod("q", container({"cpu": "600m"}), init=[container({"cpu": "900m"})])
    assert run_filter(sidecar_pod, [node]) == {"n1": Status(Code.UnschedulableAndUnresolvable, "Insufficient cpu")}
    assert run_filter(init_pod, [node]) == {"n1": None}


def test_pod_overhead_counts_towards_the_request():
    node = make_node("n1", cpu="1", memory="1Gi")
    pod = make_pod("p", container({"cpu": "900m"}), overhead={"cpu": "200m"})
    assert run_filter(pod, [node]) == {"n1": Status(Code.UnschedulableAndUnresolvable, "Insufficient cpu")}


def test_pod_level_requests_replace_container_sums_only_while_the_gate_is_on():
    node = make_node("n1", cpu="1", memory="1Gi")
    pod = make_pod("p", container({"cpu": "200m"}), container({"cpu": "200m"}), pod_level={"cpu": "2"})
    unresolvable = Status(Code.UnschedulableAndUnresolvable, "Insufficient cpu")
    assert run_filter(pod, [node]) == {"n1": unresolvable}
    assert run_filter(pod, [node], gates={"PodLevelResources": False}) == {"n1": None}


def test_filter_without_prefilter_state_is_an_error():
    node_info = NodeInfo(make_node("n1", cpu="1"))
    plugin = NodeResourcesFit.new(None, handle_for([]))
    status = plugin.filter(CycleState(), requests_pod(cpu="1"), node_info)
    assert status.code == Code.Error and "PreFilterNodeResourcesFit" in status.message()


def test_prefilter_state_is_shared_by_clones_and_has_no_extensions():
    plugin = NodeResourcesFit.new(None, handle_for([]))
    state = CycleState()
    plugin.pre_filter(state, requests_pod(cpu="1"), [])
    assert state.clone().read("PreFilterNodeResourcesFit") is state.read("PreFilterNodeResourcesFit")
    assert plugin.pre_filter_extensions() is None and plugin.score_extensions() is None


# --- Args ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        (strategy("LeastAllocated", [("cpu", 101)]), "scoringStrategy.resources[0].weight",
         "Invalid value: 101: resource weight of cpu not in valid range (0, 100]"),
        (strategy("MostAllocated", [("cpu", 1), ("memory", -1)]), "scoringStrategy.resources[1].weight",
         "Invalid value: -1: resource weight of memory not in valid range (0, 100]"),
        (strategy("Balanced"), "scoringStrategy.type",
         'Unsupported value: "Balanced": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'),
        ({"scoringStrategy": {}}, "scoringStrategy.type", 'Unsupported value: "": supported values: '
         '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'),
        (strategy("RequestedToCapacityRatio", shape=[]), "scoringStrategy.shape",
         "Required value: at least one point must be specified"),
        (strategy("RequestedToCapacityRatio"), "scoringStrategy.shape",
         "Required value: at least one point must be specified"),
        (strategy("RequestedToCapacityRatio", shape=[(50, 1), (50, 2)]), "scoringStrategy.shape[1].utilization",
         "Invalid value: 50: values must be sorted in increasing order"),
        (strategy("RequestedToCapacityRatio", shape=[(0, 1), (101, 2)]), "scoringStrategy.shape[1].utilization",
         "Invalid value: 101: not in valid range [0, 100]"),
        (strategy("RequestedToCapacityRatio", shape=[(0, 11)]), "scoringStrategy.shape[0].score",
         "Invalid value: 11: not in valid range [0, 10]"),
        ({"ignoredResourceGroups": ["example.com/gpu"]}, "ignoredResourceGroups[0]",
         "Invalid value: \"example.com/gpu\": resource group name can't contain '/'"),
        ({"ignoredResources": ["-bad"]}, "ignoredResources[0]",
         "Invalid value: \"-bad\": name part must consist of alphanumeric characters, '-', '_' or '.', and must "
         "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
         "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        ({"ignoredResources": "example.com/gpu"}, "ignoredResources", "must be a list of strings"),
    ],
    ids=["weight-over-100", "negative-weight", "unknown-type", "missing-type", "empty-shape", "absent-shape",
         "unsorted-shape", "utilization-out-of-range", "score-out-of-range", "group-with-slash", "bad-resource-name",
         "not-a-list"],
)
def test_invalid_args_are_rejected_naming_the_field(args, field, message):
    with pytest.raises(ValidationError) as err:
        NodeResourcesFit.new(args, handle_for([]))
    assert (err.value.field, err.value.detail) == (field, message)


def test_absent_args_default_to_least_allocated_over_cpu_and_memory():
    plugin = NodeResourcesFit.new(None, handle_for([]))
    assert plugin.args.strategy == "LeastAllocated"
    assert [(r.name, r.weight) for r in plugin.args.resources] == [("cpu", 1), ("memory", 1)]


def test_zero_or_absent_weights_default_to_one_and_an_empty_list_to_cpu_and_memory():
    plugin = NodeResourcesFit.new({"scoringStrategy": {"type": "MostAllocated", "resources": [
        {"name": "cpu", "weight": 0}, {"name": "example.com/gpu"}]}}, handle_for([]))
    assert [(r.name, r.weight) for r in plugin.args.resources] == [("cpu", 1), ("example.com/gpu", 1)]
    plugin = NodeResourcesFit.new({"scoringStrategy": {"type": "MostAllocated", "resources": []}}, handle_for([]))
    assert [(r.name, r.weight) for r in plugin.args.resources] == [("cpu", 1), ("memory", 1)]


# --- Score --------------------------------------------------------------------------------------

def test_least_allocated_averages_the_free_share_of_each_resource():
    # cpu: (4000-1000)*100/4000 = 75; memory: (8Gi-6Gi)*100/8Gi = 25 -> (75+25)/2 = 50.
    node = make_node("n1", cpu="4", memory="8Gi")
    existing = requests_pod("old", node="n1", cpu="500m", memory="4Gi")
    assert run_score(requests_pod(cpu="500m", memory="2Gi"), [node], [existing]) == {"n1": 50}


@pytest.mark.parametrize(("kind", "cpu", "memory"), [("LeastAllocated", "1m", "5"), ("MostAllocated", "399m", "395")])
def test_each_resource_share_is_truncated_before_the_weighted_mean(kind, cpu, memory):
    # cpu share 99.75 -> 99, memory 98.75 -> 98 (Go integer division per resource),
    # mean (99 + 98) / 2 = 98; averaging the untruncated shares would give 99.
    node = make_node("n1", cpu="400m", memory="400")
    assert run_score(requests_pod(cpu=cpu, memory=memory), [node], args=strategy(kind)) == {"n1": 98}


def test_missing_cpu_and_memory_requests_score_as_upstream_defaults():
    # The pod counts as 100m / 200Mi: cpu (1000-100)*100/1000 = 90, memory (1000Mi-200Mi)*100/1000Mi = 80.
    node = make_node("n1", cpu="1", memory="1000Mi")
    assert run_score(make_pod("p", container()), [node]) == {"n1": 85}
    # An explicit zero is kept as zero.
    assert run_score(requests_pod(cpu="0", memory="0"), [node]) == {"n1": 100}


def test_bound_pods_without_requests_count_with_defaults_on_the_node():
    node = make_node("n1", cpu="1", memory="1000Mi")
    existing = make_pod("old", container(), node="n1")
    # node non-zero requested 100m/200Mi + pod 100m/200Mi -> cpu 80, memory 60.
    assert run_score(make_pod("p", container()), [node], [existing]) == {"n1": 70}


def test_most_allocated_treats_overcommitment_as_full_and_weighs_resources():
    node = make_node("n1", cpu="1", memory="1Gi")
    # cpu requested 2 > 1 -> 100; memory 512Mi of 1Gi -> 50; weights cpu 3, memory 1 -> (300+50)/4 = 87.
    args = strategy("MostAllocated", [("cpu", 3), ("memory", 1)])
    assert run_score(requests_pod(cpu="2", memory="512Mi"), [node], args=args) == {"n1": 87}


def test_extended_resources_count_only_when_the_pod_requests_them_and_the_node_has_them():
    args = strategy("MostAllocated", [("cpu", 1), ("example.com/gpu", 1)])
    gpu_node = make_node("gpu", cpu="4", **{"example.com/gpu": "4"})
    plain_node = make_node("plain", cpu="4")
    wants_gpu = make_pod("p", container({"cpu": "1", "example.com/gpu": "2"}))
    no_gpu = requests_pod(cpu="1")
    assert run_score(wants_gpu, [gpu_node, plain_node], args=args) == {"gpu": 37, "plain": 25}
    assert run_score(no_gpu, [gpu_node, plain_node], args=args) == {"gpu": 25, "plain": 25}


def test_ephemeral_storage_scores_from_plain_requests():
    args = strategy("MostAllocated", [("ephemeral-storage", 1)])
    node = make_node("n1", cpu="1", ephemeral_storage="10Gi")
    existing = requests_pod("old", node="n1", ephemeral_storage="3Gi")
    assert run_score(requests_pod(ephemeral_storage="2Gi"), [node], [existing], args) == {"n1": 50}


def test_requested_to_capacity_ratio_follows_the_broken_linear_shape_with_go_division():
    # Shape 10 at 0% down to 0 at 30%: at 10% utilization 100 + (-100*10)/30 truncates to 67 (floor would give 66).
    args = strategy("RequestedToCapacityRatio", [("cpu", 1)], shape=[(0, 10), (30, 0)])
    node = make_node("n1", cpu="10", memory="1Gi")
    assert run_score(requests_pod(cpu="1"), [node], args=args) == {"n1": 67}
    # Past the last point the score stays at the last point's value, so 0 and the resource is left out.
    assert run_score(requests_pod(cpu="5"), [node], args=args) == {"n1": 0}


def test_requested_to_capacity_ratio_leaves_resources_scoring_zero_out_of_the_mean():
    # Shape 10 at 0% down to 0 at 30%: cpu at 50% scores 0 and does not count; memory
    # at 10% scores 67, so the mean is 67 (counting cpu would halve it to 34).
    args = strategy("RequestedToCapacityRatio", [("cpu", 1), ("memory", 1)], shape=[(0, 10), (30, 0)])
    node = make_node("n1", cpu="10", memory="1000Mi")
    assert run_score(requests_pod(cpu="5", memory="100Mi"), [node], args=args) == {"n1": 67}


def test_requested_to_capacity_ratio_rounds_half_away_from_zero():
    # Utilization equals score on this shape: cpu 20, memory 25 -> mean 22.5 -> 23 (Python's round gives 22).
    args = strategy("RequestedToCapacityRatio", [("cpu", 1), ("memory", 1)], shape=[(0, 0), (100, 10)])
    node = make_node("n1", cpu="10", memory="400Mi")
    assert run_score(requests_pod(cpu="2", memory="100Mi"), [node], args=args) == {"n1": 23}


def test_requested_to_capacity_ratio_scores_overcommitted_resources_at_full_utilization():
    args = strategy("RequestedToCapacityRatio", [("cpu", 1)], shape=[(0, 0), (100, 10)])
    node = make_node("n1", cpu="1", memory="1Gi")
    assert run_score(requests_pod(cpu="3"), [node], args=args) == {"n1": 100}


def test_score_without_prescore_computes_the_request_itself():
    handle = handle_for([make_node("n1", cpu="4", memory="8Gi")])
    plugin = NodeResourcesFit.new(None, handle)
    pod = requests_pod(cpu="1", memory="2Gi")
    (ni,) = handle.snapshot().list()
    without = plugin.score(CycleState(), pod, ni)
    state = CycleState()
    plugin.pre_score(state, pod, [ni])
    assert without == plugin.score(state, pod, ni) == (75, None)


# --- EnqueueExtensions ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("gates", "pod_action", "node_action"),
    [
        (None, ActionType.Delete | ActionType.UpdatePodScaleDown, ActionType.Add | ActionType.UpdateNodeAllocatable),
        ({"InPlacePodVerticalScaling": False}, ActionType.Delete, ActionType.Add | ActionType.UpdateNodeAllocatable),
        ({"SchedulerQueueingHints": False}, ActionType.Delete | ActionType.UpdatePodScaleDown,
         ActionType.Add | ActionType.UpdateNodeAllocatable | ActionType.UpdateNodeTaint | ActionType.UpdateNodeLabel),
    ],
    ids=["defaults", "no-in-place-scaling", "no-queueing-hints"],
)
def test_registers_pod_deletion_and_node_growth_events(gates, pod_action, node_action):
    pod_ev, node_ev = NodeResourcesFit.new(None, handle_for([], gates=gates)).events_to_register()
    assert (pod_ev.event.resource, pod_ev.event.action) == ("Pod", pod_action)
    assert (node_ev.event.resource, node_ev.event.action) == ("Node", node_action)
    assert pod_ev.hint is not None and node_ev.hint is not None


def _hints(gates=None):
    return NodeResourcesFit.new(None, handle_for([], gates=gates))


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (requests_pod("gone", cpu="1"), None, QueueingHint.QueueSkip),
        (requests_pod("gone", node="n1", cpu="1"), None, QueueingHint.Queue),
        (make_pod("gone", container({"cpu": "1"}), nominated="n1"), None, QueueingHint.Queue),
        (requests_pod("o", node="n1", cpu="2"), requests_pod("o", node="n1", cpu="1"), QueueingHint.Queue),
        (requests_pod("o", node="n1", memory="2Gi"), requests_pod("o", node="n1", memory="1Gi"), QueueingHint.QueueSkip),
        (requests_pod("o", cpu="2"), requests_pod("o", cpu="1"), QueueingHint.QueueSkip),
    ],
    ids=["unbound-deleted", "bound-deleted", "nominated-deleted", "bound-cpu-shrank",
         "shrank-unrequested-resource", "unbound-shrank"],
)
def test_pod_events_queue_only_when_they_can_free_what_the_pod_requests(old, new, expected):
    pending = requests_pod("pending", cpu="1")
    assert _hints().is_schedulable_after_pod_event(pending, old, new) == expected


def test_pod_updates_are_ignored_without_in_place_scaling():
    pending = requests_pod("pending", cpu="1")
    old, new = requests_pod("o", node="n1", cpu="2"), requests_pod("o", node="n1", cpu="1")
    hint = _hints({"InPlacePodVerticalScaling": False}).is_schedulable_after_pod_event(pending, old, new)
    assert hint == QueueingHint.QueueSkip


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, make_node("n", cpu="2", memory="2Gi"), QueueingHint.Queue),
        (None, make_node("n", cpu="500m", memory="2Gi"), QueueingHint.QueueSkip),
        (make_node("n", cpu="500m", memory="2Gi"), make_node("n", cpu="2", memory="2Gi"), QueueingHint.Queue),
        (make_node("n", cpu="2", memory="1Gi"), make_node("n", cpu="2", memory="2Gi"), QueueingHint.QueueSkip),
        (make_node("n", cpu="2", memory="2Gi", pods="1"), make_node("n", cpu="2", memory="2Gi", pods="5"),
         QueueingHint.Queue),
    ],
    ids=["added-fits", "added-too-small", "cpu-grew", "unrequested-grew", "pod-count-grew"],
)
def test_node_events_queue_when_the_node_now_fits_and_grew_where_it_matters(old, new, expected):
    pending = requests_pod("pending", cpu="1")
    assert _hints().is_schedulable_after_node_change(pending, old, new) == expected


def test_pod_level_hugepages_count_like_container_requests():
    node = make_node("n1", cpu="1", memory="1Gi", **{"hugepages-2Mi": "4Mi"})
    pod = make_pod("p", pod_level={"cpu": "100m", "hugepages-2Mi": "8Mi"})
    assert run_filter(pod, [node]) == {"n1": Status(Code.UnschedulableAndUnresolvable, "Insufficient hugepages-2Mi")}


@pytest.mark.parametrize(
    ("p", "expected"),
    [(-5, 100), (0, 100), (10, 67), (30, 0), (60, 50), (100, 100), (150, 100)],
    ids=["before-first", "first", "falling-truncates", "valley", "rising", "last", "after-last"],
)
def test_broken_linear_function_is_flat_outside_and_linear_between_points(p, expected):
    f = build_broken_linear_function([(0, 100), (30, 0), (90, 100), (100, 100)])
    assert f(p) == expected


@pytest.mark.parametrize(("x", "expected"), [(22.5, 23), (-22.5, -23), (22.4999, 22), (0.5, 1), (2.5, 3)])
def test_go_round_takes_halves_away_from_zero(x, expected):
    assert go_round(x) == expected
