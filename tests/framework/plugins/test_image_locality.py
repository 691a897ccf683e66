import pytest

from framework.interface import CycleState
from framework.plugins.imagelocality.image_locality import ImageLocality, calculate_priority, normalized_image_name
from tests.framework.plugins.resource_builders import container, handle_for, make_node, make_pod

MB = 1024 * 1024


def run_score(pod, nodes):
    handle = handle_for(nodes)
    plugin = ImageLocality.new(None, handle)
    return {ni.name: plugin.score(CycleState(), pod, ni) for ni in handle.snapshot().list()}


def pod_with_images(*images, init=()):
    return make_pod("p", *(container(image=i, name=f"c{n}") for n, i in enumerate(images)),
                    init=[container(image=i, name=f"i{n}") for n, i in enumerate(init)] or None)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("nginx", "nginx:latest"),
        ("nginx:1.25", "nginx:1.25"),
        ("registry:5000/team/app", "registry:5000/team/app:latest"),
        ("registry:5000/team/app:v2", "registry:5000/team/app:v2"),
        ("team/app@sha256:abcd", "team/app@sha256:abcd"),
    ],
    ids=["bare", "tagged", "registry-port-untagged", "registry-port-tagged", "digest"],
)
def test_image_names_without_a_tag_get_latest(name, expected):
    assert normalized_image_name(name) == expected


def test_an_image_on_half_the_nodes_counts_half_its_size():
    nodes = [make_node("has", cpu="1", images=[(["repo/big:v1"], 500 * MB)]), make_node("lacks", cpu="1")]
    # 250Mi spread-scaled: 100 * (250 - 23) / (1000 - 23) = 23.
    assert run_score(pod_with_images("repo/big:v1"), nodes) == {"has": (23, None), "lacks": (0, None)}


def test_an_image_on_every_node_counts_in_full():
    nodes = [make_node(n, cpu="1", images=[(["repo/big:v1"], 500 * MB)]) for n in ("a", "b")]
    # 100 * (500 - 23) / (1000 - 23) = 48.
    assert run_score(pod_with_images("repo/big:v1"), nodes) == {"a": (48, None), "b": (48, None)}


def test_init_container_images_count_and_raise_the_upper_threshold():
    nodes = [make_node("has", cpu="1", images=[(["repo/big:v1"], 500 * MB)]), make_node("lacks", cpu="1")]
    pod = pod_with_images("repo/other:v1", init=["repo/big:v1"])
    # 250Mi against a two-container ceiling: 100 * (250 - 23) / (2000 - 23) = 11.
    assert run_score(pod, nodes) == {"has": (11, None), "lacks": (0, None)}


def test_untagged_pod_images_match_the_latest_tag_on_the_node():
    nodes = [make_node("n", cpu="1", images=[(["repo/app:latest", "repo/app:v3"], 600 * MB)])]
    # 100 * (600 - 23) / (1000 - 23) = 59.
    assert run_score(pod_with_images("repo/app"), nodes) == {"n": (59, None)}


@pytest.mark.parametrize(
    ("sum_scores", "containers", "expected"),
    [
        (10 * MB, 1, 0),
        (23 * MB, 1, 0),
        (1000 * MB, 1, 100),
        (5000 * MB, 1, 100),
        (5000 * MB, 3, 100),
        (1500 * MB, 2, 74),  # 100 * 1477 / 1977
        (0, 0, 0),
    ],
    ids=["below-min", "at-min", "at-max", "above-max", "clamped-to-scaled-max", "between", "no-containers"],
)
def test_sizes_are_clamped_to_the_thresholds_and_scaled_linearly(sum_scores, containers, expected):
    assert calculate_priority(sum_scores, containers) == expected


def test_a_pod_without_containers_scores_zero_everywhere():
    nodes = [make_node("n", cpu="1", images=[(["repo/app:latest"], 600 * MB)])]
    assert run_score(make_pod("p"), nodes) == {"n": (0, None)}
