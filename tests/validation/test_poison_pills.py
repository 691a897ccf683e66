"""A malformed pod or node that reached the scheduler anyway (built without the
store's validation) fails at most the pod concerned: every other pod still gets a
node from the default profile."""
from __future__ import annotations

import random

import pytest

from framework.algorithm import SchedulingAlgorithm
from framework.attempt_outcome import FitError
from framework.api.errors import ValidationError
from framework.api.objects import Node, Pod
from framework.cache import Cache, Snapshot
from framework.config import build_frameworks, load_config
from framework.handle import FrameworkHandle
from framework.interface import CycleState

BAD_WEIGHT = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": "x", "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "a"}}}}]}}
GOOD_PREFERENCE = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 5, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "a"}}}}]}}
INT64_MAX = 2**63 - 1


def node(name: str, cpu: str = "4", memory: str = "8Gi") -> Node:
    return Node({"kind": "Node", "metadata": {"name": name, "labels": {"zone": name}},
                 "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}})


def pod(name: str, node_name: str = "", affinity: dict | None = None) -> Pod:
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
    if node_name:
        spec["nodeName"] = node_name
    if affinity:
        spec["affinity"] = affinity
    return Pod({"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name, "labels": {"app": "a"}},
                "spec": spec})


class World(Cache):
    """A cache with the one snapshot it updates incrementally, scheduled by the default profile."""

    def __init__(self) -> None:
        super().__init__()
        self.snapshot = Snapshot()

    def schedule(self, p: Pod) -> str:
        self.update_snapshot(self.snapshot)
        fwk = build_frameworks(load_config(None), FrameworkHandle(snapshot=self.snapshot))["default-scheduler"]
        return SchedulingAlgorithm(random.Random(1)).schedule_pod(fwk, CycleState(), p, self.snapshot).suggested_host


def test_a_bound_pod_with_a_non_integer_preferred_weight_does_not_break_other_pods_prescore():
    cache = World()
    for i in range(3):
        cache.add_node(node(f"n{i}"))
    cache.add_pod(pod("poison", "n0", BAD_WEIGHT))
    hosts = []
    for i in range(10):
        p = pod(f"ordinary-{i}", affinity=GOOD_PREFERENCE if i % 2 else None)
        hosts.append(cache.schedule(p))
        cache.add_pod(pod(p.name, hosts[-1], GOOD_PREFERENCE if i % 2 else None))
    assert len(hosts) == 10 and set(hosts) <= {"n0", "n1", "n2"}


def test_the_pod_with_the_non_integer_weight_fails_alone_with_a_reason_naming_the_term():
    cache = World()
    cache.add_node(node("n0"))
    with pytest.raises(FitError, match="parsing pod: preferredAffinityTerms: weight 'x' is not an integer"):
        cache.schedule(pod("poison", affinity=BAD_WEIGHT))
    assert cache.schedule(pod("ordinary", affinity=GOOD_PREFERENCE)) == "n0"


def test_nodes_at_the_largest_allocatable_a_quantity_may_have_score_without_overflow():
    cache = World()
    cache.add_node(node("huge", cpu=f"{INT64_MAX}m", memory=str(INT64_MAX)))
    cache.add_node(node("small"))
    assert cache.schedule(pod("p")) in {"huge", "small"}


@pytest.mark.parametrize("allocatable", [1e308, "1e308", float("inf"), float("nan"), "999999999999999Ei"],
                         ids=["float-1e308", "text-1e308", "inf", "nan", "Ei-beyond-int64"])
def test_a_node_whose_allocatable_cannot_be_counted_is_refused_while_parsing(allocatable):
    with pytest.raises(ValidationError, match=r"status\.allocatable\.cpu"):
        Node({"kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": allocatable}}})


@pytest.mark.parametrize(("spec", "field"), [
    ({"affinity": {"podAntiAffinity": ["x"]}}, "spec.affinity.podAntiAffinity"),
    ({"affinity": {"podAffinity": "x"}}, "spec.affinity.podAffinity"),
    ({"volumes": [{"name": "v", "persistentVolumeClaim": "claim"}]}, "spec.volumes[0].persistentVolumeClaim"),
    ({"volumes": ["v"]}, "spec.volumes[0]"),
], ids=["anti-affinity-list", "affinity-string", "volume-source-string", "volume-string"])
def test_a_pod_whose_raw_sections_the_cache_reads_are_not_objects_never_parses(spec, field):
    # The cache and the volume plugins read these sections of every pod on a node:
    # one that parsed would fail every pod placed beside it.
    raw = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"nodeName": "n0", "containers": [{"name": "c"}], **spec}}
    with pytest.raises(ValidationError) as err:
        Pod(raw)
    assert err.value.field == field
