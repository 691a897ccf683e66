import pytest

from framework.api.affinity import parse_pod_affinity
from framework.api.errors import ValidationError
from framework.api.objects import Node, Pod, parse_object
from framework.api.resources import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST
from framework.cache import PodInfo


def pod(spec, name="p"):
    return Pod({"metadata": {"name": name}, "spec": spec})


def c(cpu=None, mem=None, **extra):
    req = {}
    if cpu is not None:
        req["cpu"] = cpu
    if mem is not None:
        req["memory"] = mem
    return {"name": "c", "resources": {"requests": req}, **extra}


def test_requests_sum_containers_and_take_the_max_with_each_init_container():
    p = pod({"containers": [c("1", "1Gi"), c("500m", "1Gi")], "initContainers": [c("2", "1Gi"), c("1", "3Gi")]})
    assert p.resource.milli_cpu == 2000
    assert p.resource.memory == 3 * 2**30


def test_sidecar_init_containers_add_to_everything_started_after_them():
    p = pod({
        "containers": [c("1")],
        "initContainers": [c("500m", restartPolicy="Always"), c("2")],
    })
    # regular: 1 + sidecar 0.5 = 1.5; init peak: 2 + 0.5 sidecar already running = 2.5
    assert p.resource.milli_cpu == 2500


def test_overhead_is_added_after_the_max():
    p = pod({"containers": [c("1")], "overhead": {"cpu": "250m"}})
    assert p.resource.milli_cpu == 1250


def test_non_zero_defaults_apply_only_to_requests_a_container_does_not_state():
    p = pod({"containers": [c(), c("0", "0")]})
    assert p.resource.milli_cpu == 0
    assert p.non_zero_cpu == DEFAULT_MILLI_CPU_REQUEST
    assert p.non_zero_memory == DEFAULT_MEMORY_REQUEST


def test_limits_stand_in_for_missing_requests():
    p = pod({"containers": [{"name": "c", "resources": {"limits": {"cpu": "2"}}}]})
    assert p.resource.milli_cpu == 2000


def test_pod_level_requests_replace_container_sums_for_cpu_and_memory():
    p = pod({"resources": {"requests": {"cpu": "3"}}, "containers": [c("1", "1Gi")]})
    assert p.resource.milli_cpu == 3000
    assert p.resource.memory == 2**30


def test_bad_fields_are_named_in_the_error():
    with pytest.raises(ValidationError, match=r"^spec\.containers\[1\]\.resources\.requests\.cpu: quantity \"1\.5\.5\""):
        pod({"containers": [c("1"), c("1.5.5")]})
    with pytest.raises(ValidationError, match=r"^spec\.priority: must be an integer"):
        pod({"priority": "high"})
    with pytest.raises(ValidationError, match=r"^metadata\.name: is required"):
        Pod({"metadata": {}})
    with pytest.raises(ValidationError, match=r"^spec\.taints\[0\]\.effect"):
        Node({"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}})


def test_parse_object_picks_the_class_by_kind_and_rejects_unknown_kinds():
    assert isinstance(parse_object({"kind": "Node", "metadata": {"name": "n"}}), Node)
    with pytest.raises(ValidationError, match="^kind: unsupported kind 'Deployment'"):
        parse_object({"kind": "Deployment", "metadata": {"name": "d"}})


def test_namespace_defaults_and_keys():
    p = pod({})
    assert p.namespace == "default"
    assert p.key == "default/p"
    assert Node({"metadata": {"name": "n1"}}).key == "n1"


def test_pods_with_identical_containers_share_one_parsed_container_and_its_requests():
    a, b = pod({"containers": [c("250m", "1Gi")]}, "a"), pod({"containers": [c("250m", "1Gi")]}, "b")
    other = pod({"containers": [c("300m", "1Gi")]}, "o")
    assert a.containers[0] is b.containers[0] and a.resource is b.resource
    assert other.containers[0] is not a.containers[0]
    assert (a.resource.milli_cpu, other.resource.milli_cpu) == (250, 300)


def test_a_container_shared_for_its_string_quantities_does_not_let_a_boolean_quantity_through():
    pod({"containers": [c("1")]})
    pod({"containers": [c(1)]})
    with pytest.raises(ValidationError) as e:
        pod({"containers": [c(True)]})
    assert e.value.field == "spec.containers[0].resources.requests.cpu"


def test_empty_sections_of_a_parsed_pod_are_empty_and_read_only():
    p = pod({"containers": [c("1")]})
    assert (list(p.tolerations), list(p.init_containers), dict(p.labels), dict(p.overhead)) == ([], [], {}, {})
    with pytest.raises(TypeError):
        p.labels["x"] = "y"  # type: ignore[index]


def test_a_pods_affinity_terms_are_parsed_once_and_shared_with_its_bound_copies():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname",
         "matchLabelKeys": ["team"]}]}}
    pod = Pod({"metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web", "team": "a"}},
               "spec": {"containers": [], "affinity": anti}})
    terms = pod.pod_affinity_terms
    assert repr(terms) == repr(parse_pod_affinity(pod))
    assert terms.required_anti_affinity[0].namespaces == frozenset({"ns"})
    assert pod.pod_affinity_terms is terms
    assumed = pod.with_node_name("n1")
    bound = assumed.with_server_fields({**assumed.raw, "status": {"phase": "Running"}})
    assert assumed.pod_affinity_terms is terms and bound.pod_affinity_terms is terms
    assert PodInfo(bound).required_anti_affinity_terms is terms.required_anti_affinity


def test_a_pods_assumed_copy_shares_every_parsed_field_but_the_node_name_and_spec():
    from framework.api.pod import _POD_SLOTS
    p = pod({"containers": [c("1")], "tolerations": [{"key": "k", "operator": "Exists"}]})
    p.pod_affinity_terms  # parsed once, then shared
    assumed = p.with_node_name("n1")
    assert (assumed.node_name, assumed.spec["nodeName"], p.node_name) == ("n1", "n1", "")
    changed = {"raw", "spec", "node_name"}
    assert [s for s in _POD_SLOTS if s not in changed and getattr(assumed, s) is not getattr(p, s)] == []
